package probemetrics

import (
	"strings"
	"sync"
	"time"

	"github.com/llmprobe/llmprobe/prober/capacity"
	"github.com/prometheus/client_golang/prometheus"
)

// Sweep metric family names (docs/sweep-api.md lists them).
const (
	NameSweepKnee        = "llmprobe_sweep_knee_requests_per_second"
	NameSweepKneeFound   = "llmprobe_sweep_knee_bracketed"
	NameSweepMaxGoodput  = "llmprobe_sweep_max_goodput_requests_per_second"
	NameSweepLastSuccess = "llmprobe_sweep_last_success_timestamp_seconds"
	NameSweepDuration    = "llmprobe_sweep_duration_seconds"
	NameSweepRuns        = "llmprobe_sweep_runs_total"
	NameSweepRunning     = "llmprobe_sweep_running"
	NameSweepInterval    = "llmprobe_sweep_interval_seconds"
	NameSweepStepGoodput = "llmprobe_sweep_step_goodput_requests_per_second"
	NameSweepStepRate    = "llmprobe_sweep_step_throughput_requests_per_second"
	NameSweepStepTTFTP99 = "llmprobe_sweep_step_ttft_p99_seconds"
	NameSweepStepTPOTP99 = "llmprobe_sweep_step_tpot_p99_seconds"
	NameSweepStepValid   = "llmprobe_sweep_step_valid"
	// The headroom's inputs (docs/metrics.md#capacity-and-headroom).
	NameSweepKneeDecided    = "llmprobe_sweep_knee_decided"
	NameSweepKneeServer     = "llmprobe_sweep_knee_server_requests_per_second"
	NameSweepKneeProbeLoad  = "llmprobe_sweep_knee_probe_load_requests_per_second"
	NameSweepKneeProduction = "llmprobe_sweep_knee_production_requests_per_second"
	NameSweepRequests       = "llmprobe_sweep_requests_total"
	// The knee's state and, when undecided, why; the decided knee before
	// the current one (LLMProbeCapacityRegression's run of two).
	NameSweepKneeState         = "llmprobe_sweep_knee_state"
	NameSweepKneeUndecidedInfo = "llmprobe_sweep_knee_undecided_info"
	NameSweepKneePrevious      = "llmprobe_sweep_knee_previous_requests_per_second"
)

// SweepNames returns the sweep metric family names in a stable order.
func SweepNames() []string {
	return []string{NameSweepKnee, NameSweepKneeFound, NameSweepMaxGoodput, NameSweepLastSuccess,
		NameSweepDuration, NameSweepRuns, NameSweepRunning, NameSweepInterval,
		NameSweepStepGoodput, NameSweepStepRate, NameSweepStepTTFTP99, NameSweepStepTPOTP99, NameSweepStepValid,
		NameSweepKneeDecided, NameSweepKneeServer, NameSweepKneeProbeLoad, NameSweepKneeProduction, NameSweepRequests,
		NameSweepKneeState, NameSweepKneeUndecidedInfo, NameSweepKneePrevious}
}

