package sweepd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/prober/answer"
	"github.com/llmprobe/llmprobe/prober/capacity"
	"github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/sweep"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// The files a sweep reads (a trace, a dataset, an answer-check set): a
// scheduled sweep reads them relative to its config file, the API's Start
// reads none.

// scheduleFromFile writes yml as llmprobe.yml in dir, loads it from another
// working directory (the files it names are relative to the config file,
// not to the working directory), applies it to a new Service and waits for
// want scheduled sweeps to finish. It returns the schedule digest of the
// config applied (see fileDigest) and the finished sweeps.
func scheduleFromFile(t *testing.T, dir, yml string, want int) (string, []finishCall) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "llmprobe.yml"), []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	cfg := loadIn(t, dir)
	rec := newRecorder()
	newService(t, t.TempDir(), rec).Apply(cfg)
	testutil.EventuallyWithin(t, 2*time.Minute, fmt.Sprintf("%d scheduled sweeps to finish", want), func() bool { return len(rec.calls()) == want })
	return scheduleDigest(cfg.Targets[0], cfg.Targets[0].Sweeps[0]), rec.calls()
}

// loadIn loads dir's llmprobe.yml.
func loadIn(t *testing.T, dir string) *config.Config {
	t.Helper()
	cfg, err := config.Load(filepath.Join(dir, "llmprobe.yml"))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// fileDigest loads dir's llmprobe.yml again and returns its first sweep's
// schedule digest: a reload restarts a schedule whose digest changed.
func fileDigest(t *testing.T, dir string) string {
	t.Helper()
	c := loadIn(t, dir)
	return scheduleDigest(c.Targets[0], c.Targets[0].Sweeps[0])
}

// wantDigestFollows requires that reloading dir's llmprobe.yml keeps the
// schedule digest before and that writing content to file, a file the
// config names, changes it (a reload restarts the schedule).
func wantDigestFollows(t *testing.T, dir, before, file, content string) {
	t.Helper()
	if fileDigest(t, dir) != before {
		t.Error("reloading the same files changed the schedule's digest")
	}
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if fileDigest(t, dir) == before {
		t.Errorf("a changed %s kept the schedule's digest", filepath.Base(file))
	}
}

// readRunFile reads the file name of a finished run directory.
func readRunFile(t *testing.T, dir, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readResult decodes the result.json of a finished run directory.
func readResult(t *testing.T, dir string) *sweep.Result {
	t.Helper()
	res, err := sweep.DecodeResult(bytes.NewReader(readRunFile(t, dir, artifacts.ResultFile)))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestScheduledTraceAndDatasetSweeps runs two scheduled sweeps from a
// config file loaded with another working directory: a trace replay at two
// speeds and a dataset sweep, both files named relative to the config
// file. The replay's steps are its speeds, command.txt gives the trace, and
// a changed trace file changes the schedule's digest.
func TestScheduledTraceAndDatasetSweeps(t *testing.T) {
	url, _ := simtest.Start(t, simtest.Fast())
	dir := t.TempDir()
	trace := `{"offset_ms": 0, "input_tokens": 40, "output_tokens": 4, "hash_ids": [1]}
{"offset_ms": 50, "input_tokens": 40, "output_tokens": 4, "hash_ids": [1]}
{"offset_ms": 100, "input_tokens": 24, "output_tokens": 2}
{"offset_ms": 200, "input_tokens": 40, "output_tokens": 4, "hash_ids": [1, 2]}
{"offset_ms": 300, "input_tokens": 16, "output_tokens": 3}
`
	for name, body := range map[string]string{
		"trace.jsonl": trace,
		"data.jsonl":  "{\"prompt\": \"a b c d e f\", \"max_tokens\": 3}\n{\"prompt\": \"g h i j\", \"max_tokens\": 2}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	before, calls := scheduleFromFile(t, dir, `targets:
  - name: replay
    base_url: `+url+`
    max_sweep_rate: 100
    sweeps:
      - name: trace
        every: 1h
        warmups: -1
        max_send_lag: 250ms
        max_sched_latency: 250ms
        workload:
          trace: {path: trace.jsonl, speeds: [1, 2], block_size: 16}
  - name: data
    base_url: `+url+`
    sweeps:
      - name: ds
        every: 1h
        rates: [20]
        num_prompts: 6
        warmups: -1
        max_send_lag: 250ms
        max_sched_latency: 250ms
        workload:
          dataset: {path: data.jsonl, sampling: cycle}
`, 2)
	for _, c := range calls {
		if c.result != capacity.ResultSuccess || c.last == nil {
			t.Fatalf("%s/%s: %+v", c.target, c.sweep, c)
		}
		switch c.sweep {
		case "trace":
			if len(c.last.Steps) != 2 || c.last.Steps[0].Label != "trace-speed=1" || c.last.Steps[1].Label != "trace-speed=2" {
				t.Errorf("trace steps %+v", c.last.Steps)
			}
			cmd := readRunFile(t, c.last.Dir, artifacts.CommandFile)
			if want := "--trace " + filepath.Join(dir, "trace.jsonl") + " --trace-speed 1,2 --trace-block-size 16"; !strings.Contains(string(cmd), want) ||
				strings.Contains(string(cmd), "--duration") || strings.Contains(string(cmd), "--rates") {
				t.Errorf("command.txt %q, want %q and no --duration or --rates", cmd, want)
			}
			var res struct {
				Steps []struct {
					NumPrompts int `json:"num_prompts"`
				} `json:"steps"`
			}
			if err := json.Unmarshal(readRunFile(t, c.last.Dir, artifacts.ResultFile), &res); err != nil || len(res.Steps) != 2 || res.Steps[0].NumPrompts != 5 {
				t.Errorf("result.json steps %+v (%v)", res.Steps, err)
			}
		case "ds":
			var res struct {
				Dataset *struct {
					Path   string `json:"path"`
					Used   int    `json:"used"`
					SHA256 string `json:"sha256"`
				} `json:"dataset"`
			}
			if err := json.Unmarshal(readRunFile(t, c.last.Dir, artifacts.ResultFile), &res); err != nil || res.Dataset == nil || res.Dataset.Path != filepath.Join(dir, "data.jsonl") ||
				res.Dataset.Used != 2 {
				t.Errorf("result.json dataset %+v (%v)", res.Dataset, err)
			}
		default:
			t.Errorf("unexpected sweep %+v", c)
		}
	}
	wantDigestFollows(t, dir, before, filepath.Join(dir, "trace.jsonl"), trace+`{"offset_ms": 400, "input_tokens": 16, "output_tokens": 3}`+"\n")
}

// TestStartRefusesFiles: the API's Start refuses a spec naming a file
// before it reads anything, and takes an inline schema.
func TestStartRefusesFiles(t *testing.T) {
	url, _ := simtest.Start(t, simtest.Fast())
	s := simService(t, t.TempDir(), newRecorder(), url)
	dataset := small()
	dataset.Workload = &workload.Spec{Dataset: &workload.DatasetSpec{Path: "/etc/passwd"}}
	trace := specOf(t, "{}")
	trace.Workload = &workload.Spec{Trace: &workload.TraceSpec{Path: "/etc/passwd"}}
	for _, spec := range []config.SweepSpec{dataset, trace} {
		_, err := s.Start("sim", spec)
		se, ok := err.(*config.SpecError)
		if !ok || !strings.HasPrefix(se.Key, "workload.") || !strings.Contains(err.Error(), "the sweep API reads no file") {
			t.Errorf("Start with a file: %v", err)
		}
	}
	inline := specOf(t, "rates: [20]\nnum_prompts: 4\nwarmups: -1\nmax_send_lag: 250ms\nmax_sched_latency: 250ms")
	inline.Workload = &workload.Spec{InputTokens: workload.Fixed(16), OutputTokens: workload.Fixed(8), IgnoreEOS: new(false),
		Request: &workload.Request{Features: []workload.RequestFeature{{Kind: workload.FeatureJSONSchema, Share: 1,
			Schema: map[string]any{"type": "object"}}}}}
	st, err := s.Start("sim", inline)
	if err != nil {
		t.Fatalf("an inline schema: %v", err)
	}
	if end := wait(t, s, st.ID); end.Status != StatusDone {
		t.Errorf("inline-schema sweep: %s %s", end.Status, end.Error)
	}
}

// TestScheduledSweepAnswerChecks: a scheduled sweep's answer_checks file,
// named relative to the config file, is sent once after the sweep's last
// step against a simulator that answers wrongly: result.json's answers and
// analysis.md name the failing checks with their replies, command.txt gives
// --answer-checks, and a changed file changes the schedule's digest.
func TestScheduledSweepAnswerChecks(t *testing.T) {
	sc := simtest.Fast()
	sc.Faults.WrongAnswers = 1
	url, _ := simtest.Start(t, sc)
	dir := t.TempDir()
	items := answer.Builtin().Items[:2] // number checks the simulator knows
	lines := `{"id":"add-small","prompt":"What is 17 + 25? Answer with the number only.","max_tokens":8,"number":42}
{"id":"add-large","prompt":"What is 1234 + 5678? Answer with the number only.","max_tokens":8,"number":6912}
`
	if items[0].ID != "add-small" || items[1].ID != "add-large" {
		t.Fatalf("the builtin set's first checks are %s and %s: update the test's copy", items[0].ID, items[1].ID)
	}
	set := filepath.Join(dir, "checks.jsonl")
	if err := os.WriteFile(set, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	before, calls := scheduleFromFile(t, dir, `targets:
  - name: sim
    base_url: `+url+`
    sweeps:
      - name: q
        every: 1h
        rates: [20]
        num_prompts: 6
        warmups: -1
        max_send_lag: 250ms
        max_sched_latency: 250ms
        answer_checks: checks.jsonl
`, 1)
	c := calls[0]
	if c.result != capacity.ResultSuccess || c.last == nil {
		t.Fatalf("%+v", c)
	}
	a := readResult(t, c.last.Dir).Answers
	if a == nil || a.Set != set || len(a.SHA256) != 64 || a.Checks != 2 || a.Fail != 2 || a.PassRatio == nil || *a.PassRatio != 0 {
		t.Fatalf("result.json answers %+v", a)
	}
	md := readRunFile(t, c.last.Dir, artifacts.AnalysisFile)
	for _, r := range a.Results {
		if r.Outcome != answer.Fail || r.Reply == "" || !bytes.Contains(md, []byte("| "+r.Check+" | number | fail | ")) {
			t.Errorf("check %s: %+v; analysis.md lacks its row", r.Check, r)
		}
	}
	if !bytes.Contains(md, []byte("### Answer checks")) || !bytes.Contains(md, []byte("Pass ratio: **0%**")) {
		t.Errorf("analysis.md lacks the answer checks:\n%s", md)
	}
	if cmd := readRunFile(t, c.last.Dir, artifacts.CommandFile); !strings.Contains(string(cmd), "--answer-checks "+set) {
		t.Errorf("command.txt %q lacks --answer-checks %s", cmd, set)
	}
	wantDigestFollows(t, dir, before, set, lines[:strings.Index(lines, "\n")+1])
}

// TestStartAnswerChecks: an API sweep takes the builtin set (every check
// passes against a correct simulator) and refuses a file path naming
// answer_checks, before anything is read or sent.
func TestStartAnswerChecks(t *testing.T) {
	url, _ := simtest.Start(t, simtest.Fast())
	s := simService(t, t.TempDir(), newRecorder(), url)
	spec := small()
	spec = with(t, spec, "answer_checks: /etc/passwd")
	_, err := s.Start("sim", spec)
	if se, ok := err.(*config.SpecError); !ok || se.Key != "answer_checks" || !strings.Contains(err.Error(), "the sweep API reads no file") {
		t.Fatalf("Start with a check set file: %v", err)
	}
	spec = with(t, spec, "answer_checks: "+answer.BuiltinName)
	done := startWait(t, s, spec)
	if done.Status != StatusDone {
		t.Fatalf("sweep %s: %s", done.Status, done.Error)
	}
	res, err := sweep.DecodeResult(bytes.NewReader(runFile(t, s, done.ID, artifacts.ResultFile)))
	if err != nil {
		t.Fatal(err)
	}
	if a, n := res.Answers, len(answer.Builtin().Items); a == nil || a.Set != answer.BuiltinName || a.Checks != n || a.Pass != n {
		t.Errorf("result.json answers %+v, want %d passing checks", a, n)
	}
}
