package manager

import (
	"time"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/answer"
	"github.com/llmprobe/llmprobe/prober/slo"
)

// Observer receives every finished request of the manager's probes: the one
// method an observer must have. collector/probemetrics (the daemon's
// metrics) and internal/web's Window (the landing page's summary) are the
// daemon's observers, cmd/llmprobe wires them; the manager never learns who
// observes.
//
// An observer that also wants the other events implements the optional
// interfaces below (SkipObserver, ArrivalObserver, ProbeObserver,
// TargetObserver), which the manager finds with a type assertion once, in
// New, as net/http finds an http.Flusher.
//
// Every method of an observer is called from many goroutines at once (every
// in-flight request has its own) and must be quick: it is on the request
// path.
type Observer interface {
	// Observe is called with every finished request (sent or failed before
	// sending) and its SLO verdict. It must not retain or mutate r.
	Observe(r *prober.Record, v slo.Verdict)
}

// SkipObserver is implemented by observers that count the arrivals that
// were not sent.
type SkipObserver interface {
	// Skipped is called for an arrival that was not sent, with the reason.
	Skipped(target, probe string, reason SkipReason)
}

// ArrivalObserver is implemented by observers that follow the schedule: the
// arrivals as they come and the requests in flight.
type ArrivalObserver interface {
	// SetLastArrival is called at every scheduled arrival, sent or skipped,
	// with its scheduled time.
	SetLastArrival(target, probe string, at time.Time)
	// InFlight is called with +1 when an arrival starts its request (its
	// discovery and prompt sizing included) and -1 when it is done.
	InFlight(target, probe string, delta int)
}

// ProbeObserver is implemented by observers that follow the starts, SLO
// changes and stops of probes.
type ProbeObserver interface {
	// ProbeStarted is called when a probe starts (anew after a reload
	// changed it), before its first arrival.
	ProbeStarted(target, probe string, s ProbeSettings)
	// SLOChanged is called when a reload changes the SLO or the goodput
	// objective of a running probe in place.
	SLOChanged(target, probe string, s slo.SLO, goodputObjective float64)
	// DeleteProbe is called when a reload removes a probe, after its
	// in-flight requests were observed.
	DeleteProbe(target, probe string)
}

// TargetObserver is implemented by observers that follow the starts and
// stops of targets and what discovery learns about them.
type TargetObserver interface {
	// SetTargetLabels is called when a target starts (anew after a reload
	// changed it) with its static labels from the configuration (none:
	// nil). It must not retain or mutate labels.
	SetTargetLabels(target string, labels map[string]string)
	// SetTargetInfo is called when discovery learns (or relearns) what a
	// target serves; empty strings are unknown values.
	SetTargetInfo(target string, info TargetInfo)
	// DeleteTarget is called when a reload removes a target.
	DeleteTarget(target string)
}

// AnswerObserver is implemented by observers that follow answer checks
// (probes with answer_checks): the judged result of each check.
type AnswerObserver interface {
	// AnswerChecked is called with the result of every check that was
	// judged (pass or fail) or that could not be (error); a check canceled
	// by a stop or reload is not reported. r's Reply and Reason went
	// through the target's Redactor. It must not retain r's Logprobs
	// slice beyond the call without copying it.
	AnswerChecked(target, probe string, r answer.Result)
}

// NopObserver observes nothing. The optional interfaces are opt-in, so an
// observer needs nothing to embed: NopObserver stands where an Observer is
// required and none is wanted.
type NopObserver struct{}

// Observe implements Observer.
func (NopObserver) Observe(*prober.Record, slo.Verdict) {}

// ObserverFunc adapts a function to an Observer (of finished requests only),
// as http.HandlerFunc adapts one to a Handler.
type ObserverFunc func(r *prober.Record, v slo.Verdict)

// Observe calls f(r, v).
func (f ObserverFunc) Observe(r *prober.Record, v slo.Verdict) { f(r, v) }

// ProbeSettings are the settings of a starting probe that observers export.
type ProbeSettings struct {
	// Rate is the mean arrival rate in requests per second; for an
	// answer-check probe, runs of its set per second (1/every).
	Rate float64
	// SLO and GoodputObjective are the target's, at the start.
	SLO              slo.SLO
	GoodputObjective float64
	// Start is when the probe started (its "last arrival" until the first).
	Start time.Time
	// AnswerChecks are the check ids of an answer-check probe, in its
	// set's order (nil for other probes).
	AnswerChecks []string
}

