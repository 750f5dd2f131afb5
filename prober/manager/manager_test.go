package manager_test

import (
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/llmprobe/llmprobe/collector/probemetrics"
	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	ltestutil "github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/internal/web"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/manager"
	"github.com/llmprobe/llmprobe/prober/scrape"
	"github.com/llmprobe/llmprobe/prober/slo"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// event is one finished request as the collector saw it.
type event struct {
	Record  *prober.Record
	Verdict slo.Verdict
}

// collector gathers the records the manager hands out: it is an observer
// of finished requests only (manager.Observer).
type collector struct {
	mu   sync.Mutex
	evs  []event
	cond chan struct{}
}

func newCollector() *collector { return &collector{cond: make(chan struct{}, 1)} }

func (c *collector) Observe(r *prober.Record, v slo.Verdict) {
	c.mu.Lock()
	cp := *r
	c.evs = append(c.evs, event{Record: &cp, Verdict: v})
	c.mu.Unlock()
	select {
	case c.cond <- struct{}{}:
	default:
	}
}

func (c *collector) snapshot() []event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]event(nil), c.evs...)
}

// waitFor waits until pred holds for the collected records.
func (c *collector) waitFor(t *testing.T, d time.Duration, what string, pred func([]event) bool) []event {
	t.Helper()
	deadline := time.After(d)
	for {
		evs := c.snapshot()
		if pred(evs) {
			return evs
		}
		select {
		case <-c.cond:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("timed out waiting for %s; have %d records", what, len(evs))
		}
	}
}

type configT = config.Config

func parseConfig(yml string) (*config.Config, error) { return config.Parse([]byte(yml), "test.yml") }

func parse(t *testing.T, yml string) *config.Config {
	t.Helper()
	c, err := parseConfig(yml)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return c
}

func fastSim() simulator.Config {
	c := simulator.DefaultConfig()
	c.StepBase = 2 * time.Millisecond
	c.StepPerSeq = 10 * time.Microsecond
	c.StepPerPrefillToken = time.Microsecond
	return c
}

func newManager(reg prometheus.Registerer, c *collector) *manager.Manager {
	return manager.New(manager.Options{Observers: []manager.Observer{probemetrics.New(reg), c}})
}

