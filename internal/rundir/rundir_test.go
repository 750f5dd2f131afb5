package rundir

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/redact"
	"github.com/llmprobe/llmprobe/prober/slo"
	"github.com/llmprobe/llmprobe/prober/sweep"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// testConfig is a small valid sweep against target: two open-loop steps of
// 20 requests each, 32 input and 4 output tokens, the client CPU check off
// (Embedded: the simulator shares the test process).
func testConfig(t *testing.T, target string) sweep.Config {
	t.Helper()
	return sweep.Config{
		Target:          target,
		API:             "completions",
		Timeout:         30 * time.Second,
		Workload:        workload.Spec{InputTokens: workload.Fixed(32), OutputTokens: workload.Fixed(4)},
		WorkloadSource:  "flags",
		Rates:           []float64{20, 40},
		RatesText:       "20,40",
		Arrival:         "poisson",
		Burstiness:      1,
		NumPrompts:      20,
		Warmups:         1,
		Rounds:          1,
		MetricsInterval: 100 * time.Millisecond,
		IdleTimeout:     2 * time.Second,
		OutDir:          t.TempDir(),
		Name:            "test",
		Embedded:        true,
		// Tests share a small, busy machine: a scheduler hiccup must not
		// flag a step. TestJudge covers the default threshold.
		Validity: sweep.ValidityOptions{MaxSendLag: 100 * time.Millisecond, MaxSchedLatency: 100 * time.Millisecond},
	}
}

func testOptions(t *testing.T) Options {
	t.Helper()
	var logs bytes.Buffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("sweep log:\n%s", logs.String())
		}
	})
	return Options{
		Logger: log.NewLogfmtLogger(log.NewSyncWriter(&logs)),
		Args:   []string{"llmprobe", "sweep", "--rates", "20,40"},
		Help:   "usage: llmprobe sweep [<flags>]\n",
	}
}

// mustRun runs cfg into a run directory with o, failing the test on an
// error.
func mustRun(t *testing.T, cfg sweep.Config, o Options) *Outcome {
	t.Helper()
	out, err := Run(context.Background(), cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// countingHandler counts generation requests before handing them on.
type countingHandler struct {
	next http.Handler
	gen  atomic.Int64
	// override answers the paths it has instead of next.
	override map[string]http.HandlerFunc
}

func (h *countingHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/completions") {
		h.gen.Add(1)
	}
	if f := h.override[r.URL.Path]; f != nil {
		f(w, r)
		return
	}
	h.next.ServeHTTP(w, r)
}

// startWrapped serves a simulator behind a countingHandler on loopback;
// metrics, when not nil, answers /metrics.
func startWrapped(t *testing.T, cfg simulator.Config, metrics http.HandlerFunc) (string, *countingHandler) {
	t.Helper()
	sim, err := simulator.New(cfg, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	h := &countingHandler{next: sim.Handler(), override: map[string]http.HandlerFunc{}}
	if metrics != nil {
		h.override["/metrics"] = metrics
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		sim.Close()
		srv.Close()
	})
	return srv.URL, h
}

func readRecords(t *testing.T, dir string) []artifacts.RecordLine {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, artifacts.RecordsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []artifacts.RecordLine
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var l artifacts.RecordLine
		l.Record = &prober.Record{}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("records.jsonl: %v", err)
		}
		out = append(out, l)
	}
	return out
}

func readResult(t *testing.T, dir string) map[string]any {
	t.Helper()
	b := mustRead(t, filepath.Join(dir, artifacts.ResultFile))
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("result.json: %v", err)
	}
	return m
}

