package report

import (
	"bytes"
	"fmt"

	"github.com/llmprobe/llmprobe/prober/fingerprint"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// writeSpecDecode writes each step's speculative decoding figures: per
// request (llama-server's timings.draft_n and draft_n_accepted: the
// requests that carried them, the tokens drafted and accepted, and the
// acceptance rate) and from the server's counters (the step's
// server.speculative_decoding). It writes nothing when no step has either.
func writeSpecDecode(b *bytes.Buffer, res *sweep.Result) {
	have := false
	for _, st := range res.Steps {
		have = have || st.Stats.SpecDecode != nil || st.Server.SpecDecode != nil
	}
	if !have {
		return
	}
	nr := fingerprint.NotRecorded
	b.WriteString("### Speculative decoding\n\nDraft tokens proposed and accepted, summed over the successful requests " +
		"whose responses carried them (llama.cpp's `timings.draft_n` and `timings.draft_n_accepted`), and the deltas of " +
		"the server's counters over the step (all its traffic: llama.cpp's `llamacpp:spec_decode_num_draft_tokens_total` / " +
		"`_accepted_tokens_total`, vLLM's `vllm:spec_decode_*`); the acceptance rate is accepted / drafted.\n\n" +
		"| step | requests with figures | drafted | accepted | acceptance rate | server drafted | server accepted | server acceptance rate |\n" +
		"|---|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, st := range res.Steps {
		req := fmt.Sprintf("0 | %s | %s | %s", nr, nr, nr)
		if sd := st.Stats.SpecDecode; sd != nil {
			req = fmt.Sprintf("%d | %d | %d | %s", sd.Requests, sd.Drafted, sd.Accepted, pct(sd.AcceptanceRate))
		}
		srv := fmt.Sprintf("%s | %s | %s", nr, nr, nr)
		if sd := st.Server.SpecDecode; sd != nil {
			srv = fmt.Sprintf("%.0f | %.0f | %s", sd.DraftTokens, sd.AcceptedTokens, pct(sd.AcceptanceRate))
		}
		fmt.Fprintf(b, "| %s | %s | %s |\n", stepName(st), req, srv)
	}
	b.WriteString("\n")
}
