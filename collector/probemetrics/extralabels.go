package probemetrics

import (
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// TargetLabels is a prometheus.Gatherer that adds each target's extra
// labels (a discovered target's labels, docs/discovery.md) to every metric
// of the wrapped Gatherer that carries its target label. client_golang's
// vectors have one set of label names per metric, and the extra labels
// differ from target to target, so they are added at gather time: the
// cost is per scrape and per series of a labelled target, nothing per
// request or token. A label the metric already has is left as it is.
//
// The label sets of one family then differ between targets, which the
// exposition formats allow. Safe for concurrent use.
type TargetLabels struct {
	g  prometheus.Gatherer
	mu sync.RWMutex
	by map[string][]*dto.LabelPair // target -> extra labels, sorted by name
}

// NewTargetLabels wraps g; no target has extra labels yet.
func NewTargetLabels(g prometheus.Gatherer) *TargetLabels {
	return &TargetLabels{g: g, by: map[string][]*dto.LabelPair{}}
}

// Set replaces the extra labels of every target: targets not in by have
// none. by is not kept.
func (t *TargetLabels) Set(by map[string]map[string]string) {
	m := make(map[string][]*dto.LabelPair, len(by))
	for target, ls := range by {
		if len(ls) == 0 {
			continue
		}
		pairs := make([]*dto.LabelPair, 0, len(ls))
		for _, k := range slices.Sorted(maps.Keys(ls)) {
			pairs = append(pairs, &dto.LabelPair{Name: new(k), Value: new(ls[k])})
		}
		m[target] = pairs
	}
	t.mu.Lock()
	t.by = m
	t.mu.Unlock()
}

// Gather gathers the wrapped Gatherer and adds the extra labels.
func (t *TargetLabels) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := t.g.Gather()
	t.mu.RLock()
	by := t.by
	t.mu.RUnlock()
	if len(by) == 0 {
		return mfs, err
	}
	for _, mf := range mfs {
		changed := false
		for _, m := range mf.Metric {
			var extra []*dto.LabelPair
			for _, lp := range m.Label {
				if lp.GetName() == "target" {
					extra = by[lp.GetValue()]
					break
				}
			}
			if len(extra) == 0 {
				continue
			}
			ls := slices.Clone(m.Label)
			for _, e := range extra {
				if !slices.ContainsFunc(m.Label, func(lp *dto.LabelPair) bool { return lp.GetName() == e.GetName() }) {
					ls = append(ls, e)
				}
			}
			slices.SortFunc(ls, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) })
			m.Label = ls
			changed = true
		}
		if changed {
			// The registry's order: fewer labels first, then by label values.
			slices.SortStableFunc(mf.Metric, func(a, b *dto.Metric) int {
				if len(a.Label) != len(b.Label) {
					return len(a.Label) - len(b.Label)
				}
				for i := range a.Label {
					if c := strings.Compare(a.Label[i].GetValue(), b.Label[i].GetValue()); c != 0 {
						return c
					}
				}
				return 0
			})
		}
	}
	return mfs, err
}
