package report

import (
	"bytes"
	"fmt"

	"github.com/llmprobe/llmprobe/prober/sweep"
)

// costSentence explains the cost figure in one sentence.
const costSentence = "The cost per million good output tokens is price / (good output tokens/s × 3600) × 1e6, where good " +
	"output tokens/s counts only the output tokens of requests that met every SLO (per second of the step's duration, " +
	"as vLLM's output_throughput): SLO misses make the tokens that count dearer."

// costText formats a cost in USD per million good output tokens, or says
// why there is none.
func costText(c float64, ok bool) string {
	if !ok {
		return "none (no good output token)"
	}
	return num(c)
}

// writeCost writes the "Cost" subsection of Results when the run has a
// price (--cost-per-hour): each step's good output tokens per second and
// cost, and the cost at the knee.
func writeCost(b *bytes.Buffer, res *sweep.Result) {
	if !(res.CostPerHour > 0) {
		return
	}
	fmt.Fprintf(b, "### Cost\n\nPrice: **%s USD per hour** (--cost-per-hour). %s\n\n", num(res.CostPerHour), costSentence)
	if len(res.Steps) == 0 {
		return
	}
	b.WriteString("| step | level | good output tok/s | output tok/s | USD per million good output tokens | valid |\n|---|--:|--:|--:|--:|---|\n")
	for _, st := range res.Steps {
		c, ok := res.StepCost(st)
		valid := "yes"
		if !st.InKnee() {
			valid = "**no**"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", stepName(st), num(st.Level), num(st.Stats.GoodOutputThroughput),
			num(st.Stats.OutputThroughput), costText(c, ok), valid)
	}
	b.WriteString("\n")
	if c, ok := res.KneeCost(); ok {
		g, _ := res.KneeGoodOutputThroughput()
		fmt.Fprintf(b, "At the knee (%s): **%s USD per million good output tokens** (%s good output tokens/s).\n\n",
			levelText(res, res.Knee.Level), num(c), num(g))
	} else if res.Knee.Found {
		fmt.Fprintf(b, "At the knee (%s): no good output token, so no finite cost.\n\n", levelText(res, res.Knee.Level))
	}
}

// costLines are the terminal table's cost lines (none without a price).
func costLines(res *sweep.Result) []string {
	if !(res.CostPerHour > 0) {
		return nil
	}
	line := fmt.Sprintf("cost at %s USD/h:", num(res.CostPerHour))
	if c, ok := res.KneeCost(); ok {
		return []string{fmt.Sprintf("%s %s USD per million good output tokens at the knee (%s); per step in analysis.md",
			line, num(c), levelText(res, res.Knee.Level))}
	}
	best, bestOK := 0.0, false
	for _, st := range res.Steps {
		if c, ok := res.StepCost(st); ok && st.InKnee() && (!bestOK || c < best) {
			best, bestOK = c, true
		}
	}
	if !bestOK {
		return []string{line + " no valid step produced a good output token"}
	}
	return []string{fmt.Sprintf("%s no knee; lowest over valid steps %s USD per million good output tokens; per step in analysis.md", line, num(best))}
}
