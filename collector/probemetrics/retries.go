package probemetrics

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmprobe/llmprobe/prober"
)

// NameRetries is the counter of requests the client resent.
const NameRetries = "llmprobe_request_retries_total"

// RetryReasons lists the values of the reason label of
// llmprobe_request_retries_total (prober.RetryReasons), which Init
// pre-creates.
var RetryReasons = prober.RetryReasons

// helpRetries is llmprobe_request_retries_total's help.
const helpRetries = "Requests resent once because the kept-alive connection the client reused failed before any byte of a " +
	"response (the server had closed or reset it: reused_conn_closed, reused_conn_reset, reused_conn_error); " +
	"the resend's outcome is in llmprobe_requests_total like any request's."

// retryCounters returns the retry counters of (target, probe), indexed like
// RetryReasons.
func (m *Metrics) retryCounters(target, probe string) []prometheus.Counter {
	cs := make([]prometheus.Counter, len(RetryReasons))
	for i, r := range RetryReasons {
		cs[i] = m.retries.WithLabelValues(target, probe, string(r))
	}
	return cs
}

// observeRetry counts r's resend, if it had one.
func (m *Metrics) observeRetry(pm *probeMetrics, r *prober.Record) {
	if r.Retry == prober.RetryNone {
		return
	}
	if i := slices.Index(RetryReasons, r.Retry); i >= 0 {
		pm.retries[i].Inc()
		return
	}
	m.retries.WithLabelValues(r.Target, r.Probe, string(r.Retry)).Inc()
}
