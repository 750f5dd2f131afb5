package report

import (
	"bytes"
	"fmt"

	"github.com/llmprobe/llmprobe/prober/fingerprint"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// writeSpecDecode writes each step's per-request speculative decoding
// figures (llama-server's timings.draft_n and draft_n_accepted): the
// requests that carried them, the tokens drafted and accepted, and the
// acceptance rate. It writes nothing when no step has them.
func writeSpecDecode(b *bytes.Buffer, res *sweep.Result) {
	have := false
	for _, st := range res.Steps {
		have = have || st.Stats.SpecDecode != nil
	}
	if !have {
		return
	}
	b.WriteString("### Speculative decoding\n\nDraft tokens proposed and accepted, summed over the successful requests " +
		"whose responses carried them (llama.cpp's `timings.draft_n` and `timings.draft_n_accepted`); the acceptance " +
		"rate is accepted / drafted.\n\n" +
		"| step | requests with figures | drafted | accepted | acceptance rate |\n" +
		"|---|--:|--:|--:|--:|\n")
	for _, st := range res.Steps {
		sd := st.Stats.SpecDecode
		if sd == nil {
			fmt.Fprintf(b, "| %s | 0 | %s | %s | %s |\n", stepName(st), fingerprint.NotRecorded, fingerprint.NotRecorded, fingerprint.NotRecorded)
			continue
		}
		fmt.Fprintf(b, "| %s | %d | %d | %d | %s |\n", stepName(st), sd.Requests, sd.Drafted, sd.Accepted, pct(sd.AcceptanceRate))
	}
	b.WriteString("\n")
}
