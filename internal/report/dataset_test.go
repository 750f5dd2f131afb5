package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/prober/sweep"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// TestDatasetNoteSubset: the note names the subset when fewer entries were
// measured than the file holds, and the pruning as within them; a file
// measured whole is described as before.
func TestDatasetNoteSubset(t *testing.T) {
	f := func(ds workload.DatasetInfo, want, notWant string) {
		t.Helper()
		var b bytes.Buffer
		writeDatasetNote(&b, &sweep.Result{Dataset: &ds})
		if !strings.Contains(b.String(), want) || notWant != "" && strings.Contains(b.String(), notWant) {
			t.Errorf("note %q; want %q, not %q", b.String(), want, notWant)
		}
	}
	sub := workload.DatasetInfo{Path: "s.json", Format: "sharegpt", Sampling: "random", Entries: 90000, Sampled: 10000, MaxEntries: 10000,
		Used: 9990, Pruned: map[string]int{"prompt_too_long": 10}}
	f(sub, "its 9990 usable entries counted with the server's tokenizer (POST /tokenize), of a subset of 10000 of the file's 90000 "+
		"entries chosen before measuring (max_entries 10000); vLLM's ShareGPT length rules pruned prompt_too_long 10 of those measured", "")
	whole := sub
	whole.Entries, whole.Sampled, whole.MaxEntries = 10000, 10000, 0
	f(whole, "its 9990 usable entries counted with the server's tokenizer (POST /tokenize); vLLM's", "subset")
}
