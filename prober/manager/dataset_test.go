package manager_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
)

// TestDaemonProbeWithDataset runs a probe over a JSONL dataset against the
// simulator: every request is one of the file's entries, with its prompt
// length (counted by the server's tokenizer) and its max_tokens.
func TestDaemonProbeWithDataset(t *testing.T) {
	base, _ := simtest.Start(t, fastSim())
	path := filepath.Join(t.TempDir(), "d.jsonl")
	lines := ""
	want := map[int]int{} // prompt words -> max_tokens
	for i, n := range []int{5, 9, 14} {
		lines += fmt.Sprintf(`{"prompt": "%s", "max_tokens": %d}`+"\n", strings.TrimSpace(strings.Repeat("word ", n)), i+2)
		want[n] = i + 2
	}
	if err := os.WriteFile(path, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := parse(t, fmt.Sprintf("targets: [{name: sim, base_url: %s, probes: [{name: ds, rate: 30, workload: {dataset: {path: %s, sampling: cycle}}}]}]", base, path))
	if sum := cfg.Targets[0].Probes[0].Workload.Dataset.SHA256; len(sum) != 64 {
		t.Fatalf("dataset sha256 %q not recorded at load", sum)
	}
	m, _, col := start(t, cfg)
	evs := col.waitFor(t, 20*time.Second, "9 successful records", atLeastOK(9))
	seen := map[int]bool{}
	for _, e := range evs {
		r := e.Record
		if !r.OK() {
			continue
		}
		mt, known := want[r.InputTokens]
		if !known || r.PromptTokens != r.InputTokens || r.OutputTokensRequested != mt {
			t.Errorf("record %s: input %d prompt %d max_tokens %d: not an entry of the file", r.RequestID, r.InputTokens, r.PromptTokens, r.OutputTokensRequested)
		}
		seen[r.InputTokens] = true
	}
	if len(seen) != 3 {
		t.Errorf("entries sent %v, want all 3 (cycle sampling)", seen)
	}
	st := m.Status()
	if len(st) != 1 || len(st[0].Probes) != 1 || !strings.Contains(st[0].Probes[0].Workload, "dataset "+path+" (cycle sampling)") {
		t.Errorf("status %+v", st)
	}
}
