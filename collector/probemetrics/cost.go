package probemetrics

import (
	"maps"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
)

// NameTargetCost is the gauge of a target's configured price.
const NameTargetCost = "llmprobe_target_cost_per_hour"

// targetCostDesc describes llmprobe_target_cost_per_hour.
var targetCostDesc = prometheus.NewDesc(NameTargetCost, "Price of the target's serving in USD per hour from the configuration "+
	"(targets[].cost_per_hour), for rules that turn the goodput rate into a cost per million good output tokens; "+
	"absent for a target without a price.", []string{"target"}, nil)

// SetTargetCosts replaces the exported prices: one llmprobe_target_cost_per_hour
// series per target with a price > 0 (targets not in costs, or at 0, have
// none). m keeps its own copy of costs; call it after every configuration
// (re)load.
func (m *Metrics) SetTargetCosts(costs map[string]float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.costs = map[string]float64{}
	for t, c := range costs {
		if c > 0 {
			m.costs[t] = c
		}
	}
}

// targetCost exports llmprobe_target_cost_per_hour, registered beside
// Metrics by New.
type targetCost struct{ m *Metrics }

// Describe implements prometheus.Collector.
func (targetCost) Describe(ch chan<- *prometheus.Desc) { ch <- targetCostDesc }

// Collect implements prometheus.Collector: one series per priced target, in
// target order.
func (c targetCost) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.RLock()
	defer c.m.mu.RUnlock()
	for _, t := range slices.Sorted(maps.Keys(c.m.costs)) {
		ch <- prometheus.MustNewConstMetric(targetCostDesc, prometheus.GaugeValue, c.m.costs[t], t)
	}
}
