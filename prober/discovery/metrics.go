package discovery

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// metrics are llmprobe_discovery_*, each by discovery entry.
type metrics struct {
	targets  *prometheus.GaugeVec
	dropped  *prometheus.GaugeVec
	updates  *prometheus.CounterVec
	failures *failures
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
		failures: newFailures(),
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
	m.failures.init(entry)
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
	m.failures.delete(entry)
}

// uncountedFailures names, by mechanism, the counter of failures that
// mechanism counts without logging them through the slog logger the
// Runner hands it (so that countingHandler misses them): Kubernetes
// discovery's failed LIST and WATCH requests, which client-go's reflector
// reports to klog (prometheus/discovery/kubernetes: the informers' watch
// error handler).
var uncountedFailures = map[string]string{
	"kubernetes": "prometheus_sd_kubernetes_failures_total",
}

// failures is llmprobe_discovery_failures_total. Per entry it is the sum
// of the errors its mechanisms logged (a failed refresh, an unreadable
// file, a mechanism that could not start: countingHandler) and the
// failures a mechanism only counts (uncountedFailures), read at each
// scrape from the registries of the entry's mechanisms. A restarted entry
// carries its earlier runs' counts, so the series only grows until the
// entry is removed.
type failures struct {
	desc *prometheus.Desc

	mu      sync.Mutex
	own     map[string]prometheus.Counter
	sources map[string][]failureSource // entry -> its running mechanisms' counters
	carried map[string]float64         // entry -> counts of its stopped runs' mechanisms
}

// failureSource is a running mechanism's registry and the counter in it
// that counts its failures.
type failureSource struct {
	reg    prometheus.Gatherer
	metric string
}

func newFailures() *failures {
	return &failures{
		desc: prometheus.NewDesc("llmprobe_discovery_failures_total",
			"Errors of a discovery entry's mechanisms (a failed refresh, an unreadable file, a failed Kubernetes list or watch, a mechanism that could not start); the last good targets are kept.",
			[]string{"discovery"}, nil),
		own:     map[string]prometheus.Counter{},
		sources: map[string][]failureSource{},
		carried: map[string]float64{},
	}
}

// init creates the entry's count (0) if it has none.
func (f *failures) init(entry string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.own[entry]; !ok {
		f.own[entry] = prometheus.NewCounter(prometheus.CounterOpts{Name: "llmprobe_discovery_failures_total"})
	}
}

// counter is the entry's own count (init first), for countingHandler.
func (f *failures) counter(entry string) prometheus.Counter {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.own[entry]
}

// watch adds a running mechanism of entry whose failures reg counts in
// metric.
func (f *failures) watch(entry string, reg prometheus.Gatherer, metric string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sources[entry] = append(f.sources[entry], failureSource{reg, metric})
}

// retire keeps the counts of entry's stopped mechanisms (a restart).
func (f *failures) retire(entry string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.carried[entry] += sumSources(f.sources[entry])
	delete(f.sources, entry)
}

// delete forgets a removed entry.
func (f *failures) delete(entry string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.own, entry)
	delete(f.sources, entry)
	delete(f.carried, entry)
}

// value is the entry's llmprobe_discovery_failures_total.
func (f *failures) value(entry string) float64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.valueLocked(entry)
}

func (f *failures) valueLocked(entry string) float64 {
	c, ok := f.own[entry]
	if !ok {
		return 0
	}
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return 0
	}
	return m.GetCounter().GetValue() + f.carried[entry] + sumSources(f.sources[entry])
}

// sumSources adds up the failure counters of mechanisms.
func sumSources(srcs []failureSource) float64 {
	var sum float64
	for _, s := range srcs {
		mfs, err := s.reg.Gather()
		if err != nil {
			continue // a private registry of counters: cannot fail
		}
		for _, mf := range mfs {
			if mf.GetName() != s.metric {
				continue
			}
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

func (f *failures) Describe(ch chan<- *prometheus.Desc) { ch <- f.desc }

func (f *failures) Collect(ch chan<- prometheus.Metric) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for entry := range f.own {
		ch <- prometheus.MustNewConstMetric(f.desc, prometheus.CounterValue, f.valueLocked(entry), entry)
	}
}
