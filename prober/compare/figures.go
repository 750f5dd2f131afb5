package compare

import (
	"fmt"
	"math"

	"github.com/llmprobe/llmprobe/prober/slo"
	"github.com/llmprobe/llmprobe/prober/stats"
)

// latencySamples pools the values of metric m of the successful requests
// of steps, by round; ok is false when a step has no per-request samples.
func latencySamples(steps []*Step, m string) (byRound [][]float64, ok bool) {
	rounds := map[int][]float64{}
	var order []int
	for _, s := range steps {
		if s.Requests == nil {
			return nil, false
		}
		if _, seen := rounds[s.Round]; !seen {
			order = append(order, s.Round)
			rounds[s.Round] = []float64{}
		}
		for _, q := range s.Requests {
			if v, has := q.value(m); has {
				rounds[s.Round] = append(rounds[s.Round], v)
			}
		}
	}
	for _, r := range order {
		byRound = append(byRound, rounds[r])
	}
	return byRound, true
}

// sampleCount is the number of samples of metric m behind a side's
// percentile: the per-request samples, or the completed count when only
// summaries are recorded.
func sampleCount(steps []*Step, m string) int {
	if rs, ok := latencySamples(steps, m); ok {
		n := 0
		for _, r := range rs {
			n += len(r)
		}
		return n
	}
	return completed(steps)
}

// rateSamples returns per round the per-request flags of a rate figure (1
// for a good or completed request) and the rounds' durations; ok is false
// when a step lacks per-request samples or a duration.
func rateSamples(steps []*Step, t Threshold, s slo.SLO) (byRound [][]float64, durs []float64, ok bool) {
	idx := map[int]int{}
	for _, st := range steps {
		d := st.RateDuration
		if !(d > 0) {
			d = st.Duration
		}
		if st.Requests == nil || !(d > 0) {
			return nil, nil, false
		}
		i, seen := idx[st.Round]
		if !seen {
			i = len(byRound)
			idx[st.Round] = i
			byRound = append(byRound, nil)
			durs = append(durs, 0)
		}
		durs[i] += d
		for _, q := range st.Requests {
			x := 0.0
			if (t.Metric == FigureGoodput && q.Good(s)) || (t.Metric == FigureThroughput && q.OK) {
				x = 1
			}
			byRound[i] = append(byRound[i], x)
		}
	}
	return byRound, durs, true
}

// goodTokenSamples returns per round the good output tokens of every
// request (0 for one that failed or missed an SLO) and the rounds'
// durations, like rateSamples; ok is false when a step lacks per-request
// samples, their output tokens or a duration.
func goodTokenSamples(steps []*Step, s slo.SLO) (byRound [][]float64, durs []float64, ok bool) {
	byRound, durs, ok = rateSamples(steps, Threshold{Metric: FigureGoodput}, s)
	if !ok {
		return nil, nil, false
	}
	idx := map[int]int{}
	for _, st := range steps {
		i, seen := idx[st.Round]
		if !seen {
			i = len(idx)
			idx[st.Round] = i
			byRound[i] = byRound[i][:0]
		}
		for _, q := range st.Requests {
			x := 0.0
			if q.Good(s) {
				if q.OutputTokens < 0 {
					return nil, nil, false
				}
				x = float64(q.OutputTokens)
			}
			byRound[i] = append(byRound[i], x)
		}
	}
	return byRound, durs, true
}

