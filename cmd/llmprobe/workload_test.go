package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// TestWorkloadStatsAndSynth prints the stats of the ShareGPT test file
// counted by the simulator's tokenizer, then synthesises a dataset from the
// JSON stats and reads its stats back.
func TestWorkloadStatsAndSynth(t *testing.T) {
	url, _ := simtest.Start(t, simulator.DefaultConfig())
	data := filepath.Join("testdata", "sharegpt.json")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"workload", "stats", data, "--target", url}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"entries: 16 used of 18", "the server's tokenizer (POST /tokenize)", "input tokens         16", "arrivals: not timed"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stats text lacks %q:\n%s", want, stdout.String())
		}
	}
	stdout.Reset()
	if code := run(context.Background(), []string{"workload", "stats", "--format", "json", data}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var st workload.Stats
	if err := json.Unmarshal(stdout.Bytes(), &st); err != nil || st.Count != 16 || st.Tokenizer != workload.MethodEstimate {
		t.Fatalf("json stats %+v, %v", st, err)
	}
	dir := t.TempDir()
	from, out := writeFile(t, dir, "stats.json", stdout.String()), filepath.Join(dir, "synth.jsonl")
	if code := run(context.Background(), []string{"workload", "synth", "--from", from, "--count", "50", "--out", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("synth exit %d: %s", code, stderr.String())
	}
	stdout.Reset()
	if code := run(context.Background(), []string{"workload", "stats", out}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "entries: 50 used of 50") {
		t.Fatalf("stats of the synthesised file: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	stderr.Reset()
	if code := run(context.Background(), []string{"workload", "stats", filepath.Join(dir, "missing.jsonl")}, &stdout, &stderr); code != 1 ||
		!strings.Contains(stderr.String(), "missing.jsonl") {
		t.Fatalf("missing file: exit %d, %q", code, stderr.String())
	}
}

// TestWorkloadStatsOfTraces: both trace formats are recognised from their
// first line and summarised from their own lengths, offsets and hash ids;
// a trace with --target, or a broken one, is refused naming the problem.
func TestWorkloadStatsOfTraces(t *testing.T) {
	dir := filepath.Join("..", "..", "prober", "workload", "testdata", "trace")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"workload", "stats", filepath.Join(dir, "mooncake.jsonl")}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"(mooncake, sha256:", "entries: 6", "512 tokens each", "input tokens          6", "prefix share: 0.608", "arrivals: 4.545 req/s"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("mooncake stats lack %q:\n%s", want, stdout.String())
		}
	}
	stdout.Reset()
	if code := run(context.Background(), []string{"workload", "stats", "--format", "json", filepath.Join(dir, "offsets.jsonl")}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var st workload.Stats
	if err := json.Unmarshal(stdout.Bytes(), &st); err != nil || st.Count == 0 || !st.Timed || st.Tokenizer != workload.MethodTrace || st.RatePerS <= 0 {
		t.Fatalf("offsets json stats %+v, %v", st, err)
	}
	stderr.Reset()
	if code := run(context.Background(), []string{"workload", "stats", "--target", "http://127.0.0.1:1", filepath.Join(dir, "offsets.jsonl")}, &stdout, &stderr); code != 2 ||
		!strings.Contains(stderr.String(), "--target: does not apply to a trace") {
		t.Errorf("--target with a trace: exit %d, %q", code, stderr.String())
	}
	stderr.Reset()
	if code := run(context.Background(), []string{"workload", "stats", filepath.Join(dir, "invalid-input-zero.jsonl")}, &stdout, &stderr); code != 1 ||
		!strings.Contains(stderr.String(), "invalid-input-zero.jsonl:") {
		t.Errorf("broken trace: exit %d, %q", code, stderr.String())
	}
}
