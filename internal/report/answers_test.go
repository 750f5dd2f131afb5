package report

import (
	"strings"
	"testing"

	checks "github.com/llmprobe/llmprobe/prober/answer"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// TestAnalysisAnswers: analysis.md has an "Answer checks" section when the
// sweep sent its checks: the pass ratio over the judged ones, and each
// check that did not pass with its reply (escaped for the table, cut) and
// why; none without them.
func TestAnalysisAnswers(t *testing.T) {
	res := ladder()
	if md := string(Analysis(res)); strings.Contains(md, "Answer checks") {
		t.Error("a run without answer checks has their section")
	}
	set := &checks.Set{Name: "builtin"}
	long := strings.Repeat("x", 300)
	res.Answers = sweep.NewAnswers(set, []checks.Result{
		{Check: "add-small", Kind: checks.KindNumber, Outcome: checks.Pass, Reply: "42", RequestID: "llmprobe-r-check-1"},
		{Check: "copy-token", Kind: checks.KindExact, Outcome: checks.Fail, Reply: "a | b\nc", Reason: `reply "a | b" is not "llmprobe-canary-7f3a"`, RequestID: "llmprobe-r-check-2"},
		{Check: "capital", Kind: checks.KindContains, Outcome: checks.Fail, Reply: long, Reason: "no Paris", RequestID: "llmprobe-r-check-3"},
		{Check: "prime", Kind: checks.KindRegex, Outcome: checks.Error, Reason: "timeout: deadline exceeded", RequestID: "llmprobe-r-check-4"},
	})
	md := string(Analysis(res))
	checkText(t, "analysis.md", md, md, []string{
		"### Answer checks\n",
		"Pass ratio: **33.3%** (1 passed, 2 failed of the judged; 1 errors, not judged; 4 sent)",
		`| copy-token | exact | fail | "a \| b\nc" | reply "a \| b" is not "llmprobe-canary-7f3a" | llmprobe-r-check-2 |`,
		`| capital | contains | fail | "` + strings.Repeat("x", 200) + `…" | no Paris | llmprobe-r-check-3 |`,
		"| prime | regex | error | \"\" | timeout: deadline exceeded | llmprobe-r-check-4 |",
	}, nil)
	if strings.Contains(md, "| add-small |") {
		t.Error("analysis.md lists a passing check")
	}
	res.Answers = sweep.NewAnswers(set, []checks.Result{{Check: "a", Kind: checks.KindNumber, Outcome: checks.Pass}})
	if md := string(Analysis(res)); !strings.Contains(md, "Pass ratio: **100%**") || !strings.Contains(md, "Every check passed.") {
		t.Errorf("all passing:\n%s", md)
	}
	res.Answers = sweep.NewAnswers(set, []checks.Result{{Check: "a", Kind: checks.KindNumber, Outcome: checks.Error, Reason: "connect"}})
	if md := string(Analysis(res)); !strings.Contains(md, "Pass ratio: **no check judged (every one an error)**") {
		t.Errorf("none judged:\n%s", md)
	}
}
