package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/prober/compare"
)

// TestVerdictEnergy: the text and analysis.md print each side's joules per
// good output token with its interval and the change with its, after the
// figures; a side without a GPU source reads not-recorded with the reason,
// never 0; a verdict without energy (an older result.json) prints none.
func TestVerdictEnergy(t *testing.T) {
	p := func(v float64) *float64 { return &v }
	v := &compare.Verdict{Outcome: compare.OutcomePass, Figures: []compare.Figure{{Name: "cost", Level: "rate=4", Status: compare.StatusOK, Detail: "no significant difference"}},
		Energy: []compare.Energy{
			{Level: "rate=4", Conf: 0.95, Change: p(0.5), CILo: p(0.41), CIHi: p(0.62),
				Baseline:  compare.EnergySide{JoulesPerGoodOutputToken: p(0.2), CILo: p(0.19), CIHi: p(0.21), Rounds: []float64{0.2, 0.2}, Method: "counter"},
				Candidate: compare.EnergySide{JoulesPerGoodOutputToken: p(0.3), CILo: p(0.28), CIHi: p(0.32), Rounds: []float64{0.3, 0.3}, Method: "counter"}},
			{Level: "rate=8", Conf: 0.95, NotRecorded: "candidate: no GPU metrics source: give --candidate-gpu-metrics-url",
				Baseline:  compare.EnergySide{JoulesPerGoodOutputToken: p(0.25), CILo: p(0.24), CIHi: p(0.26)},
				Candidate: compare.EnergySide{NotRecorded: "no GPU metrics source: give --candidate-gpu-metrics-url"}},
		}}
	var b bytes.Buffer
	WriteVerdictText(&b, v, nil)
	text := b.String()
	checkText(t, "text", text, text, []string{
		"figures:\n  ok            cost         rate=4         no significant difference\n\nenergy (joules per good output token; reported, not judged):\n",
		"  rate=4         baseline 0.2 J/good tok (95 % interval 0.19 … 0.21); candidate 0.3 J/good tok (95 % interval 0.28 … 0.32); change +50.0 % (95 % interval +41.0 % … +62.0 %)\n",
		"  rate=8         baseline 0.25 J/good tok (95 % interval 0.24 … 0.26); candidate not-recorded (no GPU metrics source: give --candidate-gpu-metrics-url); change not-recorded: candidate: no GPU metrics source",
	}, nil)
	b.Reset()
	WriteVerdictMarkdown(&b, v, VerdictReport{})
	md := b.String()
	if !strings.Contains(md, "### Energy\n") || !strings.Contains(md, "| rate=4 | 0.2 J/good tok (95 % interval 0.19 … 0.21) | 0.3 J/good tok (95 % interval 0.28 … 0.32) | +50.0 % (95 % interval +41.0 % … +62.0 %) | 0.2, 0.2 / 0.3, 0.3 | counter / counter |") ||
		!strings.Contains(md, "| rate=8 | 0.25 J/good tok (95 % interval 0.24 … 0.26) | not-recorded (no GPU metrics source: give --candidate-gpu-metrics-url) |") {
		t.Errorf("analysis.md energy:\n%s", md)
	}
	v.Energy = nil
	b.Reset()
	WriteVerdictText(&b, v, nil)
	if strings.Contains(b.String(), "energy") {
		t.Errorf("a verdict without energy printed some:\n%s", b.String())
	}
}
