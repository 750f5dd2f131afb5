package report

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/llmprobe/llmprobe/prober/sweep"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// writeDatasetNote says where a dataset run's first row comes from: the
// dataset's entries as measured at preflight, beside the steps' rows (the
// server's usage.prompt_tokens and completion_tokens).
func writeDatasetNote(b *bytes.Buffer, res *sweep.Result) {
	ds := res.Dataset
	if ds == nil {
		return
	}
	how := "the server's tokenizer (POST /tokenize)"
	if ds.Method == workload.MethodCalibrated {
		how = "an estimate calibrated from the server's usage.prompt_tokens (the server has no usable /tokenize)"
	}
	fmt.Fprintf(b, " The dataset row is %s (%s, sha256 %s, %s sampling): its %d usable entries counted with %s",
		ds.Path, ds.Format, shortSHA(ds.SHA256), ds.Sampling, ds.Used, how)
	if ds.Sampled > 0 && ds.Sampled < ds.Entries {
		fmt.Fprintf(b, ", of a subset of %d of the file's %d entries chosen before measuring (max_entries %d)",
			ds.Sampled, ds.Entries, ds.MaxEntries)
	}
	if ds.OutputFromWorkload {
		b.WriteString("; the output length is the workload's (--output-len), not the entries'")
	}
	if len(ds.Pruned) > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(ds.Pruned)) {
			parts = append(parts, fmt.Sprintf("%s %d", k, ds.Pruned[k]))
		}
		fmt.Fprintf(b, "; vLLM's ShareGPT length rules pruned %s of those measured", strings.Join(parts, ", "))
	}
	b.WriteString(". The step rows are what the server reported for the requests sent.")
}

func lengthDist(d workload.LengthDist) string {
	if d.N == 0 {
		if d.Max > 0 {
			return fmt.Sprintf("%s to %s", num(d.Min), num(d.Max))
		}
		return "-"
	}
	return fmt.Sprintf("%s / %s / %s / %s / %s", num(d.P10), num(d.P50), num(d.P90), num(d.P99), num(d.Max))
}

func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
