package manager_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/manager"
)

// simWith serves a simulator of sc with some paths overridden.
func simWith(t *testing.T, sc simulator.Config, override map[string]http.HandlerFunc) string {
	t.Helper()
	sim, err := simulator.New(sc, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	h := sim.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f, ok := override[r.URL.Path]; ok {
			f(w, r)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { srv.Close(); sim.Close() })
	return srv.URL
}

// tooLongProbe probes base with a probe drawing 64 or 300 input tokens and
// 16 output tokens (300 + 16 cannot fit a 256-token model): no record of
// the first 20 fails, and too_long skips are counted. It returns the
// registry and those records; the manager stops when the test ends.
func tooLongProbe(t *testing.T, target, base string) (*prometheus.Registry, []event) {
	t.Helper()
	_, reg, col := start(t, parse(t, fmt.Sprintf(`
targets:
  - name: %s
    base_url: %s
    probes:
      - name: p
        rate: 40
        workload:
          input_tokens: {dist: choice, choices: [{value: 64, weight: 1}, {value: 300, weight: 1}]}
          output_tokens: {dist: fixed, value: 16}
`, target, base)))
	evs := col.waitFor(t, 10*time.Second, "20 records", atLeast(20))
	for _, e := range evs {
		failedUnlessCanceled(t, e.Record)
	}
	if got := counter(t, reg, "llmprobe_requests_skipped_total", map[string]string{"reason": "too_long"}); got == 0 {
		t.Error("no too_long skips counted: the guard is off")
	}
	return reg, evs
}

func TestStatusDoesNotWaitForAHangingTarget(t *testing.T) {
	// A server that accepts connections and never answers.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	accepted := make(chan struct{})
	first := make(chan struct{})  // discovery connected and is waiting
	gaveUp := make(chan struct{}) // discovery timed out and closed its connection
	var readers sync.WaitGroup
	go func() {
		defer close(accepted)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			if len(conns) == 0 {
				close(first)
				readers.Add(1)
				go func() {
					defer readers.Done()
					_, _ = io.Copy(io.Discard, c) // ends when the client closes
					close(gaveUp)
				}()
			}
			conns = append(conns, c)
		}
	}()
	defer func() {
		l.Close()
		<-accepted
		for _, c := range conns {
			c.Close()
		}
		readers.Wait()
	}()
	col := newCollector()
	m := newManager(prometheus.NewRegistry(), col)
	defer m.Stop()
	if err := m.Apply(context.Background(), parse(t, fmt.Sprintf("targets: [{name: hang, base_url: http://%s, probes: [{name: p, rate: 20}]}]", l.Addr()))); err != nil {
		t.Fatal(err)
	}
	<-first // discovery is now stuck in its HTTP call
	done := make(chan struct{})
	go func() { m.Status(); close(done) }()
	// Status must return while discovery is still stuck, not once
	// discovery gives up (its own timeout, 10 s): an ordering, not a time.
	select {
	case <-done:
	case <-gaveUp:
		t.Fatal("Status blocked behind discovery of a hanging target")
	}
}

func TestTokenizeFallbackRedactionAndClasses(t *testing.T) {
	const key = "sk-leak-me-42"
	t.Setenv("LLMPROBE_TEST_KEY", key)
	for _, tc := range []struct {
		name      string
		tokenize  http.HandlerFunc
		wantClass prober.ErrorClass
	}{
		{"422 from a foreign /tokenize falls back to calibration", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, `{"error":"Unprocessable"}`, http.StatusUnprocessableEntity)
		}, prober.ClassNone},
		{"200 in another shape falls back to calibration", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, `{"tokens":"not vllm"}`)
		}, prober.ClassNone},
		{"401 echoing the key is a redacted http_4xx", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "bad credentials: "+r.Header.Get("Authorization"), http.StatusUnauthorized)
		}, prober.ClassHTTP4xx},
		{"503 is http_5xx", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
		}, prober.ClassHTTP5xx},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := simWith(t, fastSim(), map[string]http.HandlerFunc{"/tokenize": tc.tokenize})
			m, _, col := start(t, parse(t, fmt.Sprintf("targets: [{name: s, base_url: %s, api_key_env: LLMPROBE_TEST_KEY, probes: [{name: p, rate: 20}]}]", base)))
			evs := col.waitFor(t, 10*time.Second, "5 records", atLeast(5))
			for _, e := range evs[:5] {
				r := e.Record
				if r.Error != tc.wantClass {
					t.Errorf("class %q (%s), want %q", r.Error, r.ErrorMessage, tc.wantClass)
				}
				if strings.Contains(r.ErrorMessage, key) {
					t.Errorf("API key in error message %q", r.ErrorMessage)
				}
				if r.OK() && (r.PromptTokens < r.InputTokens-2 || r.PromptTokens > r.InputTokens+2) {
					t.Errorf("calibrated prompt has %d tokens, want about %d", r.PromptTokens, r.InputTokens)
				}
				if !r.OK() && !r.NotSent {
					t.Errorf("a request failing in prompt sizing is marked as sent")
				}
			}
			if s := fmt.Sprintf("%+v", m.Status()); strings.Contains(s, key) {
				t.Error("API key on the landing page data")
			}
		})
	}
}

func TestRequestIDsAreUniqueAcrossProbes(t *testing.T) {
	base := simWith(t, fastSim(), nil)
	_, _, col := start(t, parse(t, fmt.Sprintf("targets: [{name: s, base_url: %s, probes: [{name: a, rate: 30}, {name: b, rate: 30}]}]", base)))
	evs := col.waitFor(t, 10*time.Second, "40 records", atLeast(40))
	seen := map[string]string{}
	for _, e := range evs {
		if p, dup := seen[e.Record.RequestID]; dup {
			t.Fatalf("request id %s used by probes %s and %s", e.Record.RequestID, p, e.Record.Probe)
		}
		seen[e.Record.RequestID] = e.Record.Probe
	}
}

