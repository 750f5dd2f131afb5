package report

import (
	"strings"
	"testing"
)

func TestAnalysisDecision(t *testing.T) {
	res := ladder()
	if strings.Contains(string(Analysis(res)), "## Decision") {
		t.Error("a run without --decision has a Decision section")
	}
	res.Metadata = map[string]string{MetaDecision: "ship TP=2 if goodput at 8 req/s rises", "gpu": "h100"}
	res.SLO = map[string]float64{"tpot": 50, "ttft": 800}
	md := string(Analysis(res))
	want := "## Decision\n\n- Question: ship TP=2 if goodput at 8 req/s rises\n- Roll back if: not-recorded (--rollback-if)\n" +
		"- SLO: `ttft:800 tpot:50` (ms; a step holds it when its p99s do)\n\n## Verdict"
	if !strings.Contains(md, want) {
		t.Errorf("analysis.md lacks %q:\n%s", want, md[:min(len(md), 600)])
	}
	if i, j := strings.Index(md, "## Decision"), strings.Index(md, "## Verdict"); i < 0 || i > j {
		t.Error("the Decision section does not open the report")
	}
}
