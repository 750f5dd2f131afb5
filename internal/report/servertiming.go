package report

import (
	"bytes"
	"fmt"

	"github.com/llmprobe/llmprobe/prober/fingerprint"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// writeServerTiming writes "Where the TTFT went, per request": each step's
// split of its requests' TTFT by the server's own per-request timing
// (vLLM's metrics object): server queue, server TTFT (the prefill) and the
// rest (network, gateways, frontend), means and p99s in ms, with the
// not-recorded reason of steps without it. It writes nothing for a result
// that predates the figure.
func writeServerTiming(b *bytes.Buffer, res *sweep.Result) {
	have := false
	for _, st := range res.Steps {
		have = have || st.Stats.ServerTiming != nil
	}
	if !have {
		return
	}
	b.WriteString("### Where the TTFT went, per request\n\nEach successful streamed request's TTFT split by the " +
		"server's own timing of it (vLLM's per-request `metrics`, asked with `include_metrics`; " +
		"docs/measurement.md): the server queue (queued → scheduled), the server TTFT (scheduled → first token, the " +
		"prefill) and the overhead, the rest of the client's TTFT (network both ways, gateways, the server's HTTP " +
		"frontend and tokenization, the first event's flush). Means and p99s in ms over the requests that reported " +
		"both figures; the means add up to the client's mean TTFT of those requests. A negative overhead (the server's " +
		"figures exceed the client's TTFT) is kept in the figures and counted.\n\n")
	b.WriteString("| step | requests | server queue mean / p99 | server TTFT mean / p99 | overhead mean / p99 | overhead share | negative overheads | server generation mean |\n" +
		"|---|--:|--:|--:|--:|--:|--:|--:|\n")
	var reasons []string
	for _, st := range res.Steps {
		sv := st.Stats.ServerTiming
		if sv == nil || sv.Requests == 0 {
			r := "no reason given"
			if sv != nil && sv.NotRecorded != "" {
				r = sv.NotRecorded
			}
			reasons = append(reasons, fmt.Sprintf("step %s: %s", stepName(st), r))
			fmt.Fprintf(b, "| %s | %s | | | | | | |\n", stepName(st), fingerprint.NotRecorded)
			continue
		}
		share := fingerprint.NotRecorded
		if client := sv.Queue.Mean + sv.ServerTTFT.Mean + sv.Overhead.Mean; client > 0 {
			share = pct(sv.Overhead.Mean / client)
		}
		gen := fingerprint.NotRecorded
		if sv.Generation.N > 0 {
			gen = num(sv.Generation.Mean)
		}
		fmt.Fprintf(b, "| %s | %d | %s / %s | %s / %s | %s / %s | %s | %d | %s |\n", stepName(st), sv.Requests,
			num(sv.Queue.Mean), num(sv.Queue.P99), num(sv.ServerTTFT.Mean), num(sv.ServerTTFT.P99),
			num(sv.Overhead.Mean), num(sv.Overhead.P99), share, sv.NegativeOverhead, gen)
	}
	b.WriteString("\n")
	for _, r := range reasons {
		fmt.Fprintf(b, "- %s\n", mdCell(r))
	}
	if len(reasons) > 0 {
		b.WriteString("\n")
	}
}