func compareFigure(l level, t Threshold, o Options, seed uint64) Figure {
	f := Figure{Name: t.Name(), Level: l.label, Limit: t.Max, Conf: o.Conf, Unit: "ms",
		BaselineRounds: []float64{}, CandidateRounds: []float64{}}
	var fb, fc *figure
	if t.Latency() {
		rb, okb := latencySamples(l.b, t.Metric)
		rc, okc := latencySamples(l.c, t.Metric)
		if !okb || !okc {
			f.Status = StatusNotRecorded
			f.Detail = "per-request samples not recorded: no interval on the difference"
			f.BaselineRounds, f.CandidateRounds = recordedRounds(l.b, t), recordedRounds(l.c, t)
			f.Baseline, f.Candidate = stats.Mean(f.BaselineRounds), stats.Mean(f.CandidateRounds)
			return f
		}
		fb, fc = newFigure(rb, nil, t.P), newFigure(rc, nil, t.P)
	} else if t.Metric == FigureCost {
		f.Unit = "USD/M tok"
		pb, pc := o.prices[0], o.prices[1]
		if !(pb > 0) || !(pc > 0) {
			f.Status = StatusNotRecorded
			f.Detail = fmt.Sprintf("no price per hour of %s: cost needs --cost-per-hour (or --baseline-cost-per-hour and --candidate-cost-per-hour)", missingPrices(pb, pc))
			return f
		}
		rb, db, okb := goodTokenSamples(l.b, o.SLO)
		rc, dc, okc := goodTokenSamples(l.c, o.SLO)
		if !okb || !okc {
			f.Status = StatusNotRecorded
			f.Detail = "per-request output tokens or step durations not recorded: no interval on the difference"
			return f
		}
		fb, fc = newFigure(rb, db, 0), newFigure(rc, dc, 0)
		fb.price, fc.price = pb, pc
	} else if t.Metric == FigureEnergy {
		f.Unit = EnergyUnit
		var nb, nc string
		fb, _, nb = energyFigure(l.b, o.SLO)
		fc, _, nc = energyFigure(l.c, o.SLO)
		if fb == nil || fc == nil {
			f.Status = StatusNotRecorded
			f.Detail = energyNotRecorded(sideNote(SideBaseline, nb), sideNote(SideCandidate, nc))
			return f
		}
	} else {
		f.Unit = "req/s"
		if t.Metric == FigureGoodput && o.SLO.IsZero() {
			f.Status = StatusNotRecorded
			f.Detail = "no SLO: goodput needs --goodput"
			return f
		}
		rb, db, okb := rateSamples(l.b, t, o.SLO)
		rc, dc, okc := rateSamples(l.c, t, o.SLO)
		if !okb || !okc {
			f.Status = StatusNotRecorded
			f.Detail = "per-request samples or step durations not recorded: no interval on the difference"
			return f
		}
		fb, fc = newFigure(rb, db, 0), newFigure(rc, dc, 0)
	}
	f.NBaseline, f.NCandidate = fb.n(), fc.n()
	f.Baseline, f.Candidate = fb.value(), fc.value()
	f.BaselineRounds, f.CandidateRounds = fb.perRound(), fc.perRound()
	if f.NBaseline == 0 || f.NCandidate == 0 || math.IsNaN(f.Baseline) || math.IsNaN(f.Candidate) || f.Baseline == 0 ||
		math.IsInf(f.Baseline, 0) || math.IsInf(f.Candidate, 0) {
		f.Status = StatusNotRecorded
		f.Detail = "no sample on one side"
		if math.IsInf(f.Baseline, 0) || math.IsInf(f.Candidate, 0) {
			f.Detail = "no good output token on one side: its figure is not finite"
		}
		f.Baseline, f.Candidate = finiteOr0(f.Baseline), finiteOr0(f.Candidate)
		return f
	}
	f.Change = (f.Candidate - f.Baseline) / f.Baseline
	lo, hi, ok := diffCI(fb, fc, o.Iters, o.Conf, seed)
	if !ok {
		f.Status = StatusNotRecorded
		f.Detail = "the bootstrap could not bound the difference (the baseline resamples to 0)"
		return f
	}
	if o.Z > 0 {
		// A sequential look: the interval at the look's boundary, its
		// half-widths scaled as a normal interval's (Options.Z).
		wLo, wHi := o.Z/ZOfConf(o.Conf), o.Z/ZOfConf(o.Conf)
		if o.ZPass > 0 { // the worse end at the pass decision's boundary
			if t.HigherWorse() {
				wHi = o.ZPass / ZOfConf(o.Conf)
			} else {
				wLo = o.ZPass / ZOfConf(o.Conf)
			}
		}
		lo, hi = f.Change-(f.Change-lo)*wLo, f.Change+(hi-f.Change)*wHi
		f.Conf = confOfZs(o.Z, o.ZPass)
	}
	f.CILo, f.CIHi = lo, hi
	judge(&f, t, leaveOneOut(fb, fc, t))
	return f
}

// recordedRounds is each step's recorded percentile of t (summaries only).
func recordedRounds(steps []*Step, t Threshold) []float64 {
	out := []float64{}
	for _, s := range steps {
		if v, ok := s.Percentiles[t.Metric][t.P]; ok {
			out = append(out, v)
		}
	}
	return out
}

func finiteOr0(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// Num formats a figure with 3 significant digits at least (the figures of
// compare and analyze).
func Num(v float64) string {
	switch a := math.Abs(v); {
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

// missingPrices names the sides without a price.
func missingPrices(b, c float64) string {
	switch {
	case !(b > 0) && !(c > 0):
		return "either side"
	case !(b > 0):
		return "the baseline"
	}
	return "the candidate"
}