// Sweeps holds the capacity metrics of the daemon's sweeps and is the
// prometheus.Collector that exports them; it implements capacity.Observer.
// Labels: target and sweep (the sweep's name); llmprobe_sweep_running has
// target only. The knee, max goodput, last success and duration gauges hold
// the last successful sweep's figures (read back from disk at start), so a
// failed or canceled sweep never replaces them; it only counts in
// llmprobe_sweep_runs_total{result}. A knee the sweep did not decide
// (capacity.Last state "undecided": no valid evidence) is no figure of
// capacity: llmprobe_sweep_knee_decided is 0,
// llmprobe_sweep_knee_undecided_info{reason} says why, and the knee
// gauges (knee, server knee, probe load, production, previous) keep the
// last decided sweep's figures (absent when none was ever decided), so no
// rule reads an undecided knee as one. Create it with NewSweeps; safe for
// concurrent use.
type Sweeps struct {
	knee, found, maxGoodput, lastSuccess, duration, running, interval *prometheus.GaugeVec
	// The goodput curve of the last successful sweep, by step label.
	stepGoodput, stepRate, stepTTFT, stepTPOT, stepValid *prometheus.GaugeVec
	runs                                                 *prometheus.CounterVec
	// The headroom's inputs: whether the knee was decided, the server's
	// total rate at it, the probe load and production it was measured
	// under, and the sweeps' own successful requests.
	decided, serverKnee, probeLoad, production *prometheus.GaugeVec
	requests                                   *prometheus.CounterVec
	// The knee's state, why it is undecided, and the decided knee before
	// the current one.
	state, undecided, previous *prometheus.GaugeVec

	mu sync.Mutex
	// kneeOf is the decided knee (req/s) each target and sweep gauge
	// holds, by target+"\xff"+sweep: the previous one when the next comes.
	kneeOf map[string]float64
}

var (
	_ capacity.Observer        = (*Sweeps)(nil)
	_ capacity.RequestObserver = (*Sweeps)(nil)
)

// NewSweeps creates the sweep metrics and registers them with reg (nil:
// unregistered). It panics if registration fails.
func NewSweeps(reg prometheus.Registerer) *Sweeps {
	g := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	}
	s := &Sweeps{
		knee: g(NameSweepKnee, "Capacity knee of the last successful sweep that decided one: the highest request rate at which "+
			"goodput kept up and the SLO p99s held (a lower bound when llmprobe_sweep_knee_state is bound; 0 when the lowest "+
			"level run failed on valid evidence; a background sweep's in total requests/s). An undecided sweep "+
			"(llmprobe_sweep_knee_decided 0) leaves it at the last decided knee; absent until one is decided.",
			"target", "sweep"),
		found: g(NameSweepKneeFound, "1 when the last successful sweep bracketed its knee (a higher rate failed), "+
			"0 when every rate passed and the knee is only a lower bound.", "target", "sweep"),
		maxGoodput: g(NameSweepMaxGoodput, "Highest goodput of a valid step of the last successful sweep, in requests per second.",
			"target", "sweep"),
		lastSuccess: g(NameSweepLastSuccess, "Unix time the last successful sweep ended.", "target", "sweep"),
		duration:    g(NameSweepDuration, "How long the last successful sweep ran, in seconds.", "target", "sweep"),
		running: g(NameSweepRunning, "1 while a sweep of the target runs (its probes' latency then includes the sweep's load), else 0.",
			"target"),
		interval: g(NameSweepInterval, "Interval of a scheduled sweep (every:, or the gap between the next two runs of its cron:), "+
			"in seconds; absent for sweeps without a schedule.", "target", "sweep"),
		stepGoodput: g(NameSweepStepGoodput, "Goodput of each step of the last successful sweep (its goodput curve), req/s.",
			"target", "sweep", "step"),
		stepRate: g(NameSweepStepRate, "Request throughput of each step of the last successful sweep, req/s.",
			"target", "sweep", "step"),
		stepTTFT: g(NameSweepStepTTFTP99, "TTFT p99 of each step of the last successful sweep, seconds.",
			"target", "sweep", "step"),
		stepTPOT: g(NameSweepStepTPOTP99, "TPOT p99 of each step of the last successful sweep, seconds.",
			"target", "sweep", "step"),
		stepValid: g(NameSweepStepValid, "1 when the step of the last successful sweep was valid.",
			"target", "sweep", "step"),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameSweepRuns,
			Help: "Sweeps that ended, by result: success, failed (an error, or no valid step) or canceled."},
			[]string{"target", "sweep", "result"}),
		decided: g(NameSweepKneeDecided, "1 when the last successful sweep's knee is a figure of capacity (state decided or bound), "+
			"0 when it is undecided (no valid evidence: llmprobe_sweep_knee_undecided_info says why); the knee series then keep "+
			"the last decided sweep's figures.", "target", "sweep"),
		state: g(NameSweepKneeState, "1 for the knee state of the last successful sweep, 0 for the others: decided (bracketed, or "+
			"a knee of 0 below the lowest level run), bound (a lower bound), undecided (no valid evidence).",
			"target", "sweep", "state"),
		undecided: g(NameSweepKneeUndecidedInfo, "1, with why, while the last successful sweep's knee is undecided: "+
			"no_valid_level, too_short or no_evidence_below; absent otherwise.", "target", "sweep", "reason"),
		previous: g(NameSweepKneePrevious, "The decided knee before the one llmprobe_sweep_knee_requests_per_second holds "+
			"(req/s; absent until two were decided): LLMProbeCapacityRegression wants both low.", "target", "sweep"),
		kneeOf: map[string]float64{},
		serverKnee: g(NameSweepKneeServer, "The server's total request rate at the knee of the last successful sweep: the knee plus "+
			"the probe load it was measured under (a background sweep's knee already counts every request); headroom is it minus "+
			"the server's current rate. Absent when the knee was not decided.", "target", "sweep"),
		probeLoad: g(NameSweepKneeProbeLoad, "Request rate of the target's own probes while the last successful sweep ran "+
			"(the sum of their configured rates): the load its knee was measured under, req/s.", "target", "sweep"),
		production: g(NameSweepKneeProduction, "Production (non-sweep) request rate at the knee of the last successful sweep, "+
			"the probes included: a background sweep's, from the server's request counter; 0 for an isolated sweep.", "target", "sweep"),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameSweepRequests,
			Help: "Successful requests the daemon's sweeps sent to the target (measured requests; not warmups), for the " +
				"headroom rules to subtract from the server's rate."}, []string{"target"}),
	}
	if reg != nil {
		reg.MustRegister(s)
	}
	return s
}