func verifyClean(t *testing.T, dir string) artifacts.Manifest {
	t.Helper()
	v, err := artifacts.Verify(dir, artifacts.VerifyOptions{})
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if len(v.Problems) != 0 {
		t.Fatalf("verify problems: %v", v.Problems)
	}
	m, err := artifacts.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestRunLadderArtifacts(t *testing.T) {
	url, _ := simtest.Start(t, simtest.Fast())
	cfg := testConfig(t, url)
	cfg.SLO = slo.SLO{TTFT: 5 * time.Second}
	cfg.Metadata = map[string]string{"gpu": "none"}
	cfg.Percentiles = []float64{99.9}
	out := mustRun(t, cfg, testOptions(t))
	if !out.Complete || len(out.Result.Steps) != 2 {
		t.Fatalf("complete %v, %d steps", out.Complete, len(out.Result.Steps))
	}
	m := verifyClean(t, out.Dir)
	if !m.Complete {
		t.Error("manifest says incomplete")
	}
	var names []string
	for _, f := range m.Files {
		names = append(names, f.Path)
	}
	for _, want := range []string{artifacts.CommandFile, artifacts.HelpFile, artifacts.ResultFile, artifacts.RecordsFile,
		artifacts.ErrorsFile, artifacts.MetricsBeforeFile, artifacts.MetricsDuringFile, artifacts.MetricsAfterFile,
		artifacts.AnalysisFile, artifacts.GoodputPlotFile, artifacts.LatencyPlotFile} {
		if !strings.Contains(strings.Join(names, " "), want) {
			t.Errorf("manifest lacks %s (has %v)", want, names)
		}
	}
	fp := m.Fingerprint
	if fp.Target.Model != "llmprobe-sim" || fp.Target.Tokenizer != workload.MethodServerTokenize || len(fp.Steps) != 2 ||
		fp.Workload.SHA256 == "not-recorded" || fp.Load.Mode != sweep.ModeOpen || fp.Target.EngineConfig == nil {
		t.Errorf("fingerprint incomplete: %+v", fp)
	}
	if v := fp.Load.Validity; v == nil || v.MaxSendLagMS != 100 || v.MaxErrorRate != sweep.DefaultMaxErrorRate || v.CPUChecked || v.GoodputRatio != sweep.DefaultGoodputRatio {
		t.Errorf("fingerprint validity thresholds %+v", v)
	}
	if fp.Steps[0].Requests != 20 || fp.Steps[1].Requests != 20 || fp.Load.Search != nil {
		t.Errorf("fingerprint steps %+v search %+v", fp.Steps, fp.Load.Search)
	}
	if mb := readFile(t, out.Dir, artifacts.ManifestFile); !strings.Contains(mb, `"fresh_prefix": false`) {
		t.Error("manifest lacks load.fresh_prefix")
	}

	recs := readRecords(t, out.Dir)
	if len(recs) != 40 {
		t.Fatalf("records.jsonl has %d lines, want 40", len(recs))
	}
	for _, r := range recs {
		if !r.OK() || r.CompletionTokens != 4 || r.PromptTokens != 32 || r.Scheduled.IsZero() {
			t.Fatalf("bad record %+v", r.Record)
		}
	}
	if strings.Contains(readFile(t, out.Dir, artifacts.RecordsFile), `"prompt"`) {
		t.Error("records.jsonl holds prompt text without --save-prompts")
	}

	res := readResult(t, out.Dir)
	steps := res["steps"].([]any)
	s0 := steps[0].(map[string]any)
	for _, k := range []string{"date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id", "num_prompts",
		"gpu", "request_rate", "burstiness", "max_concurrency", "duration", "completed", "failed", "total_input_tokens",
		"total_output_tokens", "request_throughput", "request_goodput", "output_throughput", "total_token_throughput",
		"max_output_tokens_per_s", "max_concurrent_requests", "mean_ttft_ms", "median_ttft_ms", "std_ttft_ms", "p99_ttft_ms",
		"p99.9_ttft_ms", "mean_tpot_ms", "p99_tpot_ms", "mean_itl_ms", "p99_itl_ms", "mean_e2el_ms", "p99_e2el_ms",
		"achieved_request_rate", "offered_request_rate", "goodput_ratio", "server", "validity", "token_distributions",
		"finish_reasons", "failed_by_class", "p99_reliability", "latencies", "queue_times", "rtfx", "keep_up_pct", "attempt"} {
		if _, ok := s0[k]; !ok {
			t.Errorf("step lacks key %q", k)
		}
	}
	// vLLM's non-detailed per-request arrays, in seconds, and rtfx (audio
	// only) as 0.
	if l, q := s0["latencies"].([]any), s0["queue_times"].([]any); len(l) != 20 || len(q) != 20 || l[0].(float64) <= 0 || l[0].(float64) > 30 {
		t.Errorf("latencies %v queue_times %v", s0["latencies"], s0["queue_times"])
	}
	if s0["rtfx"].(float64) != 0 || s0["keep_up_pct"].(float64) > 100 {
		t.Errorf("rtfx %v keep_up_pct %v", s0["rtfx"], s0["keep_up_pct"])
	}
	// The schedule is normalized as vllm bench serve's: the step offers
	// exactly its rate.
	if s0["offered_request_rate"].(float64) != 20 || s0["arrival_window_s"].(float64) != 1 {
		t.Errorf("offered %v over %v s, want 20 req/s over 1 s", s0["offered_request_rate"], s0["arrival_window_s"])
	}
	if s0["completed"].(float64) != 20 || s0["total_input_tokens"].(float64) != 640 || s0["request_rate"].(float64) != 20 {
		t.Errorf("step 0: completed %v input %v rate %v", s0["completed"], s0["total_input_tokens"], s0["request_rate"])
	}
	srv := s0["server"].(map[string]any)
	if srv["status"] != "recorded" || srv["prompt_tokens"].(float64) != 640 || srv["generation_tokens"].(float64) != 80 {
		t.Errorf("server deltas: %v", srv)
	}
	v := s0["validity"].(map[string]any)
	// A late client on a busy machine is flagged client-saturated, with
	// its evidence: the right answer there.
	if v["valid"] != true && !clientSaturated(t, out, out.Result.Steps[0]) || v["idle"].(map[string]any)["status"] != sweep.IdleProven {
		t.Errorf("validity: %v", v)
	}
	for _, phase := range []string{"before-warmup", "before"} {
		if !strings.Contains(readFile(t, out.Dir, artifacts.MetricsBeforeFile), `"phase":"`+phase+`"`) {
			t.Errorf("metrics-before.txt lacks phase %s", phase)
		}
	}
	if !strings.Contains(readFile(t, out.Dir, artifacts.MetricsDuringFile), "# scrape ") {
		t.Error("metrics-during.txt holds no scrape")
	}
	if !strings.Contains(readFile(t, out.Dir, artifacts.AnalysisFile), "## Conclusion (this environment and workload only)\n\nSLO: ") {
		t.Error("analysis.md lacks a verdict")
	}

	// A tampered file fails verification.
	p := filepath.Join(out.Dir, artifacts.ResultFile)
	b, _ := os.ReadFile(p)
	if err := os.WriteFile(p, bytes.Replace(b, []byte(`"completed": 20`), []byte(`"completed": 21`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	ver, err := artifacts.Verify(out.Dir, artifacts.VerifyOptions{})
	if err != nil || len(ver.Problems) != 1 || ver.Problems[0].Kind != artifacts.Changed {
		t.Errorf("tampered result.json: problems %v err %v, want one changed", ver.Problems, err)
	}
}

// roundRate is the sweep's rounding of the throughput probe's estimate to
// three significant digits (the search's first rate).
func roundRate(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v))-2)
	return math.Round(v/p) * p
}

func readFile(t *testing.T, dir, name string) string {
	t.Helper()
	return string(mustRead(t, filepath.Join(dir, name)))
}

// TestRunAutoKnee runs --rates auto against a simulator whose capacity is
// known from its parameters: a throughput probe estimates it, and the knee
// must land within ±10 % of it in at most 8 steps. Constant arrivals keep
// the offered rate exact, and the TTFT SLO (five times the unloaded TTFT)
// catches the queue that builds as soon as the rate passes the capacity.
func TestRunAutoKnee(t *testing.T) {
	testutil.Slow(t)
	if testing.Short() {
		t.Skip("about 20 s of load")
	}
	if testutil.RaceEnabled {
		// The race detector slows client and simulator alike, and the
		// capacity the search must find moves with the machine's load;
		// the search itself is raced in prober/sweep's tests.
		t.Skip("a capacity measured from timing: not under the race detector")
	}
	sc := simulator.DefaultConfig()
	sc.MaxNumSeqs = 4
	in, out := 32, 16
	capacity := sc.Capacity(in, out)
	url, _ := simtest.Start(t, sc)
	cfg := testConfig(t, url)
	cfg.Workload = workload.Spec{InputTokens: workload.Fixed(in), OutputTokens: workload.Fixed(out)}
	cfg.Rates, cfg.Auto, cfg.RatesText = nil, true, "auto"
	cfg.Arrival = "constant"
	cfg.NumPrompts, cfg.Duration, cfg.MinPrompts = 0, 1500*time.Millisecond, 3
	cfg.SLO = slo.SLO{TTFT: 100 * time.Millisecond}
	res := mustRun(t, cfg, testOptions(t))
	k := res.Result.Knee
	t.Logf("capacity %.2f req/s; knee %+v; %d steps", capacity, k, len(res.Result.Steps))
	for _, s := range res.Result.Steps {
		t.Logf("  %s: offered %.2f ratio %.3f ttft p99 %.1f ms valid %v", s.Label, s.Stats.OfferedRate, s.Stats.GoodputRatio, s.Stats.TTFT.P99, s.Validity.Valid)
	}
	if !k.Found && res.Result.SearchEnd == sweep.SearchInvalid {
		// A machine too busy for the client: the search stops at a level
		// it could not measure. Right when each invalid attempt there was
		// client-saturated, with its evidence.
		last := res.Result.Steps[len(res.Result.Steps)-1]
		for _, s := range res.Result.Steps {
			if s.Level == last.Level && !s.Validity.Valid && !clientSaturated(t, res, s) {
				t.Errorf("search stopped at %s: step %s invalid: %v", k.Stop, s.Label, s.Validity.Reasons)
			}
		}
		return
	}
	if !k.Found && k.Bound != nil {
		// A machine too busy for the client: the search stepped down
		// from a level it could not measure and states a bound. Right
		// when every invalid attempt there was client-saturated, with its
		// evidence, and the bound is a level that passed.
		for _, s := range res.Result.Steps {
			if s.Level == k.Bound.Unmeasurable && !s.Validity.Valid && !clientSaturated(t, res, s) {
				t.Errorf("bound %s: step %s invalid: %v", k.Stop, s.Label, s.Validity.Reasons)
			}
		}
		if !k.Bound.Client || k.Bound.AtLeast != k.Low || k.Bound.Unmeasurable <= k.Low || res.Result.SearchEnd != sweep.SearchUnmeasurable {
			t.Errorf("bound %+v, knee %+v, search end %q", k.Bound, k, res.Result.SearchEnd)
		}
		t.Logf("a bound on this machine: %s", k.Bound.Text("req/s"))
		return
	}
	if !k.Found && k.NonMonotonic && k.Low > 0 && k.Upper > k.Low {
		// The in-process server on a busy machine: a level that passed
		// failed its confirmation, and the knee is not stated.
		t.Logf("no knee stated on this machine: %s", k.Reason)
		return
	}
	if !k.Found {
		t.Fatalf("knee not found: %s", k.Reason)
	}
	// The simulator shares this process: on a busy machine it serves less
	// than its model's capacity. A knee below it is then right when the
	// first failing level, measured on valid steps, offered less than that
	// capacity and failed (keep-up or the TTFT SLO): what was measured.
	starved := false
	for _, l := range res.Result.Levels {
		if l.Level == k.Upper && !l.Passes && l.ValidRounds > 0 && k.Upper < capacity {
			starved = true
			t.Logf("level %s fails below the model's capacity (keep-up %.3f, TTFT p99 %.1f ms): the server could not serve it on this machine",
				l.Label, l.GoodputRatio.Mean, l.TTFTP99MS.Mean)
		}
	}
	if d := k.Level - capacity; d > 0.1*capacity || d < -0.1*capacity && !starved {
		t.Errorf("knee %.2f req/s, want within 10%% of the capacity %.2f", k.Level, capacity)
	}
	// An invalid step (a late client on a busy machine) is rerun: that
	// rerun is the load's, not the search's, so it is not counted.
	n := len(res.Result.Steps)
	for _, s := range res.Result.Steps {
		if !s.Validity.Valid {
			n--
		}
	}
	// A server that cannot serve its own capacity moves the knee between
	// steps: the search may then need its whole budget. One more: the
	// repeat of the first failing level (--knee-repeats 2).
	if n > 9 && !starved {
		t.Errorf("%d steps besides reruns of invalid ones, want <= 9", n)
	}
	if !starved && (res.Result.SearchEnd != sweep.SearchBracketed || strings.Contains(strings.Join(res.Result.Notes, " "), "stopped early")) {
		t.Errorf("search end %q, notes %v", res.Result.SearchEnd, res.Result.Notes)
	}
	// The search started from the throughput probe's estimate, or below
	// it at what the client drove without a flag of its own.
	p := res.Result.Probe
	if p == nil || p.EstimateReqPerS < capacity/2 || p.EstimateReqPerS > 2*capacity || p.StartRate != roundRate(min(p.EstimateReqPerS, p.ClientCeilingReqPerS)) ||
		res.Result.Steps[0].Level != p.StartRate || len(p.Levels) == 0 {
		t.Errorf("throughput probe %+v", p)
	}
	if _, ok := readResult(t, res.Dir)["throughput_probe"]; !ok {
		t.Error("result.json lacks throughput_probe")
	}
	if !strings.Contains(readFile(t, res.Dir, artifacts.AnalysisFile), "### Throughput probe") {
		t.Error("analysis.md lacks the throughput probe")
	}
	m := verifyClean(t, res.Dir)
	if m.Fingerprint.Load.Search == nil || m.Fingerprint.Load.Search.Start != "probe" {
		t.Errorf("fingerprint search %+v", m.Fingerprint.Load.Search)
	}
}

func TestRunClosedLoop(t *testing.T) {
	url, _ := simtest.Start(t, simtest.Fast())
	cfg := testConfig(t, url)
	cfg.Rates, cfg.RatesText = nil, ""
	cfg.Concurrency = []int{1, 3}
	cfg.NumPrompts = 12
	res := mustRun(t, cfg, testOptions(t))
	if res.Result.Mode != sweep.ModeClosed || res.Result.KneeUnit != "concurrency" || len(res.Result.Steps) != 2 {
		t.Fatalf("mode %s unit %s steps %d", res.Result.Mode, res.Result.KneeUnit, len(res.Result.Steps))
	}
	for i, n := range []int{1, 3} {
		s := res.Result.Steps[i]
		if s.Mode != sweep.ModeClosed || s.Concurrency != n || s.Stats.Completed != 12 {
			t.Errorf("step %d: mode %s concurrency %d completed %d", i, s.Mode, s.Concurrency, s.Stats.Completed)
		}
		if s.Stats.MaxConcurrentRequests > n {
			t.Errorf("step %d: %d requests in flight at once, more than the %d workers", i, s.Stats.MaxConcurrentRequests, n)
		}
	}
	if got := res.Result.Steps[1].Stats.MaxConcurrentRequests; got < 2 {
		t.Errorf("concurrency 3 never had more than %d requests in flight", got)
	}
	s0 := readResult(t, res.Dir)["steps"].([]any)[1].(map[string]any)
	if s0["request_rate"] != "inf" || s0["max_concurrency"].(float64) != 3 {
		t.Errorf("closed loop step keys: request_rate %v max_concurrency %v", s0["request_rate"], s0["max_concurrency"])
	}
	if k := res.Result.Knee; k.Low != 3 || k.Found || k.Level != 0 {
		t.Errorf("knee %+v, want every level passing up to 3", k)
	}
	verifyClean(t, res.Dir)
}

func TestRunRounds(t *testing.T) {
	url, _ := simtest.Start(t, simtest.Fast())
	cfg := testConfig(t, url)
	cfg.Rates, cfg.RatesText, cfg.Rounds, cfg.NumPrompts = []float64{50}, "50", 3, 10
	res := mustRun(t, cfg, testOptions(t))
	if len(res.Result.Steps) != 3 || len(res.Result.Levels) != 1 {
		t.Fatalf("%d steps, %d levels", len(res.Result.Steps), len(res.Result.Levels))
	}
	for i, s := range res.Result.Steps {
		if s.Round != i+1 || s.Label != "rate=50/round="+string(rune('1'+i)) {
			t.Errorf("step %d: round %d label %q", i, s.Round, s.Label)
		}
	}
	l := res.Result.Levels[0]
	// Whether the rounds were valid and kept up depends on how busy the
	// machine is (TestJudge and the knee tests decide those rules); the
	// level must count them as its steps say.
	valid := 0
	for _, s := range res.Result.Steps {
		if s.Validity.Valid {
			valid++
		}
	}
	if l.Rounds != 3 || l.ValidRounds != valid || l.Throughput.Min > l.Throughput.Mean || l.Throughput.Max < l.Throughput.Mean {
		t.Errorf("level %+v (%d valid steps)", l, valid)
	}
	// Rounds draw different arrivals and prompts.
	recs := readRecords(t, res.Dir)
	if recs[0].Scheduled.Sub(res.Result.Steps[0].Start.Local()) == recs[10].Scheduled.Sub(res.Result.Steps[1].Start.Local()) {
		t.Error("round 2 repeats round 1's first arrival offset")
	}
}

func TestRunBurstAndMaxConcurrency(t *testing.T) {
	tests := []struct {
		name  string
		setup func(c *sweep.Config)
		check func(t *testing.T, res *Outcome)
	}{
		{
			name: "rate inf sends everything at once and is left out of the knee",
			setup: func(c *sweep.Config) {
				c.Rates, c.RatesText, c.NumPrompts = []float64{math.Inf(1)}, "inf", 8
			},
			check: func(t *testing.T, res *Outcome) {
				s := res.Result.Steps[0]
				if s.Mode != sweep.ModeBurst || s.Stats.Completed != 8 {
					t.Fatalf("mode %s completed %d", s.Mode, s.Stats.Completed)
				}
				if s.Stats.SendLag.Max > 200 {
					t.Errorf("burst send lag max %.1f ms: not at once", s.Stats.SendLag.Max)
				}
				if s.Stats.MaxConcurrentRequests < 4 {
					t.Errorf("burst had at most %d requests in flight", s.Stats.MaxConcurrentRequests)
				}
				if res.Result.Mode != sweep.ModeBurst || res.Result.Levels[0].Outcome.Valid || res.Result.Knee.Level != 0 {
					t.Errorf("burst used for the knee: %+v", res.Result.Knee)
				}
				if !strings.Contains(strings.Join(res.Result.Notes, " "), "burst, not an open loop") {
					t.Errorf("notes lack the burst warning: %v", res.Result.Notes)
				}
			},
		},
		{
			name: "rate with max concurrency queues arrivals and reports the wait",
			setup: func(c *sweep.Config) {
				c.Rates, c.RatesText, c.NumPrompts, c.MaxConcurrency = []float64{200}, "200", 20, 1
			},
			check: func(t *testing.T, res *Outcome) {
				s := res.Result.Steps[0]
				if s.Mode != sweep.ModeBoth || s.Stats.MaxConcurrentRequests != 1 {
					t.Fatalf("mode %s, %d in flight", s.Mode, s.Stats.MaxConcurrentRequests)
				}
				if s.Stats.QueueTime.Max <= 0 || s.Stats.AchievedRate >= s.Stats.ScheduledRate {
					t.Errorf("queue max %.2f ms, achieved %.1f vs scheduled %.1f req/s", s.Stats.QueueTime.Max, s.Stats.AchievedRate, s.Stats.ScheduledRate)
				}
				// A late client on a busy machine is flagged; the wait for
				// the one slot never is (clientSaturated recounts without it).
				if !s.Validity.Valid && !clientSaturated(t, res, s) {
					t.Errorf("queue wait counted as client lag: %v", s.Validity.Reasons)
				}
				st := readResult(t, res.Dir)["steps"].([]any)[0].(map[string]any)
				if _, ok := st["mean_client_queue_time_ms"]; !ok {
					t.Error("result lacks mean_client_queue_time_ms")
				}
			},
		},
	}
	url, _ := simtest.Start(t, simtest.Fast())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t, url)
			tt.setup(&cfg)
			res := mustRun(t, cfg, testOptions(t))
			tt.check(t, res)
			verifyClean(t, res.Dir)
		})
	}
}

