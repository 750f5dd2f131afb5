package probemetrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/slo"
)

// TestBackendRequests: records of a target with attribution_headers count
// by backend and outcome; records without a backend add no series; the
// series go with their probe.
func TestBackendRequests(t *testing.T) {
	reg, m := newMetrics()
	observeAll(m, slo.Verdict{}, []prober.Record{
		{Target: "gw", Probe: "p", Backend: "pod-a"},
		{Target: "gw", Probe: "p", Backend: "pod-a"},
		{Target: "gw", Probe: "p", Backend: prober.BackendNone, Error: prober.ClassHTTP5xx},
		{Target: "gw", Probe: "p", Backend: prober.AttributionOther},
		{Target: "plain", Probe: "p"},
	})
	want := `
# HELP llmprobe_backend_requests_total Requests sent and finished of targets with attribution_headers, by outcome and by backend: the value of the first attribution header the response carried ("none" when it carried none; past the per-target bound of distinct values, "other").
# TYPE llmprobe_backend_requests_total counter
llmprobe_backend_requests_total{backend="none",outcome="http_5xx",probe="p",target="gw"} 1
llmprobe_backend_requests_total{backend="other",outcome="success",probe="p",target="gw"} 1
llmprobe_backend_requests_total{backend="pod-a",outcome="success",probe="p",target="gw"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), NameBackendRequests); err != nil {
		t.Fatal(err)
	}
	m.DeleteProbe("gw", "p")
	if n := testutil.CollectAndCount(m.backends); n != 0 {
		t.Errorf("%d backend series left after DeleteProbe", n)
	}
}
