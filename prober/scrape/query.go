package scrape

import (
	"math"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
)

// vLLM V1 metric names the package reads itself.
const (
	MetricNumRequestsRunning = "vllm:num_requests_running"
	MetricNumRequestsWaiting = "vllm:num_requests_waiting"
	MetricKVCacheUsage       = "vllm:kv_cache_usage_perc"
	MetricCacheConfigInfo    = "vllm:cache_config_info"
)

// family returns the family called name. Counters are found with or
// without their _total suffix (the text format keeps it in the family
// name, OpenMetrics drops it).
func (s *Snapshot) family(name string) *dto.MetricFamily {
	if s == nil {
		return nil
	}
	if mf := s.Families[name]; mf != nil && len(mf.GetMetric()) > 0 {
		return mf
	}
	alt := name + "_total"
	if base, ok := strings.CutSuffix(name, "_total"); ok {
		alt = base
	}
	if mf := s.Families[alt]; mf != nil && mf.GetType() == dto.MetricType_COUNTER && len(mf.GetMetric()) > 0 {
		return mf
	}
	return nil
}

// Has reports whether the snapshot has a family called name with at least
// one series: any family by its name, a counter with or without _total, or
// <histogram>_count / <histogram>_sum.
func (s *Snapshot) Has(name string) bool {
	if s.family(name) != nil {
		return true
	}
	_, ok := s.series(name, nil)
	return ok
}

// Sum returns the sum of the values of the series of name whose labels
// match (every key equals the label value; an empty value matches an
// absent label; nil matches all). name is a counter, gauge or untyped
// family (a counter with or without _total), or <histogram>_count /
// <histogram>_sum (also for summaries). ok is false when the family is
// absent or no series matches.
func (s *Snapshot) Sum(name string, match map[string]string) (float64, bool) {
	ss, ok := s.series(name, match)
	if !ok {
		return 0, false
	}
	var sum float64
	for _, x := range ss {
		sum += x.value
	}
	return sum, true
}

// Max returns the largest value among the matching series of name (same
// rules as Sum), e.g. the fullest engine's vllm:kv_cache_usage_perc.
func (s *Snapshot) Max(name string, match map[string]string) (float64, bool) {
	ss, ok := s.series(name, match)
	if !ok {
		return 0, false
	}
	m := math.Inf(-1)
	for _, x := range ss {
		m = max(m, x.value)
	}
	return m, true
}

// InfoLabels returns the labels of an info-style series (value 1, the data
// is in the labels), e.g. vllm:cache_config_info. With several series (one
// per engine) the one with the lexically smallest label set is returned.
func InfoLabels(s *Snapshot, name string) (map[string]string, bool) {
	ss, ok := s.series(name, nil)
	if !ok {
		return nil, false
	}
	sort.Slice(ss, func(i, j int) bool { return ss[i].key < ss[j].key })
	return labelMap(ss[0].m), true
}

// Idle reports whether the server has no request running or waiting:
// vllm:num_requests_running + vllm:num_requests_waiting == 0, summed over
// all engines and models. known is false when either metric is absent (not
// a vLLM server, or s is nil), in which case idle is false.
func Idle(s *Snapshot) (idle bool, known bool) {
	running, ok1 := s.Sum(MetricNumRequestsRunning, nil)
	waiting, ok2 := s.Sum(MetricNumRequestsWaiting, nil)
	if !ok1 || !ok2 {
		return false, false
	}
	return running+waiting == 0, true
}

// sample is one matching series of a scalar lookup.
type sample struct {
	key     string // label signature, stable across snapshots
	m       *dto.Metric
	value   float64
	created float64 // created timestamp in seconds, 0 when unknown
}

// series resolves name to scalar samples: counter/gauge/untyped values, or
// _count/_sum of histograms and summaries.
func (s *Snapshot) series(name string, match map[string]string) ([]sample, bool) {
	if mf := s.family(name); mf != nil {
		var get func(*dto.Metric) (float64, bool)
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			get = func(m *dto.Metric) (float64, bool) { return m.GetCounter().GetValue(), m.Counter != nil }
		case dto.MetricType_GAUGE:
			get = func(m *dto.Metric) (float64, bool) { return m.GetGauge().GetValue(), m.Gauge != nil }
		case dto.MetricType_UNTYPED:
			get = func(m *dto.Metric) (float64, bool) { return m.GetUntyped().GetValue(), m.Untyped != nil }
		default:
			return nil, false
		}
		return s.collect(mf, match, get, createdFamily(mf))
	}
	for _, suffix := range []string{"_count", "_sum"} {
		base, ok := strings.CutSuffix(name, suffix)
		if !ok {
			continue
		}
		mf := s.family(base)
		if mf == nil {
			return nil, false
		}
		var get func(*dto.Metric) (float64, bool)
		switch mf.GetType() {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			get = func(m *dto.Metric) (float64, bool) {
				h := m.GetHistogram()
				if h == nil {
					return 0, false
				}
				if suffix == "_sum" {
					return h.GetSampleSum(), true
				}
				return histCount(h), true
			}
		case dto.MetricType_SUMMARY:
			get = func(m *dto.Metric) (float64, bool) {
				sm := m.GetSummary()
				if suffix == "_sum" {
					return sm.GetSampleSum(), sm != nil
				}
				return float64(sm.GetSampleCount()), sm != nil
			}
		default:
			return nil, false
		}
		return s.collect(mf, match, get, createdFamily(mf))
	}
	return nil, false
}

