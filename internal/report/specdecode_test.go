package report

import (
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/prober/sweep"
)

// TestAnalysisSpecDecode: analysis.md has a speculative decoding table when
// a step carries the figures, per request and from the server's counters
// (not-recorded for the steps that do not), and
// none when no step does.
func TestAnalysisSpecDecode(t *testing.T) {
	res := ladder()
	if md := string(Analysis(res)); strings.Contains(md, "### Speculative decoding") {
		t.Error("a run without speculative decoding figures has their table")
	}
	res.Steps[0].Stats.SpecDecode = &sweep.SpecDecodeStats{Requests: 10, Drafted: 680, Accepted: 470, AcceptanceRate: 470.0 / 680}
	res.Steps[0].Server.SpecDecode = &sweep.ServerSpecDecodeStats{DraftTokens: 700, AcceptedTokens: 480, AcceptanceRate: 480.0 / 700}
	md := string(Analysis(res))
	checkText(t, "analysis.md", md, md, []string{
		"### Speculative decoding\n",
		"| " + stepName(res.Steps[0]) + " | 10 | 680 | 470 | 69.1% | 700 | 480 | 68.6% |\n",
		"| " + stepName(res.Steps[1]) + " | 0 | not-recorded | not-recorded | not-recorded | not-recorded | not-recorded | not-recorded |\n",
	}, nil)
}
