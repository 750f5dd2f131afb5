package probemetrics

// The target's series: its info and static labels (llmprobe_target_info,
// llmprobe_target_labels), and the deletion of a probe's or a target's
// series when a config reload removes it.

import (
	"maps"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmprobe/llmprobe/prober/manager"
)

// SetTargetInfo sets llmprobe_target_info for target to 1 with the labels
// of info (server_version, model, max_model_len, engine, server_instance),
// replacing the target's previous info series. Empty values are exported as
// empty labels (that is, absent in PromQL).
func (m *Metrics) SetTargetInfo(target string, info manager.TargetInfo) {
	l := prometheus.Labels{
		"target": target, "server_version": info.ServerVersion, "model": info.Model,
		"max_model_len": info.MaxModelLen, "engine": info.Engine, "server_instance": info.ServerInstance,
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.info[target]; ok {
		m.targetInfo.Delete(old)
	}
	m.targetInfo.With(l).Set(1)
	m.info[target] = l
}

// SetTargetLabels sets llmprobe_target_labels for target: one series, value
// 1, with the target label and the target's static labels from the
// configuration (config.TargetConfig.Labels), replacing its previous series;
// no labels remove it. The histograms never carry these labels: rules join
// them on target. m keeps its own copy of labels.
func (m *Metrics) SetTargetLabels(target string, labels map[string]string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(labels) == 0 {
		delete(m.labels, target)
		return
	}
	m.labels[target] = maps.Clone(labels)
}

// targetLabels exports llmprobe_target_labels. Its label names differ from
// target to target, so it is an unchecked collector (Describe sends
// nothing), registered beside Metrics by New.
type targetLabels struct{ m *Metrics }

// Describe implements prometheus.Collector: nothing (unchecked).
func (targetLabels) Describe(chan<- *prometheus.Desc) {}

// Collect implements prometheus.Collector: one series per target with
// static labels, in target order.
func (c targetLabels) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.RLock()
	defer c.m.mu.RUnlock()
	for _, target := range slices.Sorted(maps.Keys(c.m.labels)) {
		l := prometheus.Labels{"target": target}
		maps.Copy(l, c.m.labels[target])
		d := prometheus.NewDesc(NameTargetLabels, "Static labels of the target from the configuration "+
			"(targets[].labels, e.g. canary and role), for rules to join on target; value 1.", nil, l)
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, 1)
	}
}

// DeleteProbe removes every series of (target, probe), for a probe removed
// by a config reload. Call it after the probe's in-flight requests have
// been observed: a later Observe re-creates the series.
func (m *Metrics) DeleteProbe(target, probe string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.probes, probeKey{target, probe})
	match := prometheus.Labels{"target": target, "probe": probe}
	for _, v := range m.probeVecs() {
		v.DeletePartialMatch(match)
	}
}

// DeleteTarget removes every series of target (all its probes and its info
// series), for a target removed by a config reload.
func (m *Metrics) DeleteTarget(target string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.probes {
		if k.target == target {
			delete(m.probes, k)
		}
	}
	delete(m.info, target)
	delete(m.labels, target)
	delete(m.costs, target)
	match := prometheus.Labels{"target": target}
	for _, v := range m.probeVecs() {
		v.DeletePartialMatch(match)
	}
	m.targetInfo.DeletePartialMatch(match)
}

// probeVec is a family of m labelled by target and probe: what Describe,
// Collect and the deletions need of it.
type probeVec interface {
	prometheus.Collector
	DeletePartialMatch(prometheus.Labels) int
}

// probeVecs returns every family of m labelled by target and probe (all
// but llmprobe_target_info and the unchecked collectors New registers
// beside m).
func (m *Metrics) probeVecs() []probeVec {
	vs := []probeVec{
		m.ttft, m.ttfc, m.itl, m.tpot, m.e2e, m.sendLag, m.reasoningTok, m.thinking,
		m.requests, m.good, m.sloViolations, m.skipped, m.promptTokens, m.genTokens, m.retries,
		m.cachedTokens, m.cacheRequests, m.backends, m.sessionTurns,
		m.inFlight, m.sloThreshold,
		m.arrivalRate, m.lastArrival, m.objective,
		m.answers.checks, m.answers.lastPass,
		m.serverTiming.queue, m.serverTiming.ttft, m.serverTiming.overhead, m.serverTiming.negative,
	}
	for _, v := range m.phases {
		vs = append(vs, v)
	}
	return vs
}
