package bench

// The arrival-fidelity section: drawn schedules against the requested
// law, sent schedules against the drawn one.

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/llmprobe/llmprobe/prober/arrival"
)

// arrivals runs the arrival-fidelity section: Poisson schedules sent at
// each of ArrivalRates, gamma (burstiness 0.5 and 4) sent at the last one,
// and draws of gamma at the other rates.
func (b *bench) arrivals(ctx context.Context) error {
	last := b.o.ArrivalRates[len(b.o.ArrivalRates)-1]
	type spec struct {
		kind       string
		burstiness float64
		rate       float64
		send       bool
	}
	var specs []spec
	for _, r := range b.o.ArrivalRates {
		specs = append(specs, spec{arrival.KindPoisson, 1, r, true})
	}
	for _, bu := range []float64{0.5, 4} {
		for _, r := range b.o.ArrivalRates {
			specs = append(specs, spec{arrival.KindGamma, bu, r, r == last})
		}
	}
	for i, s := range specs {
		var a Arrival
		var err error
		if s.send {
			a, err = b.sentArrival(ctx, s.kind, s.burstiness, s.rate)
		} else {
			a, err = drawnArrival(s.kind, s.burstiness, s.rate, b.o.ArrivalCount, uint64(i+1))
			if err == nil {
				a.Seeds, err = seedSweep(s.kind, s.burstiness, s.rate, b.o.ArrivalCount, ArrivalSeeds)
			}
		}
		if err != nil {
			return err
		}
		b.rep.Arrival = append(b.rep.Arrival, a)
		b.progress("arrival %s(%g) at %g req/s, n %d, sent %v: drawn %.2f req/s (z %.2f), achieved dev %.3f%%, KS p %.3f, CV %.3f (want %.3f)",
			a.Kind, a.Burstiness, a.Rate, a.N, a.Sent, a.DrawnRate, a.Z, a.AchievedDev, a.KSP, a.CV, a.WantCV)
	}
	return nil
}

// drawnArrival draws n arrivals of a process without sending them.
func drawnArrival(kind string, burstiness, rate float64, n int, seed uint64) (Arrival, error) {
	p, err := arrival.New(kind, rate, burstiness, seed)
	if err != nil {
		return Arrival{}, err
	}
	offsets := make([]time.Duration, n)
	for i := range offsets {
		offsets[i] = p.Next()
	}
	a := Arrival{Kind: kind, Burstiness: burstiness, Rate: rate, N: n}
	return a, fillDrawn(&a, offsets)
}

// seedSweep draws the process with seeds 1..seeds and counts the draws
// within the z and KS bounds.
func seedSweep(kind string, burstiness, rate float64, n, seeds int) (*SeedSweep, error) {
	sw := &SeedSweep{Seeds: seeds}
	for seed := 1; seed <= seeds; seed++ {
		a, err := drawnArrival(kind, burstiness, rate, n, uint64(seed))
		if err != nil {
			return nil, err
		}
		if math.Abs(a.Z) < TargetZ {
			sw.ZWithin++
		}
		if a.KSP > TargetKSP {
			sw.KSPassed++
		}
	}
	return sw, nil
}

// fillDrawn sets the drawn-schedule figures of a from its offsets.
func fillDrawn(a *Arrival, offsets []time.Duration) error {
	gaps := diffs(offsets)
	c, err := arrival.Check(gaps, a.Kind, a.Rate, a.Burstiness)
	if err != nil {
		return err
	}
	span := (offsets[len(offsets)-1] - offsets[0]).Seconds()
	a.DrawnRate = float64(len(gaps)) / span
	se := c.WantCV * c.WantMean / math.Sqrt(float64(c.N))
	a.Z = (c.WantMean - c.Mean) / se // positive: drawn faster than requested
	a.KS, a.KSP, a.CV, a.WantCV = c.KS, c.KSPValue, c.CV, c.WantCV
	return nil
}

func diffs(ts []time.Duration) []time.Duration {
	g := make([]time.Duration, 0, len(ts))
	for i := 1; i < len(ts); i++ {
		g = append(g, ts[i]-ts[i-1])
	}
	return g
}

// sentArrival sends ArrivalCount arrivals of the process at rate with
// llmprobe sweep (unscaled: the process's own schedule) and compares the
// drawn and the actual send times.
func (b *bench) sentArrival(ctx context.Context, kind string, burstiness, rate float64) (Arrival, error) {
	name := fmt.Sprintf("arrival-%s%g-r%g", kind, burstiness, rate)
	r, _, err := b.sweepRun(ctx, name, "--rates="+strconv.FormatFloat(rate, 'f', -1, 64),
		"--num-prompts="+strconv.Itoa(b.o.ArrivalCount), "--unscaled-arrivals", "--arrival="+kind,
		"--burstiness="+strconv.FormatFloat(burstiness, 'f', -1, 64), "--max-send-lag=1s")
	if err != nil {
		return Arrival{}, err
	}
	recs := slices.Clone(r.records)
	slices.SortFunc(recs, func(x, y record) int { return x.Scheduled.Compare(y.Scheduled) })
	sched := make([]time.Duration, len(recs))
	sent := make([]time.Duration, len(recs))
	for i := range recs {
		sched[i] = recs[i].Scheduled.Sub(recs[0].Scheduled)
		sent[i] = recs[i].Sent.Sub(recs[0].Sent)
	}
	slices.Sort(sent)
	a := Arrival{Kind: kind, Burstiness: burstiness, Rate: rate, N: len(recs), Sent: true,
		SendLagP99: r.step.Stats.SendLag.P99}
	if len(recs) < 3 {
		return a, fmt.Errorf("%s: %d records", name, len(recs))
	}
	if err := fillDrawn(&a, sched); err != nil {
		return a, err
	}
	a.AchievedRate = float64(len(recs)-1) / (sent[len(sent)-1] - sent[0]).Seconds()
	a.AchievedDev = 100 * (a.AchievedRate/a.DrawnRate - 1)
	if c, err := arrival.Check(diffs(sent), kind, rate, burstiness); err == nil {
		a.SentKSP, a.SentCV = c.KSPValue, c.CV
	}
	return a, nil
}