func TestRunServerMetrics(t *testing.T) {
	busy := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{engine=\"0\"} 1\n" +
			"# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{engine=\"0\"} 0\n"))
	}
	missing := func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }
	tests := []struct {
		name    string
		metrics http.HandlerFunc
		check   func(t *testing.T, res *Outcome)
	}{
		{
			name: "a server that stays busy fails the idle proof", metrics: busy,
			check: func(t *testing.T, res *Outcome) {
				s := res.Result.Steps[0]
				if s.Validity.Idle.Status != sweep.IdleNotIdle || s.Validity.Idle.Running != 1 || s.Validity.Valid ||
					!strings.Contains(strings.Join(s.Validity.Flags, ","), sweep.FlagNotIdle) {
					t.Errorf("idle proof %+v flags %v", s.Validity.Idle, s.Validity.Flags)
				}
				if s.Validity.Idle.Waited < 0.3 {
					t.Errorf("waited only %.2fs for idleness", s.Validity.Idle.Waited)
				}
			},
		},
		{
			name: "a server without /metrics: not-recorded, the sweep still runs", metrics: missing,
			check: func(t *testing.T, res *Outcome) {
				s := res.Result.Steps[0]
				// client-saturated depends on the load beside the test.
				flags := slices.DeleteFunc(slices.Clone(s.Validity.Flags), func(f string) bool { return f == sweep.FlagClientSaturated })
				if s.Stats.Completed != 20 || len(flags) > 0 {
					t.Errorf("completed %d valid %v %v", s.Stats.Completed, s.Validity.Valid, s.Validity.Reasons)
				}
				if s.Validity.Idle.Status != sweep.IdleNotRecorded || s.Server.Status != "not-recorded" {
					t.Errorf("idle %+v server %s", s.Validity.Idle, s.Server.Status)
				}
				b, _ := json.Marshal(s.Server)
				if !strings.Contains(string(b), `"prompt_tokens":"not-recorded"`) {
					t.Errorf("server figures not marked not-recorded: %s", b)
				}
				idle := readResult(t, res.Dir)["steps"].([]any)[0].(map[string]any)["validity"].(map[string]any)["idle"].(map[string]any)
				if _, ok := idle["running"]; ok || idle["status"] != sweep.IdleNotRecorded {
					t.Errorf("a not-recorded idle proof writes values: %v", idle)
				}
				if !strings.Contains(readFile(t, res.Dir, artifacts.MetricsBeforeFile), `"not_recorded"`) {
					t.Error("metrics-before.txt does not say not-recorded")
				}
				if !strings.Contains(readFile(t, res.Dir, artifacts.AnalysisFile), "/metrics could not be read") {
					t.Error("analysis.md does not say /metrics could not be read")
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url, _ := startWrapped(t, simtest.Fast(), tt.metrics)
			cfg := testConfig(t, url)
			cfg.Rates, cfg.RatesText = []float64{50}, "50"
			cfg.IdleTimeout = 400 * time.Millisecond
			res := mustRun(t, cfg, testOptions(t))
			tt.check(t, res)
			verifyClean(t, res.Dir)
		})
	}
}

