package report

import (
	"fmt"
	"io"

	"github.com/llmprobe/llmprobe/prober/compare"
)

// Where each side's TTFT went (compare.ServerTiming): per level and side,
// the server's queue time, the server's TTFT and the client-side overhead
// over the requests whose responses carried the server's own timing.

// cmpServerTimingSentence explains the TTFT split of a comparison.
const cmpServerTimingSentence = "Per request, the client's TTFT = the server's queue time + the server's TTFT (scheduled to the first " +
	"token: the prefill) + the overhead (network, gateways, the HTTP frontend, the first event's flush), from the server's own " +
	"per-request timing (vLLM's `metrics` object with `--enable-per-request-metrics`; docs/measurement.md). Medians and p99 in ms " +
	"over the n requests that carried it, pooled over a side's rounds; the quantiles of the parts need not add up. Reported, not " +
	"judged: a TTFT regression whose growth sits in the queue is load, in the server TTFT the engine, in the overhead the client " +
	"or network."

// splitText is one side's split ("queue 1.2/4.0, server TTFT 30/41,
// overhead 0.8/1.9 ms p50/p99 (n 200)"), or not-recorded with the reason.
func splitText(s compare.ServerTimingSide) string {
	if s.N == 0 {
		return "not-recorded (" + s.NotRecorded + ")"
	}
	part := func(p *compare.SplitPart) string { return compare.Num(p.P50) + "/" + compare.Num(p.P99) }
	t := fmt.Sprintf("TTFT %s = queue %s + server TTFT %s + overhead %s ms p50/p99 (n %d)",
		part(s.ClientTTFT), part(s.Queue), part(s.ServerTTFT), part(s.Overhead), s.N)
	if s.NegativeOverhead > 0 {
		t += fmt.Sprintf(", %d with a negative overhead", s.NegativeOverhead)
	}
	return t
}

// writeServerTimingText writes the TTFT split lines of a verdict's text
// (none for a verdict without them).
func writeServerTimingText(w io.Writer, ss []compare.ServerTiming) {
	if len(ss) == 0 {
		return
	}
	fmt.Fprintln(w, "\nwhere the TTFT went (server queue, server TTFT, client overhead; reported, not judged):")
	for _, s := range ss {
		fmt.Fprintf(w, "  %-14s baseline  %s\n  %-14s candidate %s\n", s.Level, splitText(s.Baseline), "", splitText(s.Candidate))
	}
}

// writeServerTimingMarkdown writes the "Where the TTFT went" subsection of
// a verdict's Results (none for a verdict without it).
func writeServerTimingMarkdown(w io.Writer, ss []compare.ServerTiming) {
	if len(ss) == 0 {
		return
	}
	fmt.Fprintf(w, "### Where the TTFT went\n\n%s\n\n", cmpServerTimingSentence)
	fmt.Fprintln(w, "| level | side | n | client TTFT p50 / p99 | server queue p50 / p99 | server TTFT p50 / p99 | overhead p50 / p99 |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, s := range ss {
		for _, side := range []struct {
			name string
			s    compare.ServerTimingSide
		}{{compare.SideBaseline, s.Baseline}, {compare.SideCandidate, s.Candidate}} {
			if side.s.N == 0 {
				fmt.Fprintf(w, "| %s | %s | 0 | not-recorded: %s | | | |\n", s.Level, side.name, cell(side.s.NotRecorded))
				continue
			}
			part := func(p *compare.SplitPart) string { return compare.Num(p.P50) + " / " + compare.Num(p.P99) }
			fmt.Fprintf(w, "| %s | %s | %d | %s | %s | %s | %s |\n", s.Level, side.name, side.s.N, part(side.s.ClientTTFT),
				part(side.s.Queue), part(side.s.ServerTTFT), part(side.s.Overhead))
		}
	}
	fmt.Fprintln(w)
}
