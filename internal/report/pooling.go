package report

import (
	"bytes"
	"fmt"

	"github.com/llmprobe/llmprobe/prober/sweep"
)

// writePooling writes each step's embeddings or rerank figures: requests,
// inputs per request, inputs/s and prompt tokens/s, the E2E latency (the
// only latency a non-streamed request has) and the embeddings' dimension.
// It writes nothing when no step has any (docs/measurement.md,
// "Embeddings and rerank").
func writePooling(b *bytes.Buffer, res *sweep.Result) {
	have := false
	for _, st := range res.Steps {
		have = have || st.Stats.Pooling != nil
	}
	if !have {
		return
	}
	b.WriteString("### Embeddings and rerank\n\nNon-streamed requests: E2E is the only latency (no TTFT, TPOT or ITL), " +
		"the knee is judged on E2E. Inputs are an embeddings request's inputs or a rerank query's documents; " +
		"tokens from the usage's `prompt_tokens` (rerank: `total_tokens`). Latencies in ms.\n\n" +
		"| step | requests | inputs / req | inputs/s | prompt tokens/s | E2E p50 | E2E p99 | dimension |\n" +
		"|---|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, st := range res.Steps {
		p := st.Stats.Pooling
		if p == nil {
			p = &sweep.PoolingStats{}
		}
		per := "0"
		if p.Requests > 0 {
			per = num(float64(p.Inputs) / float64(p.Requests))
		}
		dim := "-"
		switch {
		case p.MaxDimension > 0 && p.MinDimension == p.MaxDimension:
			dim = fmt.Sprint(p.MaxDimension)
		case p.MaxDimension > 0:
			dim = fmt.Sprintf("%d-%d", p.MinDimension, p.MaxDimension)
		}
		fmt.Fprintf(b, "| %s | %d | %s | %s | %s | %s | %s | %s |\n", stepName(st), p.Requests, per,
			num(p.InputThroughput), num(p.InputTokenThroughput), p50(st.Stats.E2EL), p99(st.Stats.E2EL), dim)
	}
	b.WriteString("\n")
}
