package report

import (
	"bytes"
	"fmt"

	"github.com/llmprobe/llmprobe/prober/fingerprint"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// writeReasoning writes each step's reasoning and tool-call figures: how
// many requests thought and for how long, their reasoning and answer
// tokens, the answer TTFT beside the TTFT, and the tool calls. It writes
// nothing when no step has any (docs/measurement.md, "Reasoning").
func writeReasoning(b *bytes.Buffer, res *sweep.Result) {
	have := false
	for _, st := range res.Steps {
		have = have || st.Stats.Reasoning != nil
	}
	if !have {
		return
	}
	b.WriteString("### Reasoning and tool calls\n\nThe TTFT counts a reasoning model's first reasoning token (vLLM's rule); " +
		"the answer TTFT (SLO `ttfa`) is the time to the first token of the answer, after the thinking. Latencies in ms; " +
		"reasoning tokens from the usage's `reasoning_tokens` (or counted reasoning deltas, in the requests counted).\n\n" +
		"| step | reasoning requests | reasoning tokens / req | answer tokens / req | counted | TTFT p50 | first reasoning p50 | " +
		"thinking p50 | thinking p99 | answer TTFT p50 | answer TTFT p99 | tool-call requests | tool calls | first tool call p50 |\n" +
		"|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, st := range res.Steps {
		r := st.Stats.Reasoning
		if r == nil {
			r = &sweep.ReasoningStats{}
		}
		per := func(n int) string {
			if r.Requests == 0 {
				return fingerprint.NotRecorded
			}
			return num(float64(n) / float64(r.Requests))
		}
		fmt.Fprintf(b, "| %s | %d | %s | %s | %d | %s | %s | %s | %s | %s | %s | %d | %d | %s |\n", stepName(st),
			r.Requests, per(r.ReasoningTokens), per(r.AnswerTokens), r.CountedRequests,
			p50(st.Stats.TTFT), p50(r.TTFR), p50(r.ThinkingTime), p99(r.ThinkingTime), p50(st.Stats.TTFA), p99(st.Stats.TTFA),
			r.ToolCallRequests, r.ToolCalls, p50(r.FirstToolCall))
	}
	b.WriteString("\n")
}