func (s *Snapshot) collect(mf *dto.MetricFamily, match map[string]string,
	get func(*dto.Metric) (float64, bool), createdName string) ([]sample, bool) {
	var out []sample
	var created map[string]float64
	for _, m := range mf.GetMetric() {
		if !matches(m, match) {
			continue
		}
		v, ok := get(m)
		if !ok {
			continue
		}
		x := sample{key: signature(m), m: m, value: v, created: createdTimestamp(m)}
		if x.created == 0 && createdName != "" {
			if created == nil {
				created = s.createdByKey(createdName)
			}
			x.created = created[x.key]
		}
		out = append(out, x)
	}
	return out, len(out) > 0
}

// createdFamily names the family that holds the _created series of mf in
// the text format (Python's prometheus_client writes them as separate
// gauges), or "" for types without one.
func createdFamily(mf *dto.MetricFamily) string {
	switch mf.GetType() {
	case dto.MetricType_COUNTER:
		base, _ := strings.CutSuffix(mf.GetName(), "_total")
		return base + "_created"
	case dto.MetricType_HISTOGRAM, dto.MetricType_SUMMARY:
		return mf.GetName() + "_created"
	}
	return ""
}

func (s *Snapshot) createdByKey(name string) map[string]float64 {
	mf := s.Families[name]
	if mf == nil {
		return nil
	}
	out := make(map[string]float64, len(mf.GetMetric()))
	for _, m := range mf.GetMetric() {
		var v float64
		switch {
		case m.Gauge != nil:
			v = m.GetGauge().GetValue()
		case m.Untyped != nil:
			v = m.GetUntyped().GetValue()
		default:
			continue
		}
		out[signature(m)] = v
	}
	return out
}

// createdTimestamp is the created timestamp carried in the metric itself
// (OpenMetrics and protobuf parsers set it), in seconds, or 0.
func createdTimestamp(m *dto.Metric) float64 {
	var ts interface {
		GetSeconds() int64
		GetNanos() int32
	}
	switch {
	case m.GetCounter().GetCreatedTimestamp() != nil:
		ts = m.GetCounter().GetCreatedTimestamp()
	case m.GetHistogram().GetCreatedTimestamp() != nil:
		ts = m.GetHistogram().GetCreatedTimestamp()
	case m.GetSummary().GetCreatedTimestamp() != nil:
		ts = m.GetSummary().GetCreatedTimestamp()
	default:
		return 0
	}
	return float64(ts.GetSeconds()) + float64(ts.GetNanos())/1e9
}

func matches(m *dto.Metric, match map[string]string) bool {
	for k, want := range match {
		got := ""
		for _, lp := range m.GetLabel() {
			if lp.GetName() == k {
				got = lp.GetValue()
				break
			}
		}
		if got != want {
			return false
		}
	}
	return true
}

// signature is a canonical string of a series' labels (sorted, empty values
// dropped, as Prometheus treats them).
func signature(m *dto.Metric) string {
	ls := make([]*dto.LabelPair, 0, len(m.GetLabel()))
	for _, lp := range m.GetLabel() {
		if lp.GetValue() != "" {
			ls = append(ls, lp)
		}
	}
	sort.Slice(ls, func(i, j int) bool { return ls[i].GetName() < ls[j].GetName() })
	var b strings.Builder
	for _, lp := range ls {
		b.WriteString(lp.GetName())
		b.WriteByte(0xff)
		b.WriteString(lp.GetValue())
		b.WriteByte(0xff)
	}
	return b.String()
}

func labelMap(m *dto.Metric) map[string]string {
	out := make(map[string]string, len(m.GetLabel()))
	for _, lp := range m.GetLabel() {
		out[lp.GetName()] = lp.GetValue()
	}
	return out
}

func histCount(h *dto.Histogram) float64 {
	if h.SampleCountFloat != nil {
		return h.GetSampleCountFloat()
	}
	return float64(h.GetSampleCount())
}
