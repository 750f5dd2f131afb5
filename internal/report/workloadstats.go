package report

import (
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/llmprobe/llmprobe/prober/workload"
)

// WriteDatasetStats writes `llmprobe workload stats` of a dataset as text:
// the file, its entries used and left out, how its tokens were counted,
// then the length table, prefix share and arrivals (WriteStatsTable).
func WriteDatasetStats(w io.Writer, st workload.Stats, info workload.DatasetInfo) {
	how := map[string]string{
		workload.MethodServerTokenize: "the server's tokenizer (POST /tokenize)",
		workload.MethodCalibrated:     "an estimate calibrated from the server's usage.prompt_tokens (no usable /tokenize)",
		workload.MethodEstimate:       "the offline estimate: 4 characters per token, rounded up (give --target for the server's tokenizer)",
	}[st.Tokenizer]
	if how == "" {
		how = st.Tokenizer
	}
	fmt.Fprintf(w, "dataset: %s (%s, sha256 %s)\n", info.Path, info.Format, info.SHA256)
	fmt.Fprintf(w, "entries: %d used of %d", info.Used, info.Entries)
	if info.Skipped > 0 {
		fmt.Fprintf(w, ", %d left out (no human turn and reply)", info.Skipped)
	}
	for _, k := range slices.Sorted(maps.Keys(info.Pruned)) {
		fmt.Fprintf(w, ", %d pruned (%s)", info.Pruned[k], k)
	}
	fmt.Fprintf(w, "\ntokens counted with: %s\n\n", how)
	WriteStatsTable(w, st)
}

// WriteTraceStats writes `llmprobe workload stats` of a trace as text: the
// file, its entries (and how many were sorted into offset order), its hash
// ids, then WriteStatsTable.
func WriteTraceStats(w io.Writer, tr *workload.Trace, st workload.Stats) {
	fmt.Fprintf(w, "trace: %s (%s, %s)\n", tr.Path, tr.Format, tr.SHA256)
	fmt.Fprintf(w, "entries: %d", len(tr.Entries))
	if tr.Reordered > 0 {
		fmt.Fprintf(w, ", %d sorted into offset order", tr.Reordered)
	}
	fmt.Fprintf(w, "\ntokens: as the trace records them (no tokenizer); hash ids: %d, %d tokens each\n\n", tr.HashIDs, tr.BlockSize)
	WriteStatsTable(w, st)
}

// WriteStatsTable writes the length table (n, min, p10 … p99, max of the
// input and output tokens), the prefix share and the arrivals of st.
func WriteStatsTable(w io.Writer, st workload.Stats) {
	fmt.Fprintf(w, "%-14s %8s %8s %8s %8s %8s %8s %10s\n", "", "n", "min", "p10", "p50", "p90", "p99", "max")
	row := func(name string, d workload.LengthDist) {
		if d.N == 0 {
			fmt.Fprintf(w, "%-14s %8s\n", name, "-")
			return
		}
		fmt.Fprintf(w, "%-14s %8d %8.0f %8.1f %8.1f %8.1f %8.1f %10.0f\n", name, d.N, d.Min, d.P10, d.P50, d.P90, d.P99, d.Max)
	}
	row("input tokens", st.InputTokens)
	row("output tokens", st.OutputTokens)
	fmt.Fprintf(w, "\nprefix share: %.3f of prompt tokens are a prefix shared with an earlier request\n", st.PrefixShare)
	if st.Timed {
		fmt.Fprintf(w, "arrivals: %.4g req/s over %.4g s, burstiness (CV² of gaps) %.3g (1 = Poisson)\n", st.RatePerS, st.DurationS, st.GapCV2)
	} else {
		fmt.Fprintln(w, "arrivals: not timed (no offset_ms)")
	}
}