// start applies cfg to a new manager observed by a fresh registry's probe
// metrics and a collector. The manager stops when the test ends (Stop is
// idempotent: a test may stop it sooner).
func start(t *testing.T, cfg *config.Config) (*manager.Manager, *prometheus.Registry, *collector) {
	t.Helper()
	reg := prometheus.NewRegistry()
	col := newCollector()
	m := newManager(reg, col)
	t.Cleanup(m.Stop)
	if err := m.Apply(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	return m, reg, col
}

// oneProbe parses a config of one target, name at base (api: api unless
// ""), with one probe at 40 req/s of in fixed input and out fixed output
// tokens whose requests carry features (YAML flow mappings, one a line).
func oneProbe(t *testing.T, name, base, api, probe string, in, out int, features ...string) *config.Config {
	t.Helper()
	yml := fmt.Sprintf("targets:\n  - name: %s\n    base_url: %s\n", name, base)
	if api != "" {
		yml += "    api: " + api + "\n"
	}
	yml += fmt.Sprintf("    probes:\n      - name: %s\n        rate: 40\n        workload:\n"+
		"          input_tokens: {dist: fixed, value: %d}\n          output_tokens: {dist: fixed, value: %d}\n", probe, in, out)
	if len(features) > 0 {
		yml += "          request:\n            features:\n"
		for _, f := range features {
			yml += "              - " + f + "\n"
		}
	}
	return parse(t, yml)
}

// atLeast is a waitFor predicate: n records or more.
func atLeast(n int) func([]event) bool { return func(evs []event) bool { return len(evs) >= n } }

// atLeastOK is a waitFor predicate: n successful records or more.
func atLeastOK(n int) func([]event) bool {
	return func(evs []event) bool {
		ok := 0
		for _, e := range evs {
			if e.Record.OK() {
				ok++
			}
		}
		return ok >= n
	}
}

// runFor starts cfg (see start), waits up to 30 s for n records, stops the
// manager and returns the registry and every record, the ones Stop
// canceled included.
func runFor(t *testing.T, cfg *config.Config, n int) (*prometheus.Registry, []event) {
	t.Helper()
	m, reg, col := start(t, cfg)
	col.waitFor(t, 30*time.Second, fmt.Sprintf("%d records", n), atLeast(n))
	m.Stop()
	return reg, col.snapshot()
}

// loadIn writes yml to llmprobe.yml in dir and loads it: the paths it
// names are relative to dir.
func loadIn(t *testing.T, dir, yml string) *config.Config {
	t.Helper()
	path := filepath.Join(dir, "llmprobe.yml")
	if err := os.WriteFile(path, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// failedUnlessCanceled reports a record that failed for another reason
// than the manager's Stop canceling it.
func failedUnlessCanceled(t *testing.T, r *prober.Record) {
	t.Helper()
	if !r.OK() && r.Error != prober.ClassCanceled {
		t.Errorf("record %s failed: %s: %s", r.RequestID, r.Error, r.ErrorMessage)
	}
}

// succeeded reports the records that failed (see failedUnlessCanceled)
// and returns the successful ones.
func succeeded(t *testing.T, evs []event) []*prober.Record {
	t.Helper()
	var out []*prober.Record
	for _, e := range evs {
		failedUnlessCanceled(t, e.Record)
		if e.Record.OK() {
			out = append(out, e.Record)
		}
	}
	return out
}

// noProbeSeries fails the test if a series of reg still carries probe.
func noProbeSeries(t *testing.T, reg *prometheus.Registry, probe string) {
	t.Helper()
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			for _, lp := range mt.GetLabel() {
				if lp.GetName() == "probe" && lp.GetValue() == probe {
					t.Fatalf("series of the removed probe remain: %s", mf.GetName())
				}
			}
		}
	}
}

// counter scrapes reg over real HTTP through the daemon's /metrics handler
// and returns the sum of the series of name matching labels (histograms:
// their sample count).
func counter(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	srv := httptest.NewServer(web.NewHandler(web.Options{Gatherer: reg}))
	defer srv.Close()
	snap, err := scrape.Fetch(context.Background(), srv.Client(), srv.URL+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if snap.Has(name+"_bucket") || snap.Has(name+"_count") {
		name += "_count"
	}
	v, ok := snap.Sum(name, labels)
	if !ok {
		t.Fatalf("no series %s%v on /metrics", name, labels)
	}
	return v
}

func TestDaemonProbesSimulatorAndMetricsAgreeWithRecords(t *testing.T) {
	base, _ := simtest.Start(t, fastSim())
	m, reg, col := start(t, parse(t, fmt.Sprintf(`
targets:
  - name: sim
    base_url: %s
    api: completions
    slo: {ttft: 800ms, tpot: 50ms}
    probes:
      - name: small
        rate: 40
        arrival: poisson
        max_concurrency: 8
        workload:
          input_tokens: {dist: fixed, value: 64}
          output_tokens: {dist: fixed, value: 16}
      - name: chatty
        rate: 20
        arrival: constant
        workload:
          input_tokens: {dist: uniform, value: 32, range_ratio: 0.5}
          output_tokens: {dist: fixed, value: 4}
`, base)))
	if !m.Ready() {
		t.Fatal("not ready after Apply")
	}
	col.waitFor(t, 20*time.Second, "30 records of each probe", func(evs []event) bool {
		n := map[string]int{}
		for _, e := range evs {
			n[e.Record.Probe]++
		}
		return n["small"] >= 30 && n["chatty"] >= 15
	})
	m.Stop()
	evs := col.snapshot()

	for _, probe := range []string{"small", "chatty"} {
		var ok, good, ttft, promptTok, genTok int
		for _, e := range evs {
			r := e.Record
			if r.Probe != probe {
				continue
			}
			if r.OK() {
				ok++
				ttft++
				if r.Model != "llmprobe-sim" || r.CompletionTokens == 0 || r.TokensCounted {
					t.Errorf("record %s: model %q, completion tokens %d (counted %v)", r.RequestID, r.Model, r.CompletionTokens, r.TokensCounted)
				}
				if r.PromptTokens != r.InputTokens {
					t.Errorf("record %s: server counted %d prompt tokens, workload asked %d", r.RequestID, r.PromptTokens, r.InputTokens)
				}
			}
			failedUnlessCanceled(t, r)
			if e.Verdict.Good {
				good++
			}
			promptTok += r.PromptTokens
			genTok += r.CompletionTokens
		}
		lbl := map[string]string{"target": "sim", "probe": probe}
		if got := counter(t, reg, "llmprobe_requests_total", map[string]string{"target": "sim", "probe": probe, "outcome": "success"}); int(got) != ok {
			t.Errorf("%s: requests_total{success} = %v, records say %d", probe, got, ok)
		}
		if got := counter(t, reg, "llmprobe_good_requests_total", lbl); int(got) != good {
			t.Errorf("%s: good_requests_total = %v, records say %d", probe, got, good)
		}
		if got := counter(t, reg, "llmprobe_time_to_first_token_seconds", lbl); int(got) != ttft {
			t.Errorf("%s: TTFT histogram count = %v, records say %d", probe, got, ttft)
		}
		if got := counter(t, reg, "llmprobe_generation_tokens_total", lbl); int(got) != genTok {
			t.Errorf("%s: generation_tokens_total = %v, records say %d", probe, got, genTok)
		}
		if got := counter(t, reg, "llmprobe_prompt_tokens_total", lbl); int(got) != promptTok {
			t.Errorf("%s: prompt_tokens_total = %v, records say %d", probe, got, promptTok)
		}
		if ok == 0 || good == 0 {
			t.Errorf("%s: %d ok and %d good requests; want some of each", probe, ok, good)
		}
	}
	if got := counter(t, reg, "llmprobe_slo_threshold_seconds", map[string]string{"target": "sim", "probe": "small", "slo": "ttft"}); got != 0.8 {
		t.Errorf("slo threshold ttft = %v, want 0.8", got)
	}
	if got := counter(t, reg, "llmprobe_target_info", map[string]string{"target": "sim", "model": "llmprobe-sim"}); got != 1 {
		t.Errorf("target_info = %v", got)
	}
	if n, err := testutil.GatherAndCount(reg, "llmprobe_requests_in_flight"); err != nil || n == 0 {
		t.Errorf("in-flight gauge: %d series, %v", n, err)
	}
	st := m.Status()
	if len(st) != 1 || len(st[0].Probes) != 2 || st[0].Model != "llmprobe-sim" || len(st[0].Probes[0].Recent) == 0 {
		t.Errorf("status = %+v", st)
	}
}

func TestReloadCancelsChangedProbesAndKeepsOthers(t *testing.T) {
	sc := fastSim()
	base, sim := simtest.Start(t, sc)
	yml := func(rate int) string {
		return fmt.Sprintf(`
targets:
  - name: sim
    base_url: %s
    probes:
      - name: steady
        rate: 20
      - name: changing
        rate: %d
        max_concurrency: 4
`, base, rate)
	}
	m, reg, col := start(t, parse(t, yml(10)))
	col.waitFor(t, 10*time.Second, "both probes running", func(evs []event) bool {
		seen := map[string]bool{}
		for _, e := range evs {
			seen[e.Record.Probe] = e.Record.OK() || seen[e.Record.Probe]
		}
		return seen["steady"] && seen["changing"]
	})
	// Make generation hang, so requests are in flight when the reload comes:
	// wait until hung requests fill the changing probe's max_concurrency (an
	// arrival is skipped), rather than for a fixed time.
	skipped0 := probeStatus(t, m, "sim", "changing").Skipped
	f := simulator.DefaultFaults()
	f.Hang = 1
	sim.SetFaults(f)
	ltestutil.Eventually(t, "hung requests filling max_concurrency of the changing probe", func() bool {
		return probeStatus(t, m, "sim", "changing").Skipped > skipped0
	})
	if err := m.Apply(context.Background(), parse(t, yml(11))); err != nil {
		t.Fatal(err)
	}
	evs := col.waitFor(t, 10*time.Second, "canceled records of the changed probe", func(evs []event) bool {
		for _, e := range evs {
			if e.Record.Probe == "changing" && e.Record.Error == prober.ClassCanceled {
				return true
			}
		}
		return false
	})
	for _, e := range evs {
		if e.Record.Probe == "steady" && e.Record.Error == prober.ClassCanceled {
			t.Errorf("unchanged probe had a canceled request %s", e.Record.RequestID)
		}
	}
	if got := counter(t, reg, "llmprobe_requests_total", map[string]string{"probe": "changing", "outcome": "canceled"}); got == 0 {
		t.Error("canceled requests of the changed probe were not counted")
	}
	// Removing a probe deletes its series.
	sim.SetFaults(simulator.DefaultFaults())
	if err := m.Apply(context.Background(), parse(t, fmt.Sprintf("targets: [{name: sim, base_url: %s, probes: [{name: steady, rate: 20}]}]", base))); err != nil {
		t.Fatal(err)
	}
	noProbeSeries(t, reg, "changing")
}

func TestDownEndpointGivesClassifiedFailuresAndKeepsProbing(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	_, reg, col := start(t, parse(t, fmt.Sprintf("targets: [{name: down, base_url: http://%s, probes: [{name: p, rate: 20}]}]", addr)))
	evs := col.waitFor(t, 10*time.Second, "10 failed records", atLeast(10))
	for _, e := range evs {
		if e.Record.Error != prober.ClassConnect {
			t.Errorf("record %s: class %q (%s), want connect", e.Record.RequestID, e.Record.Error, e.Record.ErrorMessage)
		}
	}
	if got := counter(t, reg, "llmprobe_requests_total", map[string]string{"outcome": "connect"}); got < 10 {
		t.Errorf("connect failures counted: %v", got)
	}
}

func TestSecretNeverInStatusOrErrors(t *testing.T) {
	const key = "sk-very-secret-123"
	base, sim := simtest.Start(t, fastSim())
	f := simulator.DefaultFaults()
	f.HTTP500 = 1
	sim.SetFaults(f)
	t.Setenv("LLMPROBE_TEST_KEY", key)
	m, _, col := start(t, parse(t, fmt.Sprintf("targets: [{name: s, base_url: %s, api_key_env: LLMPROBE_TEST_KEY, probes: [{name: p, rate: 20}]}]", base)))
	evs := col.waitFor(t, 10*time.Second, "5 records", atLeast(5))
	for _, e := range evs {
		if e.Record.Error != prober.ClassHTTP5xx {
			t.Errorf("class %q, want http_5xx", e.Record.Error)
		}
		if strings.Contains(e.Record.ErrorMessage, key) {
			t.Errorf("key in error message %q", e.Record.ErrorMessage)
		}
	}
	if s := fmt.Sprintf("%+v", m.Status()); strings.Contains(s, key) {
		t.Error("key in status")
	}
}

// probeStatus returns the status of one probe.
func probeStatus(t *testing.T, m *manager.Manager, target, probe string) manager.ProbeStatus {
	t.Helper()
	for _, ts := range m.Status() {
		if ts.Name != target {
			continue
		}
		for _, ps := range ts.Probes {
			if ps.Name == probe {
				return ps
			}
		}
	}
	t.Fatalf("no probe %s/%s in the status", target, probe)
	return manager.ProbeStatus{}
}