func TestRunCalibratedWithoutTokenize(t *testing.T) {
	url, h := startWrapped(t, simtest.Fast(), nil)
	h.override["/tokenize"] = func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }
	cfg := testConfig(t, url)
	cfg.Rates, cfg.RatesText = []float64{50}, "50"
	cfg.API = "chat"
	res := mustRun(t, cfg, testOptions(t))
	m := verifyClean(t, res.Dir)
	if m.Fingerprint.Target.Tokenizer != workload.MethodCalibrated {
		t.Errorf("tokenizer %q, want %q", m.Fingerprint.Target.Tokenizer, workload.MethodCalibrated)
	}
	in := res.Result.Steps[0].Stats.InputTokens
	if in.N != 20 || math.Abs(in.P50-32) > 6 {
		t.Errorf("server-reported prompt tokens %+v, want about 32", in)
	}
	if res.Result.Backend != "openai-chat" {
		t.Errorf("backend %q", res.Result.Backend)
	}
}

func TestRunPrefixCache(t *testing.T) {
	url, _ := simtest.Start(t, simtest.Fast())
	for _, fresh := range []bool{false, true} {
		cfg := testConfig(t, url)
		cfg.Workload.PrefixTokens = 64
		cfg.FreshPrefix = fresh
		cfg.Warmups = 2
		cfg.Rates, cfg.RatesText, cfg.NumPrompts = []float64{50, 60}, "50,60", 10
		res := mustRun(t, cfg, testOptions(t))
		s0, s1 := res.Result.Steps[0].Server, res.Result.Steps[1].Server
		if !s0.WarmupPrefixCacheHitRate.Known || !s0.PrefixCacheHitRate.Known {
			t.Fatalf("fresh=%v: hit rates not recorded: %+v", fresh, s0)
		}
		// The first step's warmups meet a cold cache; its measured requests
		// reuse the prefix the warmups left.
		if s0.PrefixCacheHitRate.Value <= s0.WarmupPrefixCacheHitRate.Value || s0.PrefixCacheHitRate.Value < 0.4 {
			t.Errorf("fresh=%v step 0: warm %.2f, cold %.2f", fresh, s0.PrefixCacheHitRate.Value, s0.WarmupPrefixCacheHitRate.Value)
		}
		// The second step's warmups hit the first step's prefix unless it
		// is fresh. With a fresh prefix only warmups after the first can hit
		// (the new prefix their predecessors left, depending on timing): at
		// most (warmups-1)/warmups of the prefix share of the prompt. Without
		// it every warmup hits: the whole prefix share (64 of 96 tokens).
		cold := s1.WarmupPrefixCacheHitRate.Value
		share := 64.0 / (64 + 32)
		maxFresh := float64(cfg.Warmups-1) / float64(cfg.Warmups) * share
		if fresh && cold > maxFresh+0.01 || !fresh && cold < share-0.1 {
			t.Errorf("fresh=%v: step 1 warmup hit rate %.2f (step 0: %.2f)", fresh, cold, s0.WarmupPrefixCacheHitRate.Value)
		}
		if g := res.Result.Steps[1].PrefixGeneration; fresh != (g == 2) {
			t.Errorf("fresh=%v: prefix generation %d", fresh, g)
		}
		// The shared prefix explains every hit, and no prompt repeated.
		for _, st := range res.Result.Steps {
			if slices.Contains(st.Validity.Flags, sweep.FlagUnintendedPrefixCache) || st.DistinctPrompts != int64(st.Stats.Requests) {
				t.Errorf("fresh=%v step %d: flags %v %v, %d distinct prompts of %d", fresh, st.Index, st.Validity.Flags,
					st.Validity.Reasons, st.DistinctPrompts, st.Stats.Requests)
			}
		}
	}
}