// TargetInfo is what discovery learned about a target, as observers export
// it (llmprobe_target_info). Empty strings are unknown values.
type TargetInfo struct {
	// ServerVersion is the server's version (vLLM's /version, or the
	// engine's own endpoint).
	ServerVersion string
	// Model is the model requested (configured or the first listed).
	Model string
	// MaxModelLen is the served context length in tokens, as a decimal.
	MaxModelLen string
	// Engine is the server engine (engine.Name: vllm, sglang, tgi,
	// llamacpp, ollama, unknown).
	Engine string
	// ServerInstance is the host[:port] of the server's /metrics URL
	// (metrics_url, default base_url + /metrics; base_url's when
	// metrics_url is none), as written in the configuration: the instance
	// label Prometheus gives the server's own series when a scrape job
	// lists that address, so rules can join them to the target.
	ServerInstance string
}

// SkipReason says why a scheduled arrival was not sent. The set is closed
// (it is a label value).
type SkipReason string

// The skip reasons.
const (
	// SkipMaxConcurrency: the probe's max_concurrency in-flight cap was full.
	SkipMaxConcurrency SkipReason = "max_concurrency"
	// SkipTooLong: the drawn prompt + output tokens exceed the served
	// model's max_model_len (the probe's config, not a server failure).
	SkipTooLong SkipReason = "too_long"
)

// SkipReasons lists every skip reason in a stable order.
var SkipReasons = []SkipReason{SkipMaxConcurrency, SkipTooLong}

// observers is the fan-out of Options.Observers: each event goes to the
// observers that implement its interface, in the order given. The
// interfaces are asserted once, in newObservers, not per event.
type observers struct {
	all      []Observer
	skips    []SkipObserver
	arrivals []ArrivalObserver
	probes   []ProbeObserver
	targets  []TargetObserver
	answers  []AnswerObserver
}

func newObservers(os []Observer) *observers {
	o := &observers{}
	for _, x := range os {
		if x == nil {
			continue
		}
		o.all = append(o.all, x)
		if s, ok := x.(SkipObserver); ok {
			o.skips = append(o.skips, s)
		}
		if a, ok := x.(ArrivalObserver); ok {
			o.arrivals = append(o.arrivals, a)
		}
		if p, ok := x.(ProbeObserver); ok {
			o.probes = append(o.probes, p)
		}
		if t, ok := x.(TargetObserver); ok {
			o.targets = append(o.targets, t)
		}
		if a, ok := x.(AnswerObserver); ok {
			o.answers = append(o.answers, a)
		}
	}
	return o
}

func (o *observers) Observe(r *prober.Record, v slo.Verdict) {
	for _, x := range o.all {
		x.Observe(r, v)
	}
}

func (o *observers) Skipped(target, probe string, reason SkipReason) {
	for _, x := range o.skips {
		x.Skipped(target, probe, reason)
	}
}

func (o *observers) SetLastArrival(target, probe string, at time.Time) {
	for _, x := range o.arrivals {
		x.SetLastArrival(target, probe, at)
	}
}

func (o *observers) InFlight(target, probe string, delta int) {
	for _, x := range o.arrivals {
		x.InFlight(target, probe, delta)
	}
}

func (o *observers) ProbeStarted(target, probe string, s ProbeSettings) {
	for _, x := range o.probes {
		x.ProbeStarted(target, probe, s)
	}
}

func (o *observers) SLOChanged(target, probe string, s slo.SLO, goodputObjective float64) {
	for _, x := range o.probes {
		x.SLOChanged(target, probe, s, goodputObjective)
	}
}

func (o *observers) DeleteProbe(target, probe string) {
	for _, x := range o.probes {
		x.DeleteProbe(target, probe)
	}
}

func (o *observers) SetTargetLabels(target string, labels map[string]string) {
	for _, x := range o.targets {
		x.SetTargetLabels(target, labels)
	}
}

func (o *observers) SetTargetInfo(target string, info TargetInfo) {
	for _, x := range o.targets {
		x.SetTargetInfo(target, info)
	}
}

func (o *observers) AnswerChecked(target, probe string, r answer.Result) {
	for _, x := range o.answers {
		x.AnswerChecked(target, probe, r)
	}
}

func (o *observers) DeleteTarget(target string) {
	for _, x := range o.targets {
		x.DeleteTarget(target)
	}
}
