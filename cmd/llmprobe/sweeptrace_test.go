package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
)

func TestSweepTraceBadFlags(t *testing.T) {
	const dir = "../../prober/workload/testdata/trace/"
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"a bad line", []string{"--trace", dir + "invalid-input-zero.jsonl"},
			"llmprobe: error: --trace: " + dir + "invalid-input-zero.jsonl:2: input_length: must be >= 1, got 0\n"},
		{"endless file", []string{"--trace", "/dev/zero"}, "llmprobe: error: --trace: /dev/zero:1: the line is longer than 1048576 bytes\n"},
		{"with rates", []string{"--trace", dir + "mooncake.jsonl", "--rates", "1"},
			"llmprobe: error: --trace: replays the trace's own timing: give --trace-speed, not --rates or --concurrency\n"},
		{"with lengths", []string{"--trace", dir + "mooncake.jsonl", "--input-len", "8"}, "llmprobe: error: --trace: the trace gives each request's lengths"},
		{"speed without a trace", []string{"--trace-speed", "2"}, "llmprobe: error: --trace-speed: needs --trace\n"},
		{"bad speed", []string{"--trace", dir + "mooncake.jsonl", "--trace-speed", "0"}, "llmprobe: error: --trace-speed: speed must be in (0, 1e+06], got 0\n"},
		{"sharded", []string{"--trace", dir + "mooncake.jsonl", "--shard-count", "2"}, "llmprobe: error: --trace: a trace replay is not sharded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantUsageError(t, append([]string{"sweep"}, tt.args...), tt.want) })
	}
}

// TestSweepTrace replays the Mooncake sample at speed 2 against the
// simulator: one step of every entry, the trace comparison in result.json
// and analysis.md.
func TestSweepTrace(t *testing.T) {
	url, _ := simtest.Start(t, simtest.Fast())
	out := t.TempDir()
	runOK(t, "sweep", "--target", url, "--trace", "../../prober/workload/testdata/trace/mooncake.jsonl",
		"--trace-speed", "2", "--warmups", "0", "--out", out, "--no-progress", "--log.level", "warn")
	runDir := onlyRunDir(t, out, "*")
	var res struct {
		Steps []struct {
			Label       string  `json:"label"`
			RequestRate float64 `json:"request_rate"`
			NumPrompts  int     `json:"num_prompts"`
			Trace       *struct {
				Speed          float64 `json:"speed"`
				Sent           int     `json:"sent"`
				ScheduledSpanS float64 `json:"scheduled_span_s"`
			} `json:"trace"`
		} `json:"steps"`
	}
	readJSON(t, filepath.Join(runDir, "result.json"), &res)
	if len(res.Steps) != 1 || res.Steps[0].Label != "trace-speed=2" || res.Steps[0].NumPrompts != 6 || res.Steps[0].Trace == nil ||
		res.Steps[0].Trace.Sent != 6 || res.Steps[0].Trace.ScheduledSpanS != 0.55 || res.Steps[0].RequestRate != 6/0.55 {
		t.Fatalf("result.json steps %+v", res.Steps)
	}
	md, err := os.ReadFile(filepath.Join(runDir, "analysis.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(md, []byte("## Trace replay")) || !bytes.Contains(md, []byte("Rate over time, step 0 (trace-speed=2")) {
		t.Errorf("analysis.md has no trace section")
	}
}