func TestRunInterrupted(t *testing.T) {
	url, _ := simtest.Start(t, simtest.Fast())
	cfg := testConfig(t, url)
	cfg.Rates, cfg.RatesText, cfg.NumPrompts = []float64{10, 20}, "10,20", 30 // 3 s per step
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(1500*time.Millisecond, cancel)
	res, err := Run(ctx, cfg, testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	if res.Complete || len(res.Result.Steps) != 1 || !res.Result.Steps[0].Interrupted {
		t.Fatalf("complete %v, %d steps", res.Complete, len(res.Result.Steps))
	}
	m := verifyClean(t, res.Dir)
	if m.Complete || !strings.Contains(m.InterruptedReason, "interrupted during step 0") {
		t.Errorf("manifest complete %v reason %q", m.Complete, m.InterruptedReason)
	}
	s := res.Result.Steps[0]
	if s.Validity.Valid || !strings.Contains(strings.Join(s.Validity.Flags, ","), sweep.FlagInterrupted) {
		t.Errorf("interrupted step flags %v", s.Validity.Flags)
	}
	if n := len(readRecords(t, res.Dir)); n == 0 || n > 30 {
		t.Errorf("records.jsonl has %d lines", n)
	}
	if r := readResult(t, res.Dir); r["complete"] != false {
		t.Errorf("result.json complete = %v", r["complete"])
	}
}

func TestRunRefusesBeforeLoad(t *testing.T) {
	// A port where connections are refused (held for the whole test).
	dead := "http://" + testutil.RefusedAddr(t)

	url, h := startWrapped(t, simtest.Fast(), nil)
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A /v1/models without vLLM's max_model_len: the length check falls
	// back to /tokenize's.
	bareModels := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"llmprobe-sim","object":"model"}]}`))
	}
	tests := []struct {
		name     string
		setup    func(c *sweep.Config)
		models   http.HandlerFunc
		wantErr  error
		wantMsg  string
		wantFlag bool
	}{
		{name: "unreachable target", setup: func(c *sweep.Config) { c.Target = dead }, wantErr: sweep.ErrUnreachable, wantMsg: "connection refused"},
		{name: "longer than max_model_len", setup: func(c *sweep.Config) {
			c.Workload = workload.Spec{InputTokens: workload.Fixed(8000), OutputTokens: workload.Fixed(100), PrefixTokens: 100}
		}, wantFlag: true, wantMsg: "Workload.InputTokens: Workload.PrefixTokens 100 + Workload.InputTokens 8000 + Workload.OutputTokens 100 = 8200 tokens per request, more than the model's max_model_len 8192 (from GET /v1/models)"},
		{name: "longer than /tokenize's max_model_len", models: bareModels, setup: func(c *sweep.Config) {
			c.Workload = workload.Spec{InputTokens: workload.Fixed(9000), OutputTokens: workload.Fixed(1)}
		}, wantFlag: true, wantMsg: "max_model_len 8192 (from POST /tokenize)"},
		{name: "unknown model", setup: func(c *sweep.Config) { c.Model = "gpt-9" }, wantMsg: `model "gpt-9" is not served`},
		{name: "out dir is a file", setup: func(c *sweep.Config) { c.OutDir = filepath.Join(notDir, "runs") }, wantErr: artifacts.ErrUnwritable},
		{name: "invalid config", setup: func(c *sweep.Config) { c.Rates = []float64{0} }, wantMsg: "Rates: rate must be >= 0.01", wantFlag: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t, url)
			tt.setup(&cfg)
			if tt.models != nil {
				h.override["/v1/models"] = tt.models
				defer delete(h.override, "/v1/models")
			}
			before := h.gen.Load()
			res, err := Run(context.Background(), cfg, testOptions(t))
			if err == nil || res != nil {
				t.Fatalf("Run = %v, %v; want an error and no outcome", res, err)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("err = %q, want it to contain %q", err, tt.wantMsg)
			}
			if sweep.IsFieldError(err) != tt.wantFlag {
				t.Errorf("flag error %v, want %v (%v)", sweep.IsFieldError(err), tt.wantFlag, err)
			}
			if n := h.gen.Load() - before; n != 0 {
				t.Errorf("%d generation requests sent before failing", n)
			}
			if entries, _ := os.ReadDir(cfg.OutDir); len(entries) != 0 {
				t.Errorf("out dir holds %d entries", len(entries))
			}
		})
	}
}

// allFiles returns the content of every file of a run directory, by name.
func allFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		out[filepath.ToSlash(rel)] = readFile(t, dir, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRunRedactsSecrets(t *testing.T) {
	// An opaque key: only the literal replacement can catch it.
	const key = "opaque-key-0123456789"
	// echoKey refuses the request, echoing its credentials and the key.
	echoKey := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"message":"rejected Authorization: %s; key %s is unknown"}}`, r.Header.Get("Authorization"), key)
	}
	t.Run("a server echoing the credentials in a preflight error", func(t *testing.T) {
		url, h := startWrapped(t, simtest.Fast(), nil)
		h.override["/tokenize"] = echoKey
		cfg := testConfig(t, url)
		cfg.APIKey = key
		out, err := Run(context.Background(), cfg, testOptions(t))
		// Prompt sizing is part of the preflight: nothing is created.
		if err == nil || out != nil {
			t.Fatalf("Run = %+v, %v; want a preflight error and no run directory", out, err)
		}
		if strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "<redacted>") || !strings.Contains(err.Error(), "401") {
			t.Errorf("error not redacted or unclassified: %v", err)
		}
		if entries, _ := os.ReadDir(cfg.OutDir); len(entries) != 0 {
			t.Errorf("out dir holds %d entries, want none", len(entries))
		}
	})
	t.Run("a server echoing the credentials in request errors", func(t *testing.T) {
		url, h := startWrapped(t, simtest.Fast(), nil)
		h.override["/v1/completions"] = echoKey
		cfg := testConfig(t, url)
		cfg.APIKey = key
		cfg.Rates, cfg.RatesText, cfg.NumPrompts = []float64{50}, "50", 5
		out := mustRun(t, cfg, testOptions(t))
		verifyClean(t, out.Dir)
		errs := readFile(t, out.Dir, artifacts.ErrorsFile)
		if !strings.Contains(errs, "http_4xx") || !strings.Contains(errs, "401") {
			t.Errorf("errors-redacted.jsonl lacks the 401s:\n%s", errs)
		}
		for name, content := range allFiles(t, out.Dir) {
			if strings.Contains(content, key) {
				t.Errorf("%s holds the API key", name)
			}
		}
	})
	t.Run("a server echoing the credentials on /metrics", func(t *testing.T) {
		url, _ := startWrapped(t, simtest.Fast(), func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			fmt.Fprintf(w, "vllm:num_requests_running{model_name=\"m\"} 0\nvllm:num_requests_waiting{model_name=\"m\"} 0\n"+
				"echo_info{authorization=%q,key=%q} 1\n", r.Header.Get("Authorization"), key)
		})
		cfg := testConfig(t, url)
		cfg.APIKey = key
		cfg.Rates, cfg.RatesText, cfg.NumPrompts = []float64{50}, "50", 5
		out := mustRun(t, cfg, testOptions(t))
		verifyClean(t, out.Dir)
		files := allFiles(t, out.Dir)
		if !strings.Contains(files[artifacts.MetricsBeforeFile], "echo_info") {
			t.Fatalf("metrics-before.txt lacks the echoing series:\n%s", files[artifacts.MetricsBeforeFile])
		}
		for name, content := range files {
			if strings.Contains(content, key) {
				t.Errorf("%s holds the API key", name)
			}
		}
	})
	t.Run("secret metadata values", func(t *testing.T) {
		url, _ := simtest.Start(t, simtest.Fast())
		cfg := testConfig(t, url)
		cfg.Rates, cfg.RatesText, cfg.NumPrompts = []float64{50}, "50", 5
		md, err := sweep.ParseMetadata([]string{"hf_token=abcdef123", "note=Bearer sk-abcdefgh", "gpu=h100"})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Metadata = md
		out := mustRun(t, cfg, testOptions(t))
		verifyClean(t, out.Dir)
		for name, content := range allFiles(t, out.Dir) {
			if strings.Contains(content, "abcdef123") || strings.Contains(content, "sk-abcdefgh") {
				t.Errorf("%s holds a secret metadata value", name)
			}
		}
		if r := readResult(t, out.Dir); r["hf_token"] != "<redacted>" || r["gpu"] != "h100" {
			t.Errorf("result.json metadata hf_token=%v gpu=%v", r["hf_token"], r["gpu"])
		}
	})
}