func TestReplacedTargetDropsSeriesOfRemovedProbes(t *testing.T) {
	base := simWith(t, fastSim(), nil)
	m, reg, col := start(t, parse(t, fmt.Sprintf("targets: [{name: s, base_url: %s, probes: [{name: keep, rate: 20}, {name: gone, rate: 20}]}]", base)))
	col.waitFor(t, 10*time.Second, "records of both", func(evs []event) bool {
		n := map[string]int{}
		for _, e := range evs {
			n[e.Record.Probe]++
		}
		return n["keep"] > 0 && n["gone"] > 0
	})
	before := counter(t, reg, "llmprobe_requests_total", map[string]string{"probe": "keep"})
	// A new timeout replaces the target (new clients); probe "gone" is removed.
	if err := m.Apply(context.Background(), parse(t, fmt.Sprintf("targets: [{name: s, base_url: %s, timeout: 90s, probes: [{name: keep, rate: 20}]}]", base))); err != nil {
		t.Fatal(err)
	}
	noProbeSeries(t, reg, "gone")
	if after := counter(t, reg, "llmprobe_requests_total", map[string]string{"probe": "keep"}); after < before {
		t.Errorf("counter of the continuing probe went back from %v to %v", before, after)
	}
}

func TestSLOChangeIsAppliedInPlace(t *testing.T) {
	base := simWith(t, fastSim(), nil)
	yml := func(ttft string) string {
		return fmt.Sprintf("targets: [{name: s, base_url: %s, slo: {ttft: %s}, probes: [{name: p, rate: 20}]}]", base, ttft)
	}
	m, reg, col := start(t, parse(t, yml("800ms")))
	col.waitFor(t, 10*time.Second, "a record", func(evs []event) bool { return len(evs) > 0 })
	pr := m.RunningProbe("s", "p")
	if err := m.Apply(context.Background(), parse(t, yml("1ms"))); err != nil {
		t.Fatal(err)
	}
	if same := m.RunningProbe("s", "p") == pr; pr == nil || !same {
		t.Error("an SLO change restarted the probe")
	}
	if got := counter(t, reg, "llmprobe_slo_threshold_seconds", map[string]string{"slo": "ttft"}); got != 0.001 {
		t.Errorf("ttft threshold %v after reload, want 0.001", got)
	}
	n := len(col.snapshot())
	evs := col.waitFor(t, 10*time.Second, "records after the change", func(evs []event) bool { return len(evs) > n+5 })
	// The simulator's steps are 2 ms, but one that starts behind schedule
	// on a busy machine is shortened to keep the engine's cadence, so a
	// TTFT can be under 1 ms: such a request is good, every other one not.
	bad := 0
	for _, e := range evs[n+2:] {
		if want := e.Record.OK() && e.Record.TTFT <= time.Millisecond; e.Verdict.Good != want {
			t.Errorf("request %s good %v under a 1ms TTFT SLO (ttft %v), want %v", e.Record.RequestID, e.Verdict.Good, e.Record.TTFT, want)
		}
		if !e.Verdict.Good {
			bad++
		}
	}
	if bad == 0 {
		t.Errorf("no request of %d judged bad under a 1ms TTFT SLO", len(evs)-n-2)
	}
}

func TestTooLongArrivalsAreSkippedNotSent(t *testing.T) {
	sc := fastSim()
	sc.MaxModelLen = 256
	_, evs := tooLongProbe(t, "s", simWith(t, sc, nil))
	for _, e := range evs {
		if e.Record.PromptTokens > 64 {
			t.Errorf("a too-long prompt was sent (%d tokens)", e.Record.PromptTokens)
		}
	}
}

func TestInputTokensIncludeTheSharedPrefix(t *testing.T) {
	base := simWith(t, fastSim(), nil)
	col := newCollector()
	m := manager.New(manager.Options{Observers: []manager.Observer{col}}) // the collector only: no metrics
	defer m.Stop()
	if err := m.Apply(context.Background(), parse(t, fmt.Sprintf(`
targets:
  - name: s
    base_url: %s
    probes:
      - name: p
        rate: 40
        workload:
          prefix_tokens: 32
          input_tokens: {dist: fixed, value: 64}
          output_tokens: {dist: fixed, value: 4}
`, base))); err != nil {
		t.Fatal(err)
	}
	evs := col.waitFor(t, 10*time.Second, "5 successful records", atLeastOK(5))
	for _, e := range evs {
		r := e.Record
		if !r.OK() {
			continue
		}
		if r.InputTokens != 96 || r.PromptTokens != r.InputTokens {
			t.Errorf("record %s: input_tokens %d (want prefix 32 + input 64), server counted %d", r.RequestID, r.InputTokens, r.PromptTokens)
		}
	}
}

func TestTooLongUsesTokenizeMaxModelLenWhenModelsLacksIt(t *testing.T) {
	sc := fastSim()
	sc.MaxModelLen = 256
	tooLongProbe(t, "s", simWith(t, sc, map[string]http.HandlerFunc{
		"/v1/models": func(w http.ResponseWriter, r *http.Request) { // no max_model_len: only /tokenize says it
			fmt.Fprint(w, `{"object":"list","data":[{"id":"llmprobe-sim","object":"model"}]}`)
		},
	}))
}
