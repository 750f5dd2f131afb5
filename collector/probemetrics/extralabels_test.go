package probemetrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestTargetLabelsGatherer: a discovered target's labels are added to every
// metric carrying its target label, sorted among the others; a label the
// metric has already is kept; other targets' metrics and metrics without
// a target label are untouched; Set replaces the whole map. The
// exposition stays valid (it compares and lints).
func TestTargetLabelsGatherer(t *testing.T) {
	reg := prometheus.NewRegistry()
	reqs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "llmprobe_requests_total", Help: "Requests."}, []string{"target", "probe"})
	info := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "llmprobe_target_info", Help: "Info."}, []string{"target", "model"})
	other := prometheus.NewGauge(prometheus.GaugeOpts{Name: "llmprobe_other", Help: "No target label."})
	reg.MustRegister(reqs, info, other)
	reqs.WithLabelValues("pods:10.0.0.1:8000", "p").Add(3)
	reqs.WithLabelValues("static", "p").Add(1)
	info.WithLabelValues("pods:10.0.0.1:8000", "m").Set(1)
	tl := NewTargetLabels(reg)
	tl.Set(map[string]map[string]string{"pods:10.0.0.1:8000": {"zone": "z1", "pod": "vllm-0", "model": "from-discovery"}})
	want := `
# HELP llmprobe_other No target label.
# TYPE llmprobe_other gauge
llmprobe_other 0
# HELP llmprobe_requests_total Requests.
# TYPE llmprobe_requests_total counter
llmprobe_requests_total{model="from-discovery",pod="vllm-0",probe="p",target="pods:10.0.0.1:8000",zone="z1"} 3
llmprobe_requests_total{probe="p",target="static"} 1
# HELP llmprobe_target_info Info.
# TYPE llmprobe_target_info gauge
llmprobe_target_info{model="m",pod="vllm-0",target="pods:10.0.0.1:8000",zone="z1"} 1
`
	if err := testutil.GatherAndCompare(tl, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.GatherAndLint(tl); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
	// A second gather does not add the labels twice.
	if err := testutil.GatherAndCompare(tl, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	tl.Set(nil)
	if err := testutil.GatherAndCompare(tl, strings.NewReader(`
# HELP llmprobe_requests_total Requests.
# TYPE llmprobe_requests_total counter
llmprobe_requests_total{probe="p",target="pods:10.0.0.1:8000"} 3
llmprobe_requests_total{probe="p",target="static"} 1
`), "llmprobe_requests_total"); err != nil {
		t.Error(err)
	}
}
