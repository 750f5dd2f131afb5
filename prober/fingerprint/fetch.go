package fingerprint

import (
	"bufio"
	"bytes"
	"sort"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// CacheConfigMetric is vLLM's info-style gauge whose labels describe the
// engine's cache configuration.
const CacheConfigMetric = "vllm:cache_config_info"

// EngineConfig returns the labels of vllm:cache_config_info from a /metrics
// exposition in the Prometheus text format, or nil (encoded "not-recorded")
// when the metric is absent or cannot be parsed. With several engines (data
// parallel) the series of the lowest "engine" label is taken. Only the
// metric's own lines are parsed, so unrelated lines the parser rejects do
// not matter.
func EngineConfig(metrics []byte) Labels {
	var lines bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(metrics))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, CacheConfigMetric+"{") || strings.HasPrefix(l, CacheConfigMetric+" ") {
			lines.WriteString(l)
			lines.WriteByte('\n')
		}
	}
	if lines.Len() == 0 {
		return nil
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(&lines)
	if err != nil {
		return nil
	}
	fam, ok := fams[CacheConfigMetric]
	if !ok || len(fam.GetMetric()) == 0 {
		return nil
	}
	all := make([]Labels, 0, len(fam.GetMetric()))
	for _, m := range fam.GetMetric() {
		l := Labels{}
		for _, lp := range m.GetLabel() {
			l[lp.GetName()] = lp.GetValue()
		}
		all = append(all, l)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i]["engine"] < all[j]["engine"] })
	return all[0]
}
