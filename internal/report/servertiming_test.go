package report

import (
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/prober/stats"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// TestAnalysisServerTiming: analysis.md splits each step's TTFT per request
// when the step carries the server's timing, says not-recorded with the
// reason for the steps that do not, and has no such section for a result
// without the figure.
func TestAnalysisServerTiming(t *testing.T) {
	res := ladder()
	if md := string(Analysis(res)); strings.Contains(md, "Where the TTFT went, per request") {
		t.Error("a result without server timing has its section")
	}
	lat := func(mean, p99 float64) sweep.Latency {
		return sweep.Latency{Summary: stats.Summary{N: 10, Mean: mean, P99: p99}}
	}
	res.Steps[0].Stats.ServerTiming = &sweep.ServerTimingStats{Requests: 10, Queue: lat(20, 45), ServerTTFT: lat(60, 80),
		Overhead: lat(20, 30), Generation: lat(300, 310), NegativeOverhead: 1}
	res.Steps[1].Stats.ServerTiming = &sweep.ServerTimingStats{NotRecorded: "engine sglang returns no per-request timing"}
	md := string(Analysis(res))
	for _, want := range []string{
		"### Where the TTFT went, per request\n",
		"| " + stepName(res.Steps[0]) + " | 10 | 20 / 45 | 60 / 80 | 20 / 30 | 20% | 1 | 300 |\n",
		"| " + stepName(res.Steps[1]) + " | not-recorded |",
		"- step " + stepName(res.Steps[1]) + ": engine sglang returns no per-request timing\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("analysis.md lacks %q:\n%s", want, md[strings.Index(md, "### Where the TTFT went"):])
		}
	}
}
