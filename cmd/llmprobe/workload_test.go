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
	if code := run(context.Background(), []string{"workload", "stats", filepath.Join(dir, "missing.jsonl")}, &stdout, &stderr); code != 2 ||
		stderr.String() != "llmprobe: error: "+filepath.Join(dir, "missing.jsonl")+": no such file or directory\n" {
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
	if code := run(context.Background(), []string{"workload", "stats", filepath.Join(dir, "invalid-input-zero.jsonl")}, &stdout, &stderr); code != 2 ||
		!strings.Contains(stderr.String(), "invalid-input-zero.jsonl:") {
		t.Errorf("broken trace: exit %d, %q", code, stderr.String())
	}
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
	var stdout, stderr bytes.Buffer
	args := func(more ...string) []string {
		return append([]string{"workload", "stats", data, "--target", url}, more...)
	}
	if code := run(context.Background(), args("--http.config.file", httpCfg), &stdout, &stderr); code != 0 ||
		!strings.Contains(stdout.String(), "the server's tokenizer (POST /tokenize)") {
		t.Fatalf("exit %d:\n%s%s", code, stdout.String(), stderr.String())
	}
	noSecret(t, "the log", stderr.String(), "gw-secret-stats")
	stderr.Reset()
	if code := run(context.Background(), args(), &stdout, &stderr); code != 1 || !strings.HasPrefix(stderr.String(), "llmprobe: error: --target: ") {
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
		stderr.Reset()
		if code := run(context.Background(), tc.args, &stdout, &stderr); code != 2 || !strings.HasPrefix(stderr.String(), tc.want) ||
			strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("%s: exit %d, %q; want 2 and %q", tc.name, code, stderr.String(), tc.want)
		}
	}
}
