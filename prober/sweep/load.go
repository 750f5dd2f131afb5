package sweep

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/go-kit/log/level"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/arrival"
	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/endpoint"
	"github.com/llmprobe/llmprobe/prober/schedule"
)

// The measured load of a step: its schedule and the request of each arrival.

// request builds the client request of an item.
func (r *runner) request(id string, it promptItem) client.Request {
	if r.opts.rewritePrompt != nil {
		it = r.opts.rewritePrompt(it)
	}
	req := endpoint.NewRequest(r.cfg.API, id, it, r.cfg.Workload.IgnoreEOSOrDefault())
	endpoint.WithBatch(&req, r.cfg.API, r.cfg.BatchSize)
	endpoint.WithFeatures(&req, r.features.Draw(uint64(r.cfg.shardSeed()), it.Index))
	req.Header = r.sloHeader()
	return req
}

// sloHeader returns the SLO headers of the sweep's requests
// (Config.SLOHeaders), nil when it sends none.
func (r *runner) sloHeader() http.Header {
	if !r.cfg.SLOHeaders {
		return nil
	}
	return endpoint.SLOHeaders(r.cfg.SLO)
}

// load runs the step's schedule. Each request, once completed, goes to
// deliver (statistics, sink, observer) from its own goroutine; nothing of
// it is kept here.
func (r *runner) load(ctx context.Context, st *Step, t0 time.Time, seed uint64, items *itemList, n int, acc *StatsAccumulator) {
	c := r.cfg
	sc := schedule.Config{Start: t0}
	tc := r.traceSchedule(&sc, st, t0, n) // a trace replay: its own offsets (trace.go)
	switch st.Mode {
	case ModeClosed:
		sc.Mode, sc.Workers = schedule.Closed, st.Concurrency
	case ModeBurst:
		sc.Mode = schedule.Burst
	default:
		switch {
		case tc != nil: // traceSchedule set the trace's offsets
		case c.Unscaled:
			proc, err := arrival.New(c.Arrival, c.sendRate(st.Level), c.Burstiness, seed)
			if err != nil { // validated
				panic(err)
			}
			sc.Mode, sc.Process = schedule.Open, proc
		default:
			offsets, err := normalizedOffsets(c.Arrival, c.sendRate(st.Level), c.Burstiness, seed, n)
			if err != nil { // validated
				panic(err)
			}
			sc.Mode, sc.Process = schedule.Open, schedule.NewOffsets(offsets)
		}
		if c.MaxConcurrency > 0 {
			sc.MaxConcurrency, sc.OnFull = c.MaxConcurrency, schedule.Wait
		}
	}
	switch {
	case n >= 0:
		// Open loop and burst: exactly the planned arrivals.
		sc.Count = int64(n)
	case c.NumPrompts > 0:
		sc.Count = int64(c.shardPrompts())
	default:
		sc.Duration = c.Duration
	}
	var ss *stepSessions
	if r.prompts.sessions != nil {
		ss = newStepSessions()
		defer func() { st.MultiTurn = ss.stats(c.sendRate(st.Level), st.Mode) }()
	}
	sched, err := schedule.New(sc, func(ctx context.Context, scheduled time.Time, queueWait time.Duration) {
		i, _ := schedule.Index(ctx)
		it, err := items.get(ctx, int(i))
		if ss != nil {
			r.runSession(ctx, st, acc, ss, i, scheduled, queueWait, it, err)
			return
		}
		rec := prober.Record{
			Target:    r.fp.Target.URL,
			Probe:     st.Label,
			Model:     r.model,
			RequestID: fmt.Sprintf("llmprobe-%s-%d-%d", r.runID, st.Index, i),
			Scheduled: scheduled,
			QueueWait: queueWait,
		}
		if err != nil {
			now := time.Now()
			rec.Sent, rec.WallStart, rec.SendLag = now, now, now.Sub(scheduled)
			rec.Error, rec.ErrorMessage = prober.ClassCanceled, "building the prompt: "+err.Error()
		} else {
			r.client.Do(ctx, r.request(rec.RequestID, it), &rec)
		}
		if tc != nil {
			tc.add(i, &rec)
		}
		r.deliver(st, acc, i, &rec, it.Prompt)
	})
	if err != nil { // validated
		panic(err)
	}
	if _, err := sched.Run(ctx); err != nil {
		level.Error(r.logger).Log("msg", "schedule", "err", r.redact(err.Error()))
	}
}

// normalizedOffsets draws a step's n arrival offsets as vllm bench serve
// does (vllm-reference.md §1.4): n gaps from the arrival process, made
// cumulative and rescaled so that the last arrival is at exactly n / rate.
// The step then offers exactly its requested rate over its window, and the
// Poisson (or gamma) clustering within the window is kept; without the
// rescaling a 5 s step at 270 req/s offers 270 ± 7 req/s (one standard
// deviation), enough to move a latency-bound knee by several percent.
func normalizedOffsets(kind string, rate, burstiness float64, seed uint64, n int) ([]time.Duration, error) {
	proc, err := arrival.New(kind, rate, burstiness, seed)
	if err != nil {
		return nil, err
	}
	raw := make([]time.Duration, n)
	for i := range raw {
		raw[i] = proc.Next()
	}
	if n == 0 || raw[n-1] <= 0 {
		return raw, nil
	}
	scale := float64(n) / rate * float64(time.Second) / float64(raw[n-1])
	for i, d := range raw {
		raw[i] = time.Duration(math.Round(float64(d) * scale)) // in place: one slice per step
	}
	return raw, nil
}
