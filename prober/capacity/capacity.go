// Package capacity holds what the daemon's capacity sweeps report to their
// consumers: the last successful result of a target's sweep (Last: the
// knee, the highest goodput, the goodput curve), the result values of a
// finished sweep, and the Observer that receives them. internal/sweepd
// produces these; collector/probemetrics exports them as the
// llmprobe_sweep_* gauges and counters. A leaf package: it imports nothing
// of llmprobe, so the metrics package does not depend on the sweep daemon,
// its run directories or its reports.
package capacity

import "time"

// Results of a finished sweep as Observer.SweepFinished reports them (the
// result label of llmprobe_sweep_runs_total).
const (
	ResultSuccess  = "success"
	ResultFailed   = "failed"
	ResultCanceled = "canceled"
)

// Results lists every result in a stable order.
var Results = []string{ResultSuccess, ResultFailed, ResultCanceled}

// States of a sweep's knee (Last.State): the same words as sweep.KneeDecided,
// sweep.KneeBound and sweep.KneeUndecided (result.json knee.state), the
// state label of llmprobe_sweep_knee_state and the landing page's words
// (internal/web's TestKneeVocabulary holds them equal).
const (
	StateDecided   = "decided"
	StateBound     = "bound"
	StateUndecided = "undecided"
)

// States lists every knee state in a stable order.
var States = []string{StateDecided, StateBound, StateUndecided}

// StateOf is l's knee state: State, or for a Last without one (a result
// written before states existed) the state its other fields give.
func (l Last) StateOf() string {
	switch {
	case l.State != "":
		return l.State
	case l.KneeFound:
		return StateDecided
	case l.Knee > 0:
		return StateBound // a lower bound above 0 was decided, whatever Decided says
	case !l.Decided:
		return StateUndecided
	}
	return StateDecided
}

// Last is what a target's sweep of one name last measured successfully.
type Last struct {
	// Knee is the knee level in req/s (sweep.Knee.Estimate: a lower bound
	// when KneeFound is false, 0 when no level passed); MaxGoodput the highest
	// goodput of a valid level, in req/s.
	Knee       float64
	KneeFound  bool
	MaxGoodput float64
	// Decided is true when the sweep's knee is a figure of capacity: its
	// State is StateDecided (bracketed, or a knee of 0: the lowest level
	// run failed on valid evidence) or StateBound (a lower bound: the knee
	// is at least Knee). False for StateUndecided: Knee is then no figure
	// of capacity (0 says nothing), llmprobe_sweep_knee_decided is 0 and
	// the knee gauges keep the last decided sweep's figures.
	Decided bool
	// State is the knee's state (StateDecided, StateBound or
	// StateUndecided; "" is read as Decided says); Undecided, for
	// StateUndecided, why (sweep.UndecidedReasons: "no_valid_level",
	// "too_short", "no_evidence_below").
	State     string
	Undecided string
	// ProbeLoad is the request rate, in req/s, of the daemon's own probes of
	// the target while the sweep ran (the sum of their configured rates): the
	// load the knee was measured under, beside the sweep's own.
	ProbeLoad float64
	// Mode is the sweep's mode: "isolated" (the default; "" in results of
	// before the modes) or "background" (the knee counts the server's
	// production traffic: Knee is its total, Production the production
	// rate at the knee, the daemon's probes included).
	Mode       string
	Production float64
	// KneeUnit is "req/s" or "concurrency".
	KneeUnit string
	// Finished is when the sweep ended; Duration how long it ran.
	Finished time.Time
	Duration time.Duration
	// Dir is the run directory.
	Dir string
	// Steps is the goodput curve: every step of the sweep, in run order.
	Steps []StepPoint
}

// StepPoint is one step of a sweep's goodput curve.
type StepPoint struct {
	// Label names the step ("rate=4", "rate=4/round=2"; "/attempt=N" added
	// for a rerun of an invalid level).
	Label string
	// Goodput and Throughput are in req/s, the p99s in seconds.
	Goodput, Throughput, TTFTP99, TPOTP99 float64
	// Valid is the step's validity.
	Valid bool
}

// Observer receives what the daemon's sweeps do; collector/probemetrics
// implements it. Methods may be called from several goroutines.
type Observer interface {
	// SweepRunning is called with true when a sweep of target starts and
	// false when it ended, and with false when Apply learns of a target.
	SweepRunning(target string, running bool)
	// SweepFinished is called when a sweep named sweep of target ended,
	// with its result (ResultSuccess, ...), how long it ran and, for a
	// success only, what it measured (nil otherwise: a failed sweep never
	// replaces the last good knee).
	SweepFinished(target, sweep, result string, took time.Duration, last *Last)
	// SweepRestored is called at start with the last successful result of
	// each sweep name found under the sweeps directory.
	SweepRestored(target, sweep string, last Last)
	// SweepScheduled is called when a scheduled sweep's schedule starts,
	// with its interval (for cron, the gap between its next two runs), and
	// with 0 when a reload removed it.
	SweepScheduled(target, sweep string, interval time.Duration)
	// TargetRemoved is called when a reload removed target.
	TargetRemoved(target string)
}

// ServerKnee is the server's total request rate at the knee: the knee plus
// the daemon's probe load it was measured under (an isolated sweep's knee
// is its own rate alone), or a background sweep's knee, which already
// counts every request the server served. Headroom is ServerKnee minus the
// server's current rate (docs/metrics.md). 0 when not Decided.
func (l Last) ServerKnee() float64 {
	if !l.Decided {
		return 0
	}
	if l.Mode == ModeBackground {
		return l.Knee
	}
	return l.Knee + l.ProbeLoad
}

// Modes of a sweep (Last.Mode): sweep.ModeIsolated and
// sweep.ModeBackground's values.
const (
	ModeIsolated   = "isolated"
	ModeBackground = "background"
)

// RequestObserver is an Observer that is also told of every successful
// request the daemon's sweeps send (llmprobe_sweep_requests_total), so the
// headroom rules can subtract them from the server's rate.
type RequestObserver interface {
	SweepRequestsDone(target string, n int)
}

// NopObserver is an Observer that does nothing; embed it to implement
// only some methods.
type NopObserver struct{}

func (NopObserver) SweepRunning(string, bool)                                  {}
func (NopObserver) SweepFinished(string, string, string, time.Duration, *Last) {}
func (NopObserver) SweepRestored(string, string, Last)                         {}
func (NopObserver) SweepScheduled(string, string, time.Duration)               {}
func (NopObserver) TargetRemoved(string)                                       {}
