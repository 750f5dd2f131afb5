package discovery

import "github.com/prometheus/client_golang/prometheus"

// metrics are llmprobe_discovery_*, each by discovery entry.
type metrics struct {
	targets  *prometheus.GaugeVec
	dropped  *prometheus.GaugeVec
	updates  *prometheus.CounterVec
	failures *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		targets: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "llmprobe_discovery_targets",
			Help: "Targets a discovery entry yields now (probed by this replica or, with --shard, another).",
		}, []string{"discovery"}),
		dropped: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "llmprobe_discovery_dropped_targets",
			Help: "Discovered targets a discovery entry drops now, by reason: relabel (relabel_configs), invalid, collision (name taken), max_targets.",
		}, []string{"discovery", "reason"}),
		updates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llmprobe_discovery_updates_total",
			Help: "Target group updates a discovery entry's mechanisms reported.",
		}, []string{"discovery"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llmprobe_discovery_failures_total",
			Help: "Errors of a discovery entry's mechanisms (a failed refresh, an unreadable file, a mechanism that could not start); the last good targets are kept.",
		}, []string{"discovery"}),
	}
	if reg != nil {
		reg.MustRegister(m.targets, m.dropped, m.updates, m.failures)
	}
	return m
}

// init creates an entry's series, so that they exist from its start.
func (m *metrics) init(entry string) {
	m.targets.WithLabelValues(entry)
	m.updates.WithLabelValues(entry)
	m.failures.WithLabelValues(entry)
	for _, r := range DropReasons {
		m.dropped.WithLabelValues(entry, r)
	}
}

// delete removes a stopped entry's series.
func (m *metrics) delete(entry string) {
	l := prometheus.Labels{"discovery": entry}
	m.targets.DeletePartialMatch(l)
	m.dropped.DeletePartialMatch(l)
	m.updates.DeletePartialMatch(l)
	m.failures.DeletePartialMatch(l)
}
