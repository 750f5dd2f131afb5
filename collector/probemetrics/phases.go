package probemetrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmprobe/llmprobe/prober"
)

// NamePhase is the histogram of the HTTP phases of a request, blackbox
// exporter's probe_http_duration_seconds{phase} as a histogram per (target,
// probe), with the streaming phases an LLM request adds.
const NamePhase = "llmprobe_http_phase_seconds"

// Classic bucket bounds of llmprobe_http_phase_seconds, 16 each (19 series
// per phase with +Inf, _sum and _count). The slices are shared: do not
// modify them.
var (
	// NetworkPhaseBuckets is for the phases on the network path (resolve,
	// connect, tls, request): SendLagBuckets' 1-2.5-5 steps from 100µs to
	// 10 s, since a connect on a LAN takes a few hundred microseconds and
	// one across regions tens of milliseconds.
	NetworkPhaseBuckets = SendLagBuckets
	// ServerPhaseBuckets is for the phases that wait for the server (wait,
	// first_token, transfer): 1-2.5-5 steps from 1 ms to 10 s, then 30,
	// 60 and 120 s for long generations.
	ServerPhaseBuckets = []float64{
		0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0,
	}
)

// PhaseBuckets returns the classic bucket bounds of phase p of
// llmprobe_http_phase_seconds.
func PhaseBuckets(p prober.Phase) []float64 {
	switch p {
	case prober.PhaseResolve, prober.PhaseConnect, prober.PhaseTLS, prober.PhaseRequest:
		return NetworkPhaseBuckets
	}
	return ServerPhaseBuckets
}

// newPhases creates one histogram vector per phase of
// llmprobe_http_phase_seconds, indexed like prober.Phases: the phase is a
// constant label of each, so that each phase has buckets suited to it in
// one family.
func newPhases(hist func(name, help string, buckets []float64, constLabels prometheus.Labels) *prometheus.HistogramVec) []*prometheus.HistogramVec {
	vs := make([]*prometheus.HistogramVec, len(prober.Phases))
	for i, p := range prober.Phases {
		vs[i] = hist(NamePhase, "Duration of each HTTP phase of a request, as blackbox_exporter's "+
			"probe_http_duration_seconds{phase}: resolve (DNS), connect (TCP), tls (handshake), request (the write "+
			"of the request), wait (request written to the first response byte), first_token (first response byte "+
			"to the first token-bearing event), transfer (first token-bearing event to the end of the stream, "+
			"successful requests only). A phase that did not happen (a reused connection has no resolve, connect "+
			"or tls) is not observed; requests of every outcome observe the phases they went through.",
			PhaseBuckets(p), prometheus.Labels{"phase": string(p)})
	}
	return vs
}

// observePhases observes every phase r went through.
func observePhases(pm *probeMetrics, r *prober.Record, ex prometheus.Labels) {
	for i, p := range prober.Phases {
		if d := r.PhaseTime(p); d > 0 {
			observe(pm.phases[i], d, ex)
		}
	}
}
