package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// TestSweepBadFlags pins the one-line error (exit 2) of each bad flag of
// sweep, and of bad workload files (for a bad request section: file, line
// and field), all refused before anything is sent.
func TestSweepBadFlags(t *testing.T) {
	dir := t.TempDir()
	wl, wl2, wl3 := filepath.Join(dir, "wl.yml"), filepath.Join(dir, "wl2.yml"), filepath.Join(dir, "wl3.yml")
	for name, body := range map[string]string{
		wl: "input_tokens: {dist: fixed, value: 8}\noutput_tokens: {dist: fixed, value: 2}\nbogus: 1\n",
		wl2: "input_tokens: {dist: fixed, value: 8}\noutput_tokens: {dist: fixed, value: 2}\nrequest:\n" +
			"  features:\n    - {kind: logprobs, share: 0.5}\n    - kind: json_schema\n      share: 1.5\n      schema: {type: object}\n",
		wl3: "input_tokens: {dist: fixed, value: 8}\noutput_tokens: {dist: fixed, value: 2}\nrequest:\n" +
			"  features:\n    - {kind: json_schema, share: 0.5, schema_file: missing.json}\n",
	} {
		if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"rate zero", []string{"--rates", "0"}, "llmprobe: error: --rates: rate must be >= 0.01, got 0\n"},
		{"rate tiny", []string{"--rates", "1e-300"}, "llmprobe: error: --rates: rate must be >= 0.01, got 1e-300\n"},
		{"concurrency huge", []string{"--concurrency", "100000000"}, "llmprobe: error: --concurrency: must be at most 10000 requests in flight (each holds a socket and a goroutine; shard a sweep for more), got 100000000\n"},
		{"negative input length", []string{"--input-len=-5"}, "llmprobe: error: --input-len: must be >= 1, got -5\n"},
		{"negative prefix", []string{"--prefix-len=-1"}, "llmprobe: error: --prefix-len: must be >= 0, got -1\n"},
		{"bad goodput key", []string{"--goodput", "ttft:800", "foo:3"}, `llmprobe: error: --goodput: invalid goodput key "foo": must be one of ttft, tpot, e2el, ttfa` + "\n"},
		{"goodput pair without the flag", []string{"ttft:800"}, `llmprobe: error: --goodput: unexpected argument "ttft:800" (KEY:VALUE pairs follow --goodput)` + "\n"},
		{"rates and concurrency", []string{"--rates", "1", "--concurrency", "2"}, "llmprobe: error: --concurrency: give --rates or --concurrency, not both"},
		{"burst without a count", []string{"--rates", "inf"}, "llmprobe: error: --num-prompts: --rates inf sends a step's requests at once: give --num-prompts\n"},
		{"unknown workload key", []string{"--workload", wl}, "llmprobe: error: --workload: " + wl + ": yaml: unmarshal errors:"},
		{"workload and lengths", []string{"--workload", wl, "--input-len", "4"}, "llmprobe: error: --workload: give --workload or --input-len/--output-len/--range-ratio/--prefix-len, not both\n"},
		{"bad metadata", []string{"--metadata", "duration=3"}, `llmprobe: error: --metadata: key "duration" is reserved` + "\n"},
		{"bad target", []string{"--target", "localhost:8000"}, `llmprobe: error: --target: must be an http:// or https:// URL, got "localhost:8000"` + "\n"},
		{"unknown arrival", []string{"--arrival", "weird"}, "llmprobe: error: --arrival: "},
		{"unknown api", []string{"--api", "foo"}, `llmprobe: error: --api: must be completions, chat, responses, embeddings, rerank or messages, got "foo"` + "\n"},
		{"unknown engine", []string{"--engine", "llama.cpp"}, `llmprobe: error: --engine: must be auto, vllm, sglang, tgi, llamacpp, ollama, got "llama.cpp"` + "\n"},
		{"bad auto-start", []string{"--auto-start", "fast"}, `llmprobe: error: --auto-start: must be probe or a rate > 0 in req/s, got "fast"` + "\n"},
		{"bad step byte cap", []string{"--max-step-bytes", "lots"}, `llmprobe: error: --max-step-bytes: invalid size "lots"`},
		{"zero step byte cap", []string{"--max-step-bytes", "0"}, `llmprobe: error: --max-step-bytes: must be > 0, got "0"` + "\n"},
		{"too many prompts per step", []string{"--rates", "1", "--num-prompts", "3000000"}, "llmprobe: error: --num-prompts: must be at most 2000000 requests per step, got 3000000\n"},
		{"endless workload file", []string{"--workload", "/dev/zero"}, "llmprobe: error: --workload: /dev/zero: the file is larger than 4MiB, the cap on a workload file\n"},
		{"endless key file", []string{"--api-key-file", "/dev/zero"}, "llmprobe: error: --api-key-file: read: /dev/zero: the file is larger than 64KiB, the cap on an API key file\n"},
		{"negative temperature", []string{"--temperature=-1"}, "llmprobe: error: --temperature: temperature: must be a finite number >= 0, got -1\n"},
		{"top-p over 1", []string{"--top-p", "1.5"}, "llmprobe: error: --top-p: top_p: must be in (0, 1], got 1.5\n"},
		{"negative min tokens", []string{"--min-tokens=-2"}, "llmprobe: error: --min-tokens: min_tokens: must be in [0, 1048576], got -2\n"},
		{"empty stop", []string{"--stop", ""}, "llmprobe: error: --stop: stop[0]: must be 1 to 1024 bytes, got 0\n"},
		{"extra body not an object", []string{"--extra-body", "[1]"}, "llmprobe: error: --extra-body: must be a JSON object: json: cannot unmarshal array"},
		{"extra body sets stream", []string{"--extra-body", `{"stream":false}`}, "llmprobe: error: --extra-body: extra_body.stream: may not be set in extra_body"},
		{"bad share in the workload file", []string{"--workload", wl2}, "llmprobe: error: --workload: " + wl2 + ":7: request.features[1].share: must be in (0, 1], got 1.5\n"},
		{"missing schema file", []string{"--workload", wl3}, "llmprobe: error: --workload: " + wl3 + ":5: request.features[0].schema_file: open " +
			filepath.Join(dir, "missing.json") + ": no such file or directory\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantUsageError(t, append([]string{"sweep"}, tt.args...), tt.want) })
	}
}

