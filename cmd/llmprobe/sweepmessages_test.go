package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/artifacts"
)

// TestSweepAPIMessages runs `llmprobe sweep --api messages` (the Anthropic
// Messages API) against the simulator with the builtin answer checks:
// every request completes with its output tokens, every check passes, and
// command.txt names the API.
func TestSweepAPIMessages(t *testing.T) {
	runDir, res := sweepBuiltinChecks(t, "messages")
	if st := res.Steps[0].Stats; st.Completed != 6 || st.Failed != 0 || st.TotalOutputTokens != 6*4 || st.TTFT.N != 6 {
		t.Errorf("step: completed %d, failed %d, output tokens %d, TTFT n %d", st.Completed, st.Failed, st.TotalOutputTokens, st.TTFT.N)
	}
	if cmd, _ := os.ReadFile(filepath.Join(runDir, artifacts.CommandFile)); !strings.Contains(string(cmd), "--api messages") {
		t.Errorf("command.txt = %q", cmd)
	}
}
