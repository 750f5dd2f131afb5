package web

import (
	"math"
	"sync"
	"time"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/manager"
	"github.com/llmprobe/llmprobe/prober/slo"
	"github.com/llmprobe/llmprobe/prober/stats"
)

// SummaryWindow is how far back the landing page's per-target summary
// looks.
const SummaryWindow = 5 * time.Minute

// maxWindowSamples caps the requests a Window keeps per target (at 100
// req/s, 5 minutes are 30,000).
const maxWindowSamples = 32 << 10

// Window keeps the daemon's finished requests of the last SummaryWindow per
// target, for the landing page's summary: TTFT and TPOT p50/p99, the
// goodput ratio against the objective and the SLO state, the error rate
// and the skipped arrivals; and their counts per minute over the last
// BudgetWindow, for the daemon's view of SLO state (slostate.go: the
// conditions of the shipped alerts, the error budgets). It is one of the
// probe manager's observers (manager.Options.Observers): finished requests
// come through Observe, skipped arrivals through Skipped, each target's
// goodput objective and SLO through the probe events (ProbeStarted,
// SLOChanged), its labels (the canary pairs) and engine through the target
// events, and DeleteTarget forgets a target a reload removed. Safe for
// concurrent use; it keeps neither prompts nor request ids.
type Window struct {
	now func() time.Time

	mu      sync.Mutex
	targets map[string]*targetWindow
	answers answerStore // answers.go
	// sweeping reports whether a sweep of the target runs (SetSweeping;
	// nil: never).
	sweeping func(target string) bool
}

// targetWindow is what a Window keeps of one target.
type targetWindow struct {
	ring
	minutes   *minutes
	seen      time.Time // the first event of the target
	objective float64
	slo       slo.SLO
	labels    map[string]string
	engine    string
}

type sample struct {
	at         time.Time
	ttft, tpot time.Duration
	hasTPOT    bool
	ok, good   bool
	// skip is the reason of a skipped arrival ("" for a request).
	skip manager.SkipReason
}

type ring struct {
	s     []sample
	start int // index of the oldest
}

func (rg *ring) add(s sample) {
	if len(rg.s) < maxWindowSamples {
		rg.s = append(rg.s, s)
		return
	}
	rg.s[rg.start] = s
	rg.start = (rg.start + 1) % len(rg.s)
}

// NewWindow returns an empty Window on the system clock.
func NewWindow() *Window {
	return &Window{now: time.Now, targets: map[string]*targetWindow{}}
}

// The Window is a manager observer of finished requests, skipped arrivals
// and of the probe and target events.
var (
	_ manager.Observer       = (*Window)(nil)
	_ manager.SkipObserver   = (*Window)(nil)
	_ manager.ProbeObserver  = (*Window)(nil)
	_ manager.TargetObserver = (*Window)(nil)
)

// target returns target's window, made on its first event. Call it with
// w.mu held.
func (w *Window) target(target string) *targetWindow {
	tw := w.targets[target]
	if tw == nil {
		tw = &targetWindow{minutes: &minutes{}, seen: w.now()}
		w.targets[target] = tw
	}
	return tw
}

// ProbeStarted takes the goodput objective and SLO of the probe's target
// (the config's; every probe of a target has the target's).
func (w *Window) ProbeStarted(target, _ string, s manager.ProbeSettings) {
	w.setSLO(target, s.SLO, s.GoodputObjective)
}

// SLOChanged takes the target's new SLO and goodput objective.
func (w *Window) SLOChanged(target, _ string, s slo.SLO, goodputObjective float64) {
	w.setSLO(target, s, goodputObjective)
}

func (w *Window) setSLO(target string, s slo.SLO, objective float64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	tw := w.target(target)
	tw.objective, tw.slo = objective, s
}

// DeleteProbe forgets the probe's answer checks; the summary is per
// target, and a target's other probes go on.
func (w *Window) DeleteProbe(target, probe string) { w.deleteAnswers(target, probe) }