func TestRunScrubsPromptEcho(t *testing.T) {
	url, h := startWrapped(t, simtest.Fast(), nil)
	var mu sync.Mutex
	var prompts []string
	h.override["/v1/completions"] = func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Prompt string `json:"prompt"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		mu.Lock()
		prompts = append(prompts, req.Prompt)
		mu.Unlock()
		// A piece from the middle: the client itself cuts echoes of the
		// prompt's start and end.
		echo := req.Prompt[len(req.Prompt)/4 : len(req.Prompt)/2]
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": "cannot serve prompt '" + echo + "': bad request"}})
		_, _ = w.Write(b)
	}
	cfg := testConfig(t, url)
	cfg.Rates, cfg.RatesText, cfg.NumPrompts = []float64{50}, "50", 5
	cfg.Workload.InputTokens = workload.Fixed(200)
	out := mustRun(t, cfg, testOptions(t))
	verifyClean(t, out.Dir)
	recs := readFile(t, out.Dir, artifacts.RecordsFile)
	errs := readFile(t, out.Dir, artifacts.ErrorsFile)
	if !strings.Contains(errs, redact.PromptEcho) || !strings.Contains(recs, redact.PromptEcho) || !strings.Contains(errs, "cannot serve prompt") {
		t.Errorf("the echo was not replaced:\n%s", errs)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(prompts) < 5 {
		t.Fatalf("server saw %d prompts", len(prompts))
	}
	for _, p := range prompts {
		piece := p[len(p)/4+5 : len(p)/4+25]
		if strings.Contains(recs, piece) || strings.Contains(errs, piece) {
			t.Errorf("prompt text %q written without --save-prompts", piece)
		}
	}
}

// TestRunSearchRerunsInvalid makes the first attempt at a level invalid
// (the server reads busy while the first step waits for idleness): the
// search reruns the level, and the rerun counts for the knee.
func TestRunSearchRerunsInvalid(t *testing.T) {
	url, h := startWrapped(t, simtest.Fast(), nil)
	sim := h.next
	h.override["/metrics"] = func(w http.ResponseWriter, r *http.Request) {
		// Busy between the first step's warmup and its load (one
		// generation request seen so far), idle (the simulator's own
		// metrics) otherwise.
		if h.gen.Load() == 1 {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			_, _ = w.Write([]byte("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{engine=\"0\"} 3\n" +
				"# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{engine=\"0\"} 0\n"))
			return
		}
		sim.ServeHTTP(w, r)
	}
	cfg := testConfig(t, url)
	cfg.Rates, cfg.Auto, cfg.RatesText = nil, true, "auto"
	cfg.Search = sweep.SearchOptions{Start: 40, MaxSteps: 2}
	cfg.IdleTimeout = 300 * time.Millisecond
	out := mustRun(t, cfg, testOptions(t))
	steps := out.Result.Steps
	if len(steps) != 2 {
		t.Fatalf("%d steps, want 2", len(steps))
	}
	if steps[0].Validity.Valid || steps[0].Attempt != 1 || !slices.Contains(steps[0].Validity.Flags, sweep.FlagNotIdle) {
		t.Errorf("step 0: valid %v attempt %d flags %v", steps[0].Validity.Valid, steps[0].Attempt, steps[0].Validity.Flags)
	}
	// A late client on a busy machine can make the rerun invalid too
	// (client-saturated, with its evidence): the level then has no valid
	// round and bounds no knee.
	rerunSaturated := clientSaturated(t, out, steps[1])
	if !steps[1].Validity.Valid && !rerunSaturated || steps[1].Attempt != 2 || steps[1].Level != 40 || steps[1].Label != "rate=40/attempt=2" {
		t.Errorf("step 1: valid %v attempt %d level %v label %q", steps[1].Validity.Valid, steps[1].Attempt, steps[1].Level, steps[1].Label)
	}
	if rerunSaturated {
		if l := out.Result.Levels; len(l) != 1 || l[0].ValidRounds != 0 || l[0].Passes {
			t.Errorf("levels %+v, want one level without a valid round", l)
		}
		if k := out.Result.Knee; k.Low != 0 || k.Found {
			t.Errorf("knee %+v, want none bounded", k)
		}
	} else {
		l := out.Result.Levels
		if len(l) != 1 || l[0].ValidRounds != 1 {
			t.Fatalf("levels %+v", l)
		}
		if out.Result.SearchEnd != sweep.SearchMaxSteps || !strings.Contains(strings.Join(out.Result.Notes, " "), "2 steps ran") {
			t.Errorf("search end %q notes %v", out.Result.SearchEnd, out.Result.Notes)
		}
		// The rerun counts for the knee: it bounds it from below when it
		// passes. The simulator shares this process: on a machine too busy
		// for it to serve 40 req/s the level fails on keep-up (what was
		// measured) and bounds the knee from above.
		k := out.Result.Knee
		switch {
		case l[0].Passes:
			if k.Low != 40 || k.Found || k.Level != 0 {
				t.Errorf("knee %+v", k)
			}
		case l[0].GoodputRatio.Mean >= sweep.DefaultGoodputRatio:
			t.Errorf("level %+v fails though it kept up", l[0])
		default:
			t.Logf("level %s kept up %.3f of its rate on this machine, and fails", l[0].Label, l[0].GoodputRatio.Mean)
			if k.Low != 0 || k.Upper != 40 || k.Found {
				t.Errorf("knee %+v, want below the failing 40", k)
			}
		}
	}
	m := verifyClean(t, out.Dir)
	if s := m.Fingerprint.Load.Search; s == nil || s.Start != "40" || s.MaxSteps != 2 || s.Retries != sweep.DefaultSearchRetries {
		t.Errorf("fingerprint search %+v", s)
	}
}

func TestRunUnscaledArrivals(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a sweep")
	}
	url, _ := simtest.Start(t, simtest.Fast())
	cfg := testConfig(t, url)
	cfg.Rates, cfg.RatesText = []float64{40}, "40"
	cfg.Unscaled = true
	out := mustRun(t, cfg, testOptions(t))
	if len(out.Result.Steps) != 1 || out.Result.Steps[0].Stats.Completed != 20 {
		t.Fatalf("want one step of 20 completed requests, got %+v", out.Result.Steps)
	}
	m := verifyClean(t, out.Dir)
	if !m.Fingerprint.Load.Unscaled {
		t.Error("the manifest does not record unscaled arrivals")
	}
}

// TestRunStepByteCap: a step whose records reach MaxStepBytes stops
// sending (far fewer requests than planned reach the server), is flagged
// byte-cap, the sweep stops cleanly after it (no error, complete false,
// reason "byte cap") and the run directory verifies.
func TestRunStepByteCap(t *testing.T) {
	url, h := startWrapped(t, simtest.Fast(), nil)
	cfg := testConfig(t, url)
	cfg.Rates, cfg.RatesText, cfg.NumPrompts = []float64{100, 200}, "100,200", 400 // 4 s, then 2 s
	cfg.MaxStepBytes = 4 << 10                                                     // a few records
	res := mustRun(t, cfg, testOptions(t))
	if res.Complete || len(res.Result.Steps) != 1 {
		t.Fatalf("complete %v, %d steps: want the sweep to stop after the capped step", res.Complete, len(res.Result.Steps))
	}
	s := res.Result.Steps[0]
	if s.Validity.Valid || !slices.Contains(s.Validity.Flags, sweep.FlagByteCap) || s.Interrupted {
		t.Errorf("capped step: valid %v flags %v interrupted %v", s.Validity.Valid, s.Validity.Flags, s.Interrupted)
	}
	if n := h.gen.Load(); n >= 200 {
		t.Errorf("the server received %d generation requests: the step did not stop sending at the cap", n)
	}
	recs := readRecords(t, res.Dir)
	if len(recs) == 0 || len(recs) >= 200 || len(recs) != s.Stats.Requests {
		t.Errorf("records.jsonl has %d lines, the step %d requests", len(recs), s.Stats.Requests)
	}
	m := verifyClean(t, res.Dir)
	t.Logf("%d requests sent, %d records, flags %v, reason %q", h.gen.Load(), len(recs), s.Validity.Flags, m.InterruptedReason)
	if m.Complete || !strings.HasPrefix(m.InterruptedReason, "byte cap: ") || !strings.Contains(m.InterruptedReason, "4096") {
		t.Errorf("manifest complete %v reason %q", m.Complete, m.InterruptedReason)
	}
}
