package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
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
	stdout, _ := runOK(t, "workload", "stats", data, "--target", url)
	for _, want := range []string{"entries: 16 used of 18", "the server's tokenizer (POST /tokenize)", "input tokens         16", "arrivals: not timed"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stats text lacks %q:\n%s", want, stdout)
		}
	}
	stdout, _ = runOK(t, "workload", "stats", "--format", "json", data)
	var st workload.Stats
	if err := json.Unmarshal([]byte(stdout), &st); err != nil || st.Count != 16 || st.Tokenizer != workload.MethodEstimate {
		t.Fatalf("json stats %+v, %v", st, err)
	}
	dir := t.TempDir()
	from, out := writeFile(t, dir, "stats.json", stdout), filepath.Join(dir, "synth.jsonl")
	runOK(t, "workload", "synth", "--from", from, "--count", "50", "--out", out)
	if stdout, _ = runOK(t, "workload", "stats", out); !strings.Contains(stdout, "entries: 50 used of 50") {
		t.Fatalf("stats of the synthesised file:\n%s", stdout)
	}
	missing := filepath.Join(dir, "missing.jsonl")
	wantUsageError(t, []string{"workload", "stats", missing}, "llmprobe: error: "+missing+": no such file or directory\n")
}

// TestWorkloadStatsOfTraces: both trace formats are recognised from their
// first line and summarised from their own lengths, offsets and hash ids;
// a trace with --target, or a broken one, is refused naming the problem.
func TestWorkloadStatsOfTraces(t *testing.T) {
	dir := filepath.Join("..", "..", "prober", "workload", "testdata", "trace")
	stdout, _ := runOK(t, "workload", "stats", filepath.Join(dir, "mooncake.jsonl"))
	for _, want := range []string{"(mooncake, sha256:", "entries: 6", "512 tokens each", "input tokens          6", "prefix share: 0.608", "arrivals: 4.545 req/s"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("mooncake stats lack %q:\n%s", want, stdout)
		}
	}
	stdout, _ = runOK(t, "workload", "stats", "--format", "json", filepath.Join(dir, "offsets.jsonl"))
	var st workload.Stats
	if err := json.Unmarshal([]byte(stdout), &st); err != nil || st.Count == 0 || !st.Timed || st.Tokenizer != workload.MethodTrace || st.RatePerS <= 0 {
		t.Fatalf("offsets json stats %+v, %v", st, err)
	}
	wantUsageError(t, []string{"workload", "stats", "--target", "http://127.0.0.1:1", filepath.Join(dir, "offsets.jsonl")},
		"llmprobe: error: --target: does not apply to a trace")
	wantUsageError(t, []string{"workload", "stats", filepath.Join(dir, "invalid-input-zero.jsonl")},
		"llmprobe: error: "+filepath.Join(dir, "invalid-input-zero.jsonl")+":")
}

// TestWorkloadStatsHTTPConfig counts a dataset with the tokenizer of a TLS
// simulator that requires a header, through --http.config.file (the CA file
// and the header), as sweep does; without the file the target fails (exit
// 1, a server failure), and a bad file or one without --target is bad input
// (exit 2, one line naming the flag).
func TestWorkloadStatsHTTPConfig(t *testing.T) {
	certs := simtest.Certs(t)
	sim := simtest.Fast()
	sim.TLSCertFile, sim.TLSKeyFile = certs.CertFile, certs.KeyFile
	sim.RequireHeaders = "X-Gateway-Key: gw-secret-stats"
	url, _ := simtest.Start(t, sim)
	dir := t.TempDir()
	httpCfg := writeFile(t, dir, "http.yml", "tls_config: {ca_file: "+certs.CAFile+"}\n"+
		"http_headers: {X-Gateway-Key: {secrets: [gw-secret-stats]}}\n")
	data := filepath.Join("testdata", "sharegpt.json")
	args := func(more ...string) []string {
		return append([]string{"workload", "stats", data, "--target", url}, more...)
	}
	stdout, logs := runOK(t, args("--http.config.file", httpCfg)...)
	if !strings.Contains(stdout, "the server's tokenizer (POST /tokenize)") {
		t.Fatalf("stats text lacks the server's tokenizer:\n%s", stdout)
	}
	noSecret(t, "the log", logs, "gw-secret-stats")
	var stderr bytes.Buffer
	if code := run(context.Background(), args(), io.Discard, &stderr); code != 1 || !strings.HasPrefix(stderr.String(), "llmprobe: error: --target: ") {
		t.Errorf("without the HTTP config: exit %d, %q; want 1 (the server refused)", code, stderr.String())
	}
	bad := writeFile(t, dir, "bad.yml", "tls_config: {ca_flie: x}\n")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"bad http config", args("--http.config.file", bad), "llmprobe: error: --http.config.file: " + bad + ":1: "},
		{"http config without target", []string{"workload", "stats", data, "--http.config.file", httpCfg},
			"llmprobe: error: --http.config.file and --api-key-file apply to --target's requests: give --target\n"},
		{"not a dataset", []string{"workload", "stats", writeFile(t, dir, "notes.txt", "hello\n")},
			"llmprobe: error: " + filepath.Join(dir, "notes.txt") + ": cannot tell the format: the file starts with neither '{' (JSONL) nor '[' (ShareGPT JSON); give --dataset-format\n"},
	} {
		t.Run(tc.name, func(t *testing.T) { wantUsageError(t, tc.args, tc.want) })
	}
}