// SetSweeping sets how the Window learns that a sweep of a target runs
// (the sweep service's Running): the minutes in which a request of the
// target finished or an arrival was skipped during a sweep are left out of
// the error budgets and of the burn and latency conditions, as the rules
// leave sweeps out (the sweep loads the server on purpose). Call it before
// the first request.
func (w *Window) SetSweeping(running func(target string) bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sweeping = running
}

// swept reports whether a sweep of target runs now. Call it without w.mu.
func (w *Window) swept(target string) bool {
	w.mu.Lock()
	f := w.sweeping
	w.mu.Unlock()
	return f != nil && f(target)
}

// targetLabels are the target labels the Window keeps: the canary pairs'
// (rules/llmprobe.canary.yml) and the replicas' peers
// (rules/llmprobe.replicas.yml).
var targetLabels = []string{"canary", "role", "namespace", "service", "pod"}

// SetTargetLabels keeps the target's canary, role, namespace, service and
// pod labels (the canary pairs of rules/llmprobe.canary.yml, the replica
// peers of rules/llmprobe.replicas.yml).
func (w *Window) SetTargetLabels(target string, labels map[string]string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	tw := w.target(target)
	tw.labels = nil
	for _, k := range targetLabels {
		if v, ok := labels[k]; ok {
			if tw.labels == nil {
				tw.labels = map[string]string{}
			}
			tw.labels[k] = v
		}
	}
}

// SetTargetInfo keeps the target's engine.
func (w *Window) SetTargetInfo(target string, info manager.TargetInfo) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.target(target).engine = info.Engine
}

// DeleteTarget forgets a target a reload removed: its requests, counts,
// objective, labels and engine.
func (w *Window) DeleteTarget(target string) {
	w.deleteAnswers(target, "")
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.targets, target)
}

// Observe adds one finished request. Requests llmprobe canceled itself
// (reload, shutdown) are left out, as in the goodput rules.
func (w *Window) Observe(r *prober.Record, v slo.Verdict) {
	if r.Error == prober.ClassCanceled {
		return
	}
	now := w.now()
	s := sample{at: now, ok: r.OK(), good: v.Good, ttft: r.TTFT}
	s.tpot, s.hasTPOT = r.TPOT()
	swept := w.swept(r.Target)
	w.mu.Lock()
	defer w.mu.Unlock()
	tw := w.target(r.Target)
	tw.add(s)
	c := tw.minutes.at(now)
	c.swept = c.swept || swept
	c.requests++
	switch {
	case v.Good:
		c.good++
		c.success++
	case s.ok:
		c.success++
	default:
		c.failed++
	}
	for _, k := range slo.Kinds {
		if v.Violated.Has(k) {
			c.violated[k]++
		}
	}
}

// Skipped adds one skipped arrival.
func (w *Window) Skipped(target, _ string, reason manager.SkipReason) {
	now := w.now()
	swept := w.swept(target)
	w.mu.Lock()
	defer w.mu.Unlock()
	tw := w.target(target)
	tw.add(sample{at: now, skip: reason})
	c := tw.minutes.at(now)
	c.swept = c.swept || swept
	if reason == manager.SkipMaxConcurrency {
		c.skipMax++
	} else {
		c.skipTooLong++
	}
}

// TargetSummary is one target's last SummaryWindow.
type TargetSummary struct {
	Target string
	// Requests finished in the window (canceled ones left out); Good of
	// them met every SLO, Failed did not succeed.
	Requests, Good, Failed int
	// Skipped counts the arrivals not sent, SkippedMaxConcurrency those of
	// them skipped at the max_concurrency cap (the rest: too_long).
	Skipped, SkippedMaxConcurrency int
	// TTFT and TPOT quantiles over the successful requests (0: none);
	// TTFTMean and TPOTMean their means.
	TTFTP50, TTFTP99, TPOTP50, TPOTP99, TTFTMean, TPOTMean time.Duration
	// GoodputRatio is Good / (Requests + SkippedMaxConcurrency), as the
	// rules' goodput ratio (0 without either); ErrorRate is Failed /
	// Requests (0 without requests); Objective the target's goodput
	// objective.
	GoodputRatio, ErrorRate, Objective float64
	// SLOState is "met" (ratio >= objective), "violated" or "no data".
	SLOState string
}

