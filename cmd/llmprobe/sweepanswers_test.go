package main

import (
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

// TestSweepAnswerChecksFlag: `sweep --answer-checks` refuses a set it
// cannot load or send with one line naming the flag (exit 2) before
// anything is sent; with builtin, the sweep sends the set after its step
// and logs how many passed, and result.json, analysis.md and command.txt
// carry it.
func TestSweepAnswerChecksFlag(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	msgs := filepath.Join(dir, "msgs.jsonl")
	os.WriteFile(bad, []byte(`{"id":"x","prompt":"p","number":"42"}`+"\n"), 0o644)
	os.WriteFile(msgs, []byte(`{"id":"greet","messages":[{"role":"user","content":"Say hi"}],"contains":"hi"}`+"\n"), 0o644)
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"missing file", []string{"--answer-checks", filepath.Join(dir, "none.jsonl")},
			"llmprobe: error: --answer-checks: answer check set: open " + filepath.Join(dir, "none.jsonl") + ": no such file or directory\n"},
		{"bad line", []string{"--answer-checks", bad}, "llmprobe: error: --answer-checks: " + bad + ":1: number: must be a number, got string\n"},
		{"messages on completions", []string{"--answer-checks", msgs},
			"llmprobe: error: --answer-checks: check greet: messages need a chat target (api: chat or messages), this one is completions\n"},
		{"embeddings", []string{"--answer-checks", "builtin", "--api", "embeddings"},
			"llmprobe: error: --answer-checks: answer checks judge a generated reply: they need --api completions, chat, responses or messages, not embeddings\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wantUsageError(t, append([]string{"sweep", "--rates", "1", "--out", t.TempDir()}, tt.args...), tt.want)
		})
	}

	runDir, res := sweepBuiltinChecks(t, "chat")
	if v, err := artifacts.Verify(runDir, artifacts.VerifyOptions{}); err != nil || len(v.Problems) != 0 {
		t.Fatalf("verify: %v %v", v.Problems, err)
	}
	n := len(answer.Builtin().Items)
	if a := res.Answers; a == nil || a.Set != answer.BuiltinName || a.Checks != n || a.Pass != n {
		t.Errorf("result.json answers %+v", a)
	}
	md, _ := os.ReadFile(filepath.Join(runDir, artifacts.AnalysisFile))
	if !strings.Contains(string(md), "### Answer checks") || !strings.Contains(string(md), "Every check passed.") {
		t.Errorf("analysis.md lacks the answer checks")
	}
	cmd, _ := os.ReadFile(filepath.Join(runDir, artifacts.CommandFile))
	if !strings.Contains(string(cmd), "--answer-checks builtin") {
		t.Errorf("command.txt = %q", cmd)
	}
}

// sweepBuiltinChecks sweeps the simulator with `--api api --answer-checks
// builtin` (6 requests of 16 tokens in, 4 out): the log must say every check
// passed. It returns the run directory and its result.
func sweepBuiltinChecks(t *testing.T, api string) (string, *sweep.Result) {
	t.Helper()
	url, _ := simtest.Start(t, simtest.Fast())
	out := t.TempDir()
	_, stderr := runOK(t, "sweep", "--target", url, "--api", api, "--rates", "20", "--num-prompts", "6",
		"--warmups", "0", "--input-len", "16", "--output-len", "4", "--out", out, "--name", "answers", "--no-progress",
		"--answer-checks", "builtin", "--max-send-lag", "10s", "--max-sched-latency", "10s", "--max-error-rate", "1")
	n := len(answer.Builtin().Items)
	if want := fmt.Sprintf("answer checks done: %d of %d passed", n, n); !strings.Contains(stderr, want) {
		t.Errorf("the log lacks %q:\n%s", want, stderr)
	}
	runDir := onlyRunDir(t, out, "*-answers")
	return runDir, loadRun(t, runDir)
}

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
