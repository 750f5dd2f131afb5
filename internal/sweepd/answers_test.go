package sweepd

import (
	"bytes"
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
)

// readResult decodes the result.json of a finished run directory.
func readResult(t *testing.T, dir string) *sweep.Result {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, artifacts.ResultFile))
	if err != nil {
		t.Fatal(err)
	}
	res, err := sweep.DecodeResult(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestScheduledSweepAnswerChecks: a scheduled sweep's answer_checks file,
// named relative to the config file, is sent once after the sweep's last
// step against a simulator that answers wrongly: result.json's answers and
// analysis.md name the failing checks with their replies, command.txt gives
// --answer-checks, and a changed file changes the schedule's digest.
func TestScheduledSweepAnswerChecks(t *testing.T) {
	sc := fastSim()
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
	cfgFile := filepath.Join(dir, "llmprobe.yml")
	yml := `targets:
  - name: sim
    base_url: ` + url + `
    sweeps:
      - name: q
        every: 1h
        rates: [20]
        num_prompts: 6
        warmups: -1
        max_send_lag: 250ms
        max_sched_latency: 250ms
        answer_checks: checks.jsonl
`
	if err := os.WriteFile(cfgFile, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir()) // the file is not in the working directory
	cfg, err := config.Load(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	s := newService(t, t.TempDir(), rec)
	s.Apply(cfg)
	testutil.EventuallyWithin(t, 2*time.Minute, "the scheduled sweep to finish", func() bool { return len(rec.calls()) == 1 })
	c := rec.calls()[0]
	if c.result != capacity.ResultSuccess || c.last == nil {
		t.Fatalf("%+v", c)
	}
	a := readResult(t, c.last.Dir).Answers
	if a == nil || a.Set != set || len(a.SHA256) != 64 || a.Checks != 2 || a.Fail != 2 || a.PassRatio == nil || *a.PassRatio != 0 {
		t.Fatalf("result.json answers %+v", a)
	}
	md, err := os.ReadFile(filepath.Join(c.last.Dir, artifacts.AnalysisFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range a.Results {
		if r.Outcome != answer.Fail || r.Reply == "" || !bytes.Contains(md, []byte("| "+r.Check+" | number | fail | ")) {
			t.Errorf("check %s: %+v; analysis.md lacks its row", r.Check, r)
		}
	}
	if !bytes.Contains(md, []byte("### Answer checks")) || !bytes.Contains(md, []byte("Pass ratio: **0%**")) {
		t.Errorf("analysis.md lacks the answer checks:\n%s", md)
	}
	cmd, err := os.ReadFile(filepath.Join(c.last.Dir, artifacts.CommandFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cmd), "--answer-checks "+set) {
		t.Errorf("command.txt %q lacks --answer-checks %s", cmd, set)
	}

	// The set's digest is the schedule's: a changed file restarts it.
	digest := func() string {
		t.Helper()
		c, err := config.Load(cfgFile)
		if err != nil {
			t.Fatal(err)
		}
		return scheduleDigest(c.Targets[0], c.Targets[0].Sweeps[0])
	}
	before := digest()
	if digest() != before {
		t.Error("reloading the same file changed the schedule's digest")
	}
	if err := os.WriteFile(set, []byte(lines[:strings.Index(lines, "\n")+1]), 0o600); err != nil {
		t.Fatal(err)
	}
	if digest() == before {
		t.Error("a changed check set kept the schedule's digest")
	}
}

// TestStartAnswerChecks: an API sweep takes the builtin set (every check
// passes against a correct simulator) and refuses a file path naming
// answer_checks, before anything is read or sent.
func TestStartAnswerChecks(t *testing.T) {
	url, _ := simtest.Start(t, fastSim())
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