// SkippedTooLong is the arrivals skipped as too_long.
func (t TargetSummary) SkippedTooLong() int { return t.Skipped - t.SkippedMaxConcurrency }

// Summary returns the summary of target over the last SummaryWindow.
func (w *Window) Summary(target string) TargetSummary {
	ts := w.Side([]string{target})
	ts.Target = target
	return ts
}

// summarize fills ts's figures from the samples of its window.
func summarize(ts TargetSummary, sam []sample) TargetSummary {
	var ttft, tpot []float64 // nanoseconds
	for _, s := range sam {
		if s.skip != "" {
			ts.Skipped++
			if s.skip == manager.SkipMaxConcurrency {
				ts.SkippedMaxConcurrency++
			}
			continue
		}
		ts.Requests++
		if s.good {
			ts.Good++
		}
		if !s.ok {
			ts.Failed++
			continue
		}
		ttft = append(ttft, float64(s.ttft))
		if s.hasTPOT {
			tpot = append(tpot, float64(s.tpot))
		}
	}
	ts.TTFTMean, ts.TTFTP50, ts.TTFTP99 = durationStats(ttft)
	ts.TPOTMean, ts.TPOTP50, ts.TPOTP99 = durationStats(tpot)
	if ts.Requests > 0 {
		ts.ErrorRate = float64(ts.Failed) / float64(ts.Requests)
	}
	if n := ts.Requests + ts.SkippedMaxConcurrency; n > 0 {
		ts.GoodputRatio = float64(ts.Good) / float64(n)
		ts.SLOState = "violated"
		if ts.GoodputRatio >= ts.Objective {
			ts.SLOState = "met"
		}
	}
	return ts
}

// State returns the daemon's view of target's SLO state at now: the alert
// conditions that hold and the error budgets (slostate.go); sweeping mutes
// the burn and latency alerts, as in the rules.
func (w *Window) State(target string, sweeping bool) (alerts []Alert, budgets []Budget) {
	w.mu.Lock()
	defer w.mu.Unlock()
	tw := w.targets[target]
	if tw == nil {
		return nil, nil
	}
	st := evaluate(target, tw.minutes, w.now(), tw.seen, tw.objective, tw.slo, sweeping)
	return st.Alerts, st.Budgets
}

// Meta returns target's engine and its canary and role labels ("" when
// unknown or not set).
func (w *Window) Meta(target string) (engine, canary, role string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if tw := w.targets[target]; tw != nil {
		return tw.engine, tw.labels["canary"], tw.labels["role"]
	}
	return "", "", ""
}

// Side returns the summary over the last SummaryWindow of the targets
// given, their samples pooled (as the canary rules sum a side's
// histograms): one side of a canary pair. Objective is the first target's.
func (w *Window) Side(targets []string) TargetSummary { return w.sideOver(targets, SummaryWindow) }

// sideOver is Side over the last d (at most what the ring holds:
// maxWindowSamples per target).
func (w *Window) sideOver(targets []string, d time.Duration) TargetSummary {
	w.mu.Lock()
	defer w.mu.Unlock()
	ts := TargetSummary{SLOState: "no data"}
	var sam []sample
	cut := w.now().Add(-d)
	for i, t := range targets {
		tw := w.targets[t]
		if tw == nil {
			continue
		}
		if i == 0 {
			ts.Objective = tw.objective
		}
		for _, s := range tw.s {
			if !s.at.Before(cut) {
				sam = append(sam, s)
			}
		}
	}
	return summarize(ts, sam)
}

// durationStats returns the mean (truncated to the nanosecond), p50 and
// p99 of xs in nanoseconds (stats.Summarize: the linear percentiles of the
// sweep and compare reports; 0, 0, 0 when empty).
func durationStats(xs []float64) (mean, p50, p99 time.Duration) {
	s := stats.Summarize(xs)
	round := func(v float64) time.Duration { return time.Duration(math.Round(v)) }
	return time.Duration(s.Mean), round(s.P50), round(s.P99)
}
