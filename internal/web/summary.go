package web

import (
	"math"
	"slices"
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
// goodput ratio against the objective and the SLO state. It is one of the
// probe manager's observers (manager.Options.Observers): finished requests
// come through Observe, each target's goodput objective through the probe
// events (ProbeStarted, SLOChanged), and DeleteTarget forgets a target a
// reload removed. Safe for concurrent use; it keeps neither prompts nor
// request ids.
type Window struct {
	now func() time.Time

	mu         sync.Mutex
	targets    map[string]*ring
	objectives map[string]float64
}

type sample struct {
	at         time.Time
	ttft, tpot time.Duration
	hasTPOT    bool
	ok, good   bool
}

type ring struct {
	s     []sample
	start int // index of the oldest
}

// NewWindow returns an empty Window on the system clock.
func NewWindow() *Window {
	return &Window{now: time.Now, targets: map[string]*ring{}, objectives: map[string]float64{}}
}

// The Window is a manager observer of finished requests and of the probe
// and target events that carry a target's objective or remove it.
var (
	_ manager.Observer       = (*Window)(nil)
	_ manager.ProbeObserver  = (*Window)(nil)
	_ manager.TargetObserver = (*Window)(nil)
)

// ProbeStarted takes the goodput objective of the probe's target (the
// config's goodput_objective; every probe of a target has the target's).
func (w *Window) ProbeStarted(target, _ string, s manager.ProbeSettings) {
	w.setObjective(target, s.GoodputObjective)
}

// SLOChanged takes the target's new goodput objective.
func (w *Window) SLOChanged(target, _ string, _ slo.SLO, goodputObjective float64) {
	w.setObjective(target, goodputObjective)
}

func (w *Window) setObjective(target string, objective float64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.objectives[target] = objective
}

// DeleteProbe does nothing: the summary is per target, and a target's
// other probes go on.
func (w *Window) DeleteProbe(string, string) {}

// SetTargetLabels does nothing: the summary has no labels.
func (w *Window) SetTargetLabels(string, map[string]string) {}

// SetTargetInfo does nothing: the summary shows no target info.
func (w *Window) SetTargetInfo(string, manager.TargetInfo) {}

// DeleteTarget forgets a target a reload removed: its requests and its
// objective.
func (w *Window) DeleteTarget(target string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.targets, target)
	delete(w.objectives, target)
}

// Observe adds one finished request. Requests llmprobe canceled itself
// (reload, shutdown) are left out, as in the goodput rules.
func (w *Window) Observe(r *prober.Record, v slo.Verdict) {
	if r.Error == prober.ClassCanceled {
		return
	}
	s := sample{at: w.now(), ok: r.OK(), good: v.Good, ttft: r.TTFT}
	s.tpot, s.hasTPOT = r.TPOT()
	w.mu.Lock()
	defer w.mu.Unlock()
	rg := w.targets[r.Target]
	if rg == nil {
		rg = &ring{}
		w.targets[r.Target] = rg
	}
	if len(rg.s) < maxWindowSamples {
		rg.s = append(rg.s, s)
		return
	}
	rg.s[rg.start] = s
	rg.start = (rg.start + 1) % len(rg.s)
}

// TargetSummary is one target's last SummaryWindow.
type TargetSummary struct {
	Target string
	// Requests finished in the window (canceled ones left out); Good of
	// them met every SLO.
	Requests, Good int
	// TTFT and TPOT quantiles over the successful requests (0: none).
	TTFTP50, TTFTP99, TPOTP50, TPOTP99 time.Duration
	// GoodputRatio is Good/Requests (0 without requests); Objective the
	// target's goodput objective.
	GoodputRatio, Objective float64
	// SLOState is "met" (ratio >= objective), "violated" or "no data".
	SLOState string
}

// Summary returns the summary of target over the last SummaryWindow.
func (w *Window) Summary(target string) TargetSummary {
	cut := w.now().Add(-SummaryWindow)
	w.mu.Lock()
	ts := TargetSummary{Target: target, Objective: w.objectives[target], SLOState: "no data"}
	var ttft, tpot []time.Duration
	if rg := w.targets[target]; rg != nil {
		for _, s := range rg.s {
			if s.at.Before(cut) {
				continue
			}
			ts.Requests++
			if s.good {
				ts.Good++
			}
			if s.ok {
				ttft = append(ttft, s.ttft)
				if s.hasTPOT {
					tpot = append(tpot, s.tpot)
				}
			}
		}
	}
	w.mu.Unlock()
	ts.TTFTP50, ts.TTFTP99 = quantiles(ttft)
	ts.TPOTP50, ts.TPOTP99 = quantiles(tpot)
	if ts.Requests > 0 {
		ts.GoodputRatio = float64(ts.Good) / float64(ts.Requests)
		ts.SLOState = "violated"
		if ts.GoodputRatio >= ts.Objective {
			ts.SLOState = "met"
		}
	}
	return ts
}

// quantiles returns the p50 and p99 of xs (stats.PercentileSorted, the
// linear percentiles of the sweep and compare reports; 0, 0 when empty).
// It sorts xs.
func quantiles(xs []time.Duration) (p50, p99 time.Duration) {
	slices.Sort(xs)
	ns := make([]float64, len(xs))
	for i, x := range xs {
		ns[i] = float64(x)
	}
	at := func(p float64) time.Duration { return time.Duration(math.Round(stats.PercentileSorted(ns, p))) }
	return at(50), at(99)
}