// msSim starts a simulator for the sweep tests whose engine steps take a millisecond and
// returns its base URL.
func msSim(t *testing.T) string {
	t.Helper()
	cfg := simulator.DefaultConfig()
	cfg.StepBase = time.Millisecond
	url, _ := simtest.Start(t, cfg)
	return url
}

// TestSweepRefusedByTarget checks that an error the sweep's preflight
// names by Config field (the workload does not fit max_model_len) reaches
// the user as one line naming the flag, exit 2, before any run directory.
func TestSweepRefusedByTarget(t *testing.T) {
	url, _ := simtest.Start(t, simulator.DefaultConfig())
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"sweep", "--target", url, "--rates", "1", "--num-prompts", "1",
		"--input-len", "9000", "--output-len", "4", "--out", out, "--no-progress", "--log.level", "warn"}, &stdout, &stderr)
	want := "llmprobe: error: --input-len: --input-len 9000 + --output-len 4 = 9004 tokens per request, " +
		"more than the model's max_model_len 8192 (from GET /v1/models): lower them\n"
	if code != 2 || stderr.String() != want {
		t.Errorf("exit code %d, stderr %q; want 2 and %q", code, stderr.String(), want)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Errorf("out dir holds %d entries", len(entries))
	}
}

func TestSweepCommand(t *testing.T) {
	url := msSim(t)
	out := t.TempDir()
	stdout, _ := runOK(t, "sweep", "--target", url, "--rates", "20,40", "--num-prompts", "10", "--warmups", "1",
		"--input-len", "16", "--output-len", "4", "--goodput", "ttft:800", "tpot:50", "--out", out, "--name", "cli",
		"--metadata", "note=test", "--metadata", "hf_token=abcdef123", "--no-progress", "--log.level", "warn",
		// The test checks the CLI's output, not the validity rules: a
		// loaded test machine must not flag the steps client-saturated.
		"--max-send-lag", "10s", "--max-sched-latency", "10s", "--max-error-rate", "1")
	// 10 requests a level under an SLO: every level is too short to
	// decide, which the knee line says, and no max goodput is quoted from
	// them (issue 22 V9; this test expected a "max goodput:" line before).
	if strings.Contains(stdout, "max goodput:") {
		t.Errorf("stdout quotes a max goodput from levels too short to decide:\n%s", stdout)
	}
	runDir := onlyRunDir(t, out, "*-cli")
	// The process's CPU counts the simulator's (it runs in this test
	// process) and -race multiplies both: a busy host can flag a step
	// client-saturated on its CPU. Such a step is accepted with its
	// evidence: only the client's own flags, each step's reason printed,
	// and the knee line saying what the valid steps allow.
	res := loadRun(t, runDir)
	wants := []string{"knee:", "run directory: "}
	valid := 0
	for _, st := range res.Steps {
		if st.Validity.Valid {
			valid++
			continue
		}
		for i, f := range st.Validity.Flags {
			if f != sweep.FlagClientSaturated && f != sweep.FlagClientReadLag {
				t.Errorf("step %s flagged %s: %s", st.Label, f, st.Validity.Reasons[i])
			}
		}
		wants = append(wants, "invalid: "+st.Validity.Flags[0]+": "+st.Validity.Reasons[0])
		t.Logf("step %s flagged on this host: %v", st.Label, st.Validity.Reasons)
	}
	switch {
	case valid > 0:
		wants = append(wants, "too short to decide")
	default:
		wants = append(wants, "knee: not found (no valid level)")
	}
	for _, want := range wants {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if v, err := artifacts.Verify(runDir, artifacts.VerifyOptions{}); err != nil || len(v.Problems) != 0 {
		t.Fatalf("verify: %v %v", v.Problems, err)
	}
	help, _ := os.ReadFile(filepath.Join(runDir, artifacts.HelpFile))
	if !strings.Contains(string(help), "usage: llmprobe sweep") || !strings.Contains(string(help), "--goodput") {
		t.Errorf("help.txt is not the sweep help:\n%.300s", help)
	}
	cmd, _ := os.ReadFile(filepath.Join(runDir, artifacts.CommandFile))
	if !strings.HasPrefix(string(cmd), "llmprobe sweep --target ") {
		t.Errorf("command.txt = %q", cmd)
	}
	var m struct {
		Fingerprint struct {
			Load struct {
				Goodput map[string]float64 `json:"goodput_ms"`
			} `json:"load"`
		} `json:"fingerprint"`
	}
	mb, _ := os.ReadFile(filepath.Join(runDir, artifacts.ManifestFile))
	if err := json.Unmarshal(mb, &m); err != nil || m.Fingerprint.Load.Goodput["tpot"] != 50 || m.Fingerprint.Load.Goodput["ttft"] != 800 {
		t.Errorf("fingerprint goodput %v (err %v)", m.Fingerprint.Load.Goodput, err)
	}
	// A secret-looking --metadata value reaches no file.
	entries, _ := os.ReadDir(runDir)
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(runDir, e.Name()))
		if strings.Contains(string(b), "abcdef123") {
			t.Errorf("%s holds the hf_token value", e.Name())
		}
	}
	if !strings.Contains(string(mb), `"hf_token": "<redacted>"`) {
		t.Error("manifest metadata lacks the redacted hf_token")
	}
}

