package main

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
)

// TestSweepDatasetShareGPT runs `sweep --dataset testdata/sharegpt.json
// --rates 1,2` against the simulator: the result and the analysis show
// the dataset's measured token distributions beside the server's, the
// fingerprint records the file, and no file of the run holds prompt text
// (every prompt of the file carries a "zqxmarker" word).
func TestSweepDatasetShareGPT(t *testing.T) {
	url := msSim(t)
	out := t.TempDir()
	data := filepath.Join("testdata", "sharegpt.json")
	runOK(t, "sweep", "--target", url, "--dataset", data, "--dataset-sampling", "shuffle",
		"--rates", "1,2", "--num-prompts", "3", "--warmups", "1", "--out", out, "--name", "ds", "--save-detailed",
		"--no-progress", "--log.level", "warn", "--max-send-lag", "10s", "--max-sched-latency", "10s", "--max-error-rate", "1")
	dir := onlyRunDir(t, out, "*-ds")
	if v, err := artifacts.Verify(dir, artifacts.VerifyOptions{}); err != nil || len(v.Problems) != 0 {
		t.Fatalf("verify: %v %v", v.Problems, err)
	}
	var res struct {
		Dataset struct {
			Format, SHA256, Method, Sampling string
			Entries, Skipped, Used           int
			Pruned                           map[string]int
			InputTokens                      struct{ N, Max, P50 float64 } `json:"input_tokens"`
			OutputTokens                     struct{ N, Max float64 }      `json:"output_tokens"`
		} `json:"dataset"`
		Steps []struct {
			Tokens struct {
				Input struct{ N, Max float64 } `json:"input"`
			} `json:"token_distributions"`
		} `json:"steps"`
	}
	readJSON(t, filepath.Join(dir, artifacts.ResultFile), &res)
	raw, _ := os.ReadFile(data)
	sum := sha256.Sum256(raw)
	d := res.Dataset
	if d.Format != "sharegpt" || d.SHA256 != hex.EncodeToString(sum[:]) || d.Method != "server-tokenize" || d.Sampling != "shuffle" ||
		d.Entries != 18 || d.Skipped != 2 || d.Used != 16 || d.Pruned["prompt_too_short"] != 1 || d.Pruned["output_too_short"] != 1 ||
		d.InputTokens.N != 16 || d.InputTokens.Max < d.InputTokens.P50 || d.OutputTokens.N != 16 {
		t.Fatalf("result dataset %+v", d)
	}
	if len(res.Steps) != 2 || res.Steps[0].Tokens.Input.N != 3 || res.Steps[0].Tokens.Input.Max > d.InputTokens.Max {
		t.Fatalf("steps %+v", res.Steps)
	}
	var m struct {
		Fingerprint struct {
			Workload struct {
				Dataset struct {
					Path, Format, SHA256, Tokenizer string
					Entries                         int
				} `json:"dataset"`
			} `json:"workload"`
		} `json:"fingerprint"`
	}
	readJSON(t, filepath.Join(dir, artifacts.ManifestFile), &m)
	if fd := m.Fingerprint.Workload.Dataset; fd.Path != data || fd.Format != "sharegpt" || fd.Entries != 18 ||
		fd.SHA256 != d.SHA256 || fd.Tokenizer != "server-tokenize" {
		t.Fatalf("fingerprint dataset %+v", fd)
	}
	an, _ := os.ReadFile(filepath.Join(dir, artifacts.AnalysisFile))
	if !strings.Contains(string(an), "| dataset (16 entries, server-tokenize) |") || !strings.Contains(string(an), "prompt_too_short 1") {
		t.Errorf("analysis.md lacks the dataset row:\n%s", an)
	}
	files := 0
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		files++
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), "zqxmarker") {
			t.Errorf("%s holds prompt text", p)
		}
		return err
	})
	if err != nil || files < 6 {
		t.Fatalf("walk: %d files, %v", files, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "vllm")); err != nil {
		t.Errorf("no vllm/ directory to check: %v", err)
	}
}

// TestSweepDatasetRefused checks that a broken dataset, one that needs
// chat, a shuffle larger than the file and the length flags it replaces
// are one line naming the flag, before any run directory.
func TestSweepDatasetRefused(t *testing.T) {
	url, _ := simtest.Start(t, simulator.DefaultConfig())
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	msgs := filepath.Join(dir, "msgs.jsonl")
	_ = os.WriteFile(bad, []byte("{\"prompt\": \"a b c d\", \"max_tokens\": 4}\n{\"prompt\": \"x\", \"max_tokens\": \"many\"}\n"), 0o600)
	_ = os.WriteFile(msgs, []byte("{\"messages\": [{\"role\": \"user\", \"content\": \"a b c\"}], \"max_tokens\": 2}\n"), 0o600)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"broken line", []string{"--dataset", bad}, "llmprobe: error: --dataset: " + bad + ":2: max_tokens: must be a number, got string\n"},
		{"messages need chat", []string{"--dataset", msgs}, "llmprobe: error: --api: the dataset " + msgs + " has messages entries (chat conversations): they need --api chat or messages\n"},
		{"input-len too", []string{"--dataset", msgs, "--input-len", "5"}, "llmprobe: error: --dataset: the dataset's prompts set the input lengths: drop --input-len\n"},
		{"shuffle too small", []string{"--dataset", msgs, "--api", "chat", "--dataset-sampling", "shuffle"},
			"llmprobe: error: --dataset: sampling shuffle (without replacement): a step sends up to 4 requests (2 warmups included) but the dataset has 1 usable entries"},
		{"bad sampling", []string{"--dataset", msgs, "--api", "chat", "--dataset-sampling", "often"}, "llmprobe: error: --dataset: dataset: sampling: must be one of"},
		{"shuffle beyond the subset", []string{"--dataset", filepath.Join("testdata", "sharegpt.json"), "--dataset-sampling", "shuffle",
			"--dataset-max-entries", "3"},
			"llmprobe: error: --dataset: sampling shuffle (without replacement): a step sends up to 4 requests (2 warmups included) but the dataset has "},
		{"bad max entries", []string{"--dataset", msgs, "--api", "chat", "--dataset-max-entries=-1"},
			"llmprobe: error: --dataset-max-entries: must be 0 (every entry) to 200000, got -1\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			wantUsageError(t, append([]string{"sweep", "--target", url, "--rates", "1", "--num-prompts", "2", "--out", out, "--no-progress",
				"--log.level", "warn"}, tc.args...), tc.want)
			if entries, _ := os.ReadDir(out); len(entries) != 0 {
				t.Errorf("out dir holds %d entries", len(entries))
			}
		})
	}
}
