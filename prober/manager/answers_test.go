package manager_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmprobe/llmprobe/collector/probemetrics"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/answer"
	"github.com/llmprobe/llmprobe/prober/manager"
	"github.com/llmprobe/llmprobe/prober/slo"
)

// answerCollector keeps the results and records of answer checks.
type answerCollector struct {
	mu      sync.Mutex
	results []answer.Result
	records []prober.Record
	started []manager.ProbeSettings
}

func (a *answerCollector) Observe(r *prober.Record, _ slo.Verdict) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.records = append(a.records, *r)
}

func (a *answerCollector) AnswerChecked(_, _ string, r answer.Result) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.results = append(a.results, r)
}

func (a *answerCollector) ProbeStarted(_, _ string, s manager.ProbeSettings) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.started = append(a.started, s)
}
func (a *answerCollector) SLOChanged(string, string, slo.SLO, float64) {}
func (a *answerCollector) DeleteProbe(string, string)                  {}

func (a *answerCollector) snapshot() ([]answer.Result, []prober.Record, []manager.ProbeSettings) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]answer.Result(nil), a.results...), append([]prober.Record(nil), a.records...),
		append([]manager.ProbeSettings(nil), a.started...)
}

// startAnswerChecks writes checks (JSONL lines) to a set file, applies a
// target at base (with the YAML line extra) whose probe "answers" runs
// them to a new manager, and waits until every check is judged. The
// manager stops when the test ends.
func startAnswerChecks(t *testing.T, base, extra string, checks ...string) (*manager.Manager, *prometheus.Registry, *answerCollector) {
	t.Helper()
	set := filepath.Join(t.TempDir(), "set.jsonl")
	if err := os.WriteFile(set, []byte(strings.Join(checks, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := parse(t, fmt.Sprintf(`
targets:
  - name: sim
    base_url: %s
    %s
    probes:
      - name: answers
        answer_checks: {set: %s, every: 10m}
`, base, extra, set))
	obs := &answerCollector{}
	reg := prometheus.NewRegistry()
	m := manager.New(manager.Options{Observers: []manager.Observer{probemetrics.New(reg), obs}})
	t.Cleanup(m.Stop)
	if err := m.Apply(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, fmt.Sprintf("%d checks judged", len(checks)), func() bool {
		res, _, _ := obs.snapshot()
		return len(res) == len(checks)
	})
	return m, reg, obs
}

// The checks both answer tests run, and what they require of the results.
const (
	checkAdd   = `{"id":"add","prompt":"What is 2 + 2? Answer with the number only.","number":4}`
	checkWrong = `{"id":"wrong","prompt":"What is 2 + 3? Answer with the number only.","number":6}`
)

// checkAddAndWrong indexes res by check and requires that "add" passed with
// the reply 4 and "wrong" failed naming the reply 5.
func checkAddAndWrong(t *testing.T, res []answer.Result) map[string]answer.Result {
	t.Helper()
	byID := map[string]answer.Result{}
	for _, r := range res {
		byID[r.Check] = r
	}
	if r := byID["add"]; r.Outcome != answer.Pass || r.Reply != "4" || r.FinishReason != "stop" {
		t.Errorf("add: %+v", r)
	}
	if r := byID["wrong"]; r.Outcome != answer.Fail || !strings.Contains(r.Reason, `reply "5" is not 6`) {
		t.Errorf("wrong: %+v", r)
	}
	return byID
}

// TestAnswerChecksProbe runs an answer_checks probe against the simulator:
// each check is a request of the probe (observed with its latency), its
// judged result goes to the AnswerObservers (judged on the reply as it
// came: the echo passes), and a reply that echoes the target's API key
// reaches them redacted.
func TestAnswerChecksProbe(t *testing.T) {
	const key = "sk-answer-s3cr3t"
	t.Setenv("LLMPROBE_ANSWER_KEY", key)
	base, _ := simtest.Start(t, simtest.Fast())
	m, reg, obs := startAnswerChecks(t, base, "api_key_env: LLMPROBE_ANSWER_KEY",
		`{"id":"echo","prompt":"Repeat exactly, with nothing else: `+key+`","exact":"`+key+`"}`, checkAdd, checkWrong)
	for _, ts := range m.Status() {
		for _, ps := range ts.Probes {
			if ps.Rate != 3.0/600 || ps.Arrival != "in runs" || !strings.HasPrefix(ps.Workload, "answer checks ") || ps.Sent < 3 {
				t.Errorf("status %+v", ps)
			}
		}
	}
	m.Stop()
	res, recs, started := obs.snapshot()
	if len(started) != 1 || strings.Join(started[0].AnswerChecks, ",") != "echo,add,wrong" || started[0].Rate != 1.0/600 {
		t.Errorf("ProbeStarted %+v", started)
	}
	byID := checkAddAndWrong(t, res)
	if r := byID["echo"]; r.Outcome != answer.Pass || strings.Contains(r.Reply+r.Reason, key) || !strings.Contains(r.Reply, "<redacted>") {
		t.Errorf("echo: %+v", r)
	}
	if sum := sha256.Sum256([]byte(key)); byID["echo"].ReplyHash == "sha256:"+hex.EncodeToString(sum[:]) {
		t.Errorf("echo: the reply hash is the key's")
	}
	if len(recs) != 3 {
		t.Fatalf("%d records", len(recs))
	}
	for _, r := range recs {
		if r.Probe != "answers" || !r.OK() || r.TTFT <= 0 || r.E2E < r.TTFT {
			t.Errorf("record %+v", r)
		}
	}
	if n := counter(t, reg, "llmprobe_requests_total", map[string]string{"probe": "answers", "outcome": "success"}); n != 3 {
		t.Errorf("requests %v", n)
	}
	if n := counter(t, reg, "llmprobe_answer_checks_total", map[string]string{"probe": "answers", "result": "fail"}); n != 1 {
		t.Errorf("fails %v", n)
	}
}
