package manager

import (
	"time"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/slo"
)

// Observer receives what the manager's probes do; collector/probemetrics
// implements it with the daemon's metrics, and cmd/llmprobe wires the two.
// The manager never learns who observes. Methods are called from many
// goroutines at once (every in-flight request has its own) and must be
// quick: they are on the request path.
type Observer interface {
	// ProbeStarted is called when a probe starts (anew after a reload
	// changed it), before its first arrival.
	ProbeStarted(target, probe string, s ProbeSettings)
	// SLOChanged is called when a reload changes the SLO or the goodput
	// objective of a running probe in place.
	SLOChanged(target, probe string, s slo.SLO, goodputObjective float64)
	// SetLastArrival is called at every scheduled arrival, sent or skipped,
	// with its scheduled time.
	SetLastArrival(target, probe string, at time.Time)
	// InFlight is called with +1 when an arrival starts its request (its
	// discovery and prompt sizing included) and -1 when it is done.
	InFlight(target, probe string, delta int)
	// Observe is called with every finished request (sent or failed before
	// sending) and its SLO verdict. It must not retain or mutate r.
	Observe(r *prober.Record, v slo.Verdict)
	// Skipped is called for an arrival that was not sent, with the reason.
	Skipped(target, probe string, reason SkipReason)
	// SetTargetInfo is called when discovery learns (or relearns) what a
	// target serves; empty strings are unknown values.
	SetTargetInfo(target string, info TargetInfo)
	// SetTargetLabels is called when a target starts (anew after a reload
	// changed it) with its static labels from the configuration (none:
	// nil). It must not retain or mutate labels.
	SetTargetLabels(target string, labels map[string]string)
	// DeleteProbe is called when a reload removes a probe, after its
	// in-flight requests were observed.
	DeleteProbe(target, probe string)
	// DeleteTarget is called when a reload removes a target.
	DeleteTarget(target string)
}

// ProbeSettings are the settings of a starting probe that observers export.
type ProbeSettings struct {
	// Rate is the mean arrival rate in requests per second.
	Rate float64
	// SLO and GoodputObjective are the target's, at the start.
	SLO              slo.SLO
	GoodputObjective float64
	// Start is when the probe started (its "last arrival" until the first).
	Start time.Time
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

// nopObserver observes nothing (Options.Observer nil).
type nopObserver struct{}

func (nopObserver) ProbeStarted(string, string, ProbeSettings)  {}
func (nopObserver) SLOChanged(string, string, slo.SLO, float64) {}
func (nopObserver) SetLastArrival(string, string, time.Time)    {}
func (nopObserver) InFlight(string, string, int)                {}
func (nopObserver) Observe(*prober.Record, slo.Verdict)         {}
func (nopObserver) Skipped(string, string, SkipReason)          {}
func (nopObserver) SetTargetInfo(string, TargetInfo)            {}
func (nopObserver) SetTargetLabels(string, map[string]string)   {}
func (nopObserver) DeleteProbe(string, string)                  {}
func (nopObserver) DeleteTarget(string)                         {}