// TestSweepEngineFlag sweeps the llama.cpp persona with --engine llamacpp:
// the engine is recorded as configured, and the idle proof and the
// server's token counters are read with llama.cpp's names.
func TestSweepEngineFlag(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.StepBase, cfg.Engine = time.Millisecond, simulator.EngineLlamaCpp
	url, _ := simtest.Start(t, cfg)
	out := t.TempDir()
	runOK(t, "sweep", "--target", url, "--engine", "llamacpp", "--rates", "20", "--num-prompts", "5",
		"--warmups", "0", "--input-len", "16", "--output-len", "4", "--out", out, "--name", "eng", "--no-progress", "--log.level", "warn")
	runDir := onlyRunDir(t, out, "*-eng")
	m, err := artifacts.ReadManifest(runDir)
	if err != nil {
		t.Fatal(err)
	}
	if tg := m.Fingerprint.Target; tg.Engine != "llamacpp" || tg.EngineSource != "config" || tg.ServerVersion != simulator.VersionLlamaCpp {
		t.Errorf("target engine %q from %q, version %q", tg.Engine, tg.EngineSource, tg.ServerVersion)
	}
	res := loadRun(t, runDir)
	st := res.Steps[0]
	if st.Validity.Idle.Status != sweep.IdleProven || !st.Server.PromptTokens.Known || st.Server.TTFT.Count.Known {
		t.Errorf("idle %+v, server prompt tokens %+v, server TTFT count %+v", st.Validity.Idle, st.Server.PromptTokens, st.Server.TTFT.Count)
	}
}

