package report

import (
	"bytes"
	"fmt"

	"github.com/llmprobe/llmprobe/prober/sweep"
)

// writeAnswers writes the "Answer checks" subsection of Results when the
// sweep sent its check set (sweep --answer-checks): the pass ratio over the
// judged checks, the counts, and each check that did not pass with its
// reply (redacted and bounded by the sweep; quoted at most
// compare.MaxQualityReplyBytes) and why. It writes nothing otherwise.
func writeAnswers(b *bytes.Buffer, res *sweep.Result) {
	a := res.Answers
	if a == nil {
		return
	}
	ratio := "no check judged (every one an error)"
	if a.PassRatio != nil {
		ratio = pct(*a.PassRatio)
	}
	fmt.Fprintf(b, "### Answer checks\n\nThe check set `%s` was sent once after the last step, each check through the "+
		"sweep's request path; no step's figures count them. Pass ratio: **%s** (%d passed, %d failed of the judged; %d "+
		"errors, not judged; %d sent).\n\n", mdCell(a.Set), ratio, a.Pass, a.Fail, a.Error, a.Checks)
	failing := a.Failing()
	if len(failing) == 0 {
		b.WriteString("Every check passed.\n\n")
		return
	}
	b.WriteString("| check | kind | outcome | reply | why | request id |\n|---|---|---|---|---|---|\n")
	for _, r := range failing {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", mdCell(r.Check), r.Kind, r.Outcome, mdCell(replyText(r)),
			cell(r.Reason), mdCell(r.RequestID))
	}
	b.WriteString("\n")
}
