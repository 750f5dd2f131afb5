package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober/answer"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// TestSweepAPIMessages runs `llmprobe sweep --api messages` (the Anthropic
// Messages API) against the simulator with the builtin answer checks:
// every request completes with its output tokens, every check passes, and
// command.txt names the API.
func TestSweepAPIMessages(t *testing.T) {
	url, _ := simtest.Start(t, simtest.Fast())
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"sweep", "--target", url, "--api", "messages", "--rates", "20", "--num-prompts", "6",
		"--warmups", "0", "--input-len", "16", "--output-len", "4", "--out", out, "--name", "msgs", "--no-progress",
		"--answer-checks", "builtin", "--max-send-lag", "10s", "--max-sched-latency", "10s", "--max-error-rate", "1"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, stderr.String())
	}
	n := len(answer.Builtin().Items)
	if want := fmt.Sprintf("answer checks done: %d of %d passed", n, n); !strings.Contains(stderr.String(), want) {
		t.Errorf("the log lacks %q:\n%s", want, stderr.String())
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "*-msgs"))
	if len(dirs) != 1 {
		t.Fatalf("run dirs %v", dirs)
	}
	f, err := os.Open(filepath.Join(dirs[0], artifacts.ResultFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := sweep.DecodeResult(f)
	if err != nil {
		t.Fatal(err)
	}
	if st := res.Steps[0].Stats; st.Completed != 6 || st.Failed != 0 || st.TotalOutputTokens != 6*4 || st.TTFT.N != 6 {
		t.Errorf("step: completed %d, failed %d, output tokens %d, TTFT n %d", st.Completed, st.Failed, st.TotalOutputTokens, st.TTFT.N)
	}
	if cmd, _ := os.ReadFile(filepath.Join(dirs[0], artifacts.CommandFile)); !strings.Contains(string(cmd), "--api messages") {
		t.Errorf("command.txt = %q", cmd)
	}
}