func (s *Sweeps) collectors() []prometheus.Collector {
	return []prometheus.Collector{s.knee, s.found, s.maxGoodput, s.lastSuccess, s.duration, s.runs, s.running, s.interval,
		s.stepGoodput, s.stepRate, s.stepTTFT, s.stepTPOT, s.stepValid,
		s.decided, s.serverKnee, s.probeLoad, s.production, s.requests, s.state, s.undecided, s.previous}
}

// Describe implements prometheus.Collector.
func (s *Sweeps) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range s.collectors() {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (s *Sweeps) Collect(ch chan<- prometheus.Metric) {
	for _, c := range s.collectors() {
		c.Collect(ch)
	}
}

// InitSweep creates the runs_total series of a target's sweep at 0 for
// every result.
func (s *Sweeps) InitSweep(target, sweep string) {
	for _, r := range capacity.Results {
		s.runs.WithLabelValues(target, sweep, r)
	}
}

// SweepRunning implements capacity.Observer. The service calls it with false
// for every target it learns of, so that llmprobe_sweep_running{target} is
// 0 before the target's first sweep.
func (s *Sweeps) SweepRunning(target string, running bool) {
	s.running.WithLabelValues(target).Set(oneIf(running))
	s.requests.WithLabelValues(target) // 0 before the target's first sweep, so rate() has a start
}

// SweepRequestsDone implements capacity.RequestObserver.
func (s *Sweeps) SweepRequestsDone(target string, n int) {
	s.requests.WithLabelValues(target).Add(float64(n))
}

// SweepFinished implements capacity.Observer.
func (s *Sweeps) SweepFinished(target, sweep, result string, _ time.Duration, last *capacity.Last) {
	s.InitSweep(target, sweep)
	s.runs.WithLabelValues(target, sweep, result).Inc()
	if last != nil {
		s.set(target, sweep, *last)
	}
}

// SweepRestored implements capacity.Observer.
func (s *Sweeps) SweepRestored(target, sweep string, last capacity.Last) {
	s.InitSweep(target, sweep)
	s.set(target, sweep, last)
}

func (s *Sweeps) set(target, sweep string, l capacity.Last) {
	// A bracketed knee is decided whatever the Last says (one restored
	// from a result written before Decided was recorded).
	l.Decided = l.Decided || l.KneeFound
	state := l.StateOf()
	if state == capacity.StateUndecided {
		l.Decided = false
	}
	rate := l.KneeUnit == "" || l.KneeUnit == "req/s" // a closed loop's knee is a concurrency, not a rate
	key := target + "\xff" + sweep
	s.mu.Lock()
	switch {
	case rate && l.Decided:
		if prev, ok := s.kneeOf[key]; ok {
			s.previous.WithLabelValues(target, sweep).Set(prev)
		}
		s.kneeOf[key] = l.Knee
		s.knee.WithLabelValues(target, sweep).Set(l.Knee)
		s.serverKnee.WithLabelValues(target, sweep).Set(l.ServerKnee())
		s.probeLoad.WithLabelValues(target, sweep).Set(l.ProbeLoad)
		s.production.WithLabelValues(target, sweep).Set(l.Production)
	case !rate:
		delete(s.kneeOf, key)
		for _, v := range []*prometheus.GaugeVec{s.knee, s.serverKnee, s.previous, s.probeLoad, s.production} {
			v.DeleteLabelValues(target, sweep)
		}
	}
	s.mu.Unlock()
	// An undecided knee leaves the knee gauges at the last decided one.
	s.decided.WithLabelValues(target, sweep).Set(oneIf(l.Decided))
	for _, st := range capacity.States {
		s.state.WithLabelValues(target, sweep, st).Set(oneIf(st == state))
	}
	s.undecided.DeletePartialMatch(prometheus.Labels{"target": target, "sweep": sweep})
	if state == capacity.StateUndecided {
		why := l.Undecided
		if why == "" {
			why = "too_short"
		}
		s.undecided.WithLabelValues(target, sweep, why).Set(1)
	}
	s.found.WithLabelValues(target, sweep).Set(oneIf(l.KneeFound))
	s.maxGoodput.WithLabelValues(target, sweep).Set(l.MaxGoodput)
	s.lastSuccess.WithLabelValues(target, sweep).Set(float64(l.Finished.UnixNano()) / 1e9)
	s.duration.WithLabelValues(target, sweep).Set(l.Duration.Seconds())
	curve := []*prometheus.GaugeVec{s.stepGoodput, s.stepRate, s.stepTTFT, s.stepTPOT, s.stepValid}
	for _, v := range curve {
		v.DeletePartialMatch(prometheus.Labels{"target": target, "sweep": sweep})
	}
	for _, p := range l.Steps {
		for i, v := range []float64{p.Goodput, p.Throughput, p.TTFTP99, p.TPOTP99, oneIf(p.Valid)} {
			curve[i].WithLabelValues(target, sweep, p.Label).Set(v)
		}
	}
}

// SweepScheduled implements capacity.Observer.
func (s *Sweeps) SweepScheduled(target, sweep string, interval time.Duration) {
	if interval <= 0 {
		s.interval.DeleteLabelValues(target, sweep)
		return
	}
	s.InitSweep(target, sweep)
	s.interval.WithLabelValues(target, sweep).Set(interval.Seconds())
}

// oneIf is a 0/1 gauge's value: 1 when b holds.
func oneIf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// TargetRemoved implements capacity.Observer: every series of target goes.
func (s *Sweeps) TargetRemoved(target string) {
	l := prometheus.Labels{"target": target}
	for _, c := range s.collectors() {
		c.(interface{ DeletePartialMatch(prometheus.Labels) int }).DeletePartialMatch(l)
	}
	s.mu.Lock()
	for k := range s.kneeOf {
		if t, _, _ := strings.Cut(k, "\xff"); t == target {
			delete(s.kneeOf, k)
		}
	}
	s.mu.Unlock()
}
