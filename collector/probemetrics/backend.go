package probemetrics

import "github.com/llmprobe/llmprobe/prober"

// NameBackendRequests is the counter of requests by the backend that
// answered them (a target's attribution_headers).
const NameBackendRequests = "llmprobe_backend_requests_total"

// helpBackendRequests is llmprobe_backend_requests_total's help. It is a
// family of its own, not a label of llmprobe_requests_total: client_golang
// refuses a family whose series have different label names, and the
// series of targets without attribution_headers keep their label set.
const helpBackendRequests = "Requests sent and finished of targets with attribution_headers, by outcome and by backend: the value of " +
	"the first attribution header the response carried (\"none\" when it carried none; past " +
	"the per-target bound of distinct values, \"other\")."

// observeBackend counts r by its backend, when its target attributes one.
func (m *Metrics) observeBackend(r *prober.Record) {
	if r.Backend == "" {
		return
	}
	m.backends.WithLabelValues(r.Target, r.Probe, r.Backend, r.Outcome()).Inc()
}