// sweepChild runs `llmprobe args` in a child process (this test binary,
// re-entered through the test named test with env set) and returns it with
// a scanner over its stderr (the log). Call it first in the test: in the
// child it runs main and never returns.
func sweepChild(t *testing.T, test, env, args string) (*exec.Cmd, *bufio.Scanner, io.Reader) {
	t.Helper()
	if os.Getenv(env) != "" {
		os.Args = append([]string{"llmprobe"}, strings.Fields(os.Getenv(env))...)
		main() // exits
	}
	if testing.Short() {
		t.Skip("starts a child process")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$")
	cmd.Env = append(os.Environ(), env+"="+args)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, bufio.NewScanner(stderr), stderr
}

// scanUntil reads a child's log (sc over its stderr) until a line holds
// substr, then drains the rest of stderr in the background; it returns the
// lines read and whether substr came.
func scanUntil(sc *bufio.Scanner, stderr io.Reader, substr string) (*strings.Builder, bool) {
	var log strings.Builder
	found := false
	for !found && sc.Scan() {
		log.WriteString(sc.Text() + "\n")
		found = strings.Contains(sc.Text(), substr)
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	return &log, found
}

// TestSweepSIGTERM runs main in a child process (this test binary) and
// sends it SIGTERM mid-step: like SIGINT, the run directory is finished
// with a complete:false manifest and the exit code is 130.
func TestSweepSIGTERM(t *testing.T) {
	out := t.TempDir()
	cmd, sc, stderr := sweepChild(t, "TestSweepSIGTERM", "LLMPROBE_SWEEP_SIGTERM_CHILD",
		"sweep --rates 20 --num-prompts 400 --warmups 0 --input-len 8 --output-len 2 --no-progress --out "+out)
	// Wait for the step to start, then SIGTERM.
	log, started := scanUntil(sc, stderr, "step starting")
	if started {
		// Mid-step: wait until the first measured request is in
		// records.jsonl.partial (it reaches the file within
		// artifacts.FlushInterval), then SIGTERM.
		testutil.Eventually(t, "a record in records.jsonl.partial", func() bool {
			parts, _ := filepath.Glob(filepath.Join(out, "*-sweep", artifacts.RecordsFile+artifacts.PartialSuffix))
			if len(parts) != 1 {
				return false
			}
			b, _ := os.ReadFile(parts[0])
			return bytes.Count(b, []byte("\n")) >= 1
		})
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("the child did not end 30 s after SIGTERM; log:\n%s", log.String())
	}
	if !started {
		t.Fatalf("the step never started; log:\n%s", log.String())
	}
	var ee *exec.ExitError
	if !errors.As(werr, &ee) || ee.ExitCode() != 130 {
		t.Errorf("exit %v, want code 130", werr)
	}
	runDir := onlyRunDir(t, out, "*-sweep")
	m, err := artifacts.ReadManifest(runDir)
	if err != nil {
		t.Fatalf("no manifest after SIGTERM: %v", err)
	}
	if m.Complete || !strings.Contains(m.InterruptedReason, "interrupted during step 0") {
		t.Errorf("manifest complete %v reason %q", m.Complete, m.InterruptedReason)
	}
	if v, err := artifacts.Verify(runDir, artifacts.VerifyOptions{}); err != nil || len(v.Problems) != 0 {
		t.Errorf("verify: %v %v", v.Problems, err)
	}
}

// TestSweepSIGKILLKeepsFinishedSteps kills a sweep (SIGKILL: no handler
// runs) as soon as its first step is done: every record of that step is in
// records.jsonl.partial, every streamed file ends on a record boundary, and
// `verify --partial` says so.
func TestSweepSIGKILLKeepsFinishedSteps(t *testing.T) {
	out := t.TempDir()
	cmd, sc, stderr := sweepChild(t, "TestSweepSIGKILLKeepsFinishedSteps", "LLMPROBE_SWEEP_SIGKILL_CHILD",
		"sweep --rates 50,5 --num-prompts 20 --warmups 0 --input-len 8 --output-len 2 --no-progress --max-send-lag 10s --max-sched-latency 10s --out "+out)
	log, killed := scanUntil(sc, stderr, "step done")
	if killed {
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	_ = cmd.Wait()
	if !killed {
		t.Fatalf("the first step never finished; log:\n%s", log.String())
	}
	runDir := onlyRunDir(t, out, "*-sweep")
	var stdout, errOut bytes.Buffer
	code := run(context.Background(), []string{"verify", "--partial", runDir}, &stdout, &errOut)
	if code != 0 {
		t.Fatalf("verify --partial exit %d:\n%s%s", code, stdout.String(), errOut.String())
	}
	sum, err := artifacts.Verify(runDir, artifacts.VerifyOptions{Partial: true})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Manifest != nil || sum.Records < 20 {
		t.Errorf("after SIGKILL: manifest %v, %d records on disk; want no manifest and the first step's 20", sum.Manifest != nil, sum.Records)
	}
}
