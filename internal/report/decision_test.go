package report

import (
	"os"
	"strings"
	"testing"
)

func TestAnalysisDecision(t *testing.T) {
	res := ladder()
	md := string(Analysis(res))
	if !strings.Contains(md, "## Decision and SLO\n\n- Question: not-recorded (--decision)\n") ||
		!strings.Contains(md, "## Rollback condition\n\nnot-recorded: no --rollback-if was given.") {
		t.Errorf("a run without --decision and --rollback-if does not say so:\n%s", md[:min(len(md), 600)])
	}
	res.Metadata = map[string]string{MetaDecision: "ship TP=2 if goodput at 8 req/s rises", MetaRollbackIf: "goodput drops 5 %", "gpu": "h100"}
	res.SLO = map[string]float64{"tpot": 50, "ttft": 800}
	md = string(Analysis(res))
	want := "# llmprobe sweep: ladder\n\n## Decision and SLO\n\n- Question: ship TP=2 if goodput at 8 req/s rises\n" +
		"- SLO: `ttft:800 tpot:50` (ms; a step holds it when its p99s do)\n- Answer: knee "
	if !strings.HasPrefix(md, want) {
		t.Errorf("analysis.md does not open with %q:\n%s", want, md[:min(len(md), 600)])
	}
	if !strings.Contains(md, "## Rollback condition\n\nRoll back if: goodput drops 5 %\n") {
		t.Error("no rollback condition")
	}
}

// TestAnalysisTemplate checks that analysis.md has every section of
// docs/templates/experiment-report.md, in its order, and that the
// template file names the same sections.
func TestAnalysisTemplate(t *testing.T) {
	md := string(Analysis(ladder()))
	last := -1
	for _, s := range Sections {
		i := strings.Index(md, "\n## "+s+"\n")
		if i < 0 || i < last {
			t.Errorf("section %q at %d, after %d", s, i, last)
		}
		last = i
	}
	tpl := readTemplate(t)
	last = -1
	for _, s := range Sections {
		i := strings.Index(tpl, "\n## "+s+"\n")
		if i < 0 || i < last {
			t.Errorf("docs/templates/experiment-report.md: section %q at %d, after %d", s, i, last)
		}
		last = i
	}
	for _, w := range []string{KeepUpSentence, ScopeSentence, "### Token distributions"} {
		if !strings.Contains(md, w) {
			t.Errorf("analysis.md lacks %q", w)
		}
	}
}

func readTemplate(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../docs/templates/experiment-report.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
