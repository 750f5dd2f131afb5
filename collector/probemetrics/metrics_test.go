package probemetrics

import (
	"bytes"
	"flag"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/manager"
	"github.com/llmprobe/llmprobe/prober/slo"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.prom")

const ms = time.Millisecond

// observation is one Observe call of the fixed set.
type observation struct {
	rec      prober.Record
	good     bool
	violated []string
}

// verdict builds the verdict of a good request or one violating the named
// SLOs.
func verdict(good bool, violated ...string) slo.Verdict {
	v := slo.Verdict{Good: good}
	for _, name := range violated {
		v.Violated = v.Violated.With(slo.Kind(slices.Index(slo.Names, name)))
	}
	return v
}

// fixture is the fixed set of Records behind the golden exposition. The
// expected values in the tests below are computed by hand from it.
func fixture() []observation {
	obs := []observation{
		{ // 4 tokens: TTFT 120ms (text in the first event), gaps 20/30/25ms, E2E 195ms, TPOT 25ms.
			// Its usage reported 48 of its 64 prompt tokens cached; it is turn 2
			// of a session, answered by turn 1's replica.
			rec: prober.Record{
				Target: "sim", Probe: "small", RequestID: "req-1", SendLag: 200 * time.Microsecond,
				SessionID: "s-1", Turn: 2, SessionReplica: prober.SessionSameReplica,
				TTFT: 120 * ms, TTFTText: 120 * ms, ITL: []time.Duration{20 * ms, 30 * ms, 25 * ms}, E2E: 195 * ms,
				PromptTokens: 64, CompletionTokens: 4, Events: 4, HTTPStatus: 200,
				CachedTokens: 48, CachedTokensReported: true,
				// A new connection: its HTTP phases (no resolve: an IP address).
				ConnectTime: 300 * time.Microsecond, WriteTime: 50 * time.Microsecond, WaitTime: 2 * ms,
				FirstTokenTime: 117 * ms, TransferTime: 75 * ms,
			},
			good: true,
		},
		{ // TTFT violation: TTFT 900ms, gaps 40/60ms, E2E 1s, TPOT 50ms. Its usage reported
			// no cached prompt token.
			rec: prober.Record{
				Target: "sim", Probe: "small", RequestID: "req-2", SendLag: 3 * ms,
				TTFT: 900 * ms, TTFTText: 900 * ms, ITL: []time.Duration{40 * ms, 60 * ms}, E2E: 1000 * ms,
				PromptTokens: 64, CompletionTokens: 3, Events: 3, HTTPStatus: 200,
				CachedTokensReported: true,
			},
			violated: []string{slo.NameTTFT},
		},
		{ // One token: no ITL, no TPOT, no text (no content TTFT). Negative send lag counts as 0.
			// Resent after its reused connection was closed (one retry).
			rec: prober.Record{
				Target: "sim", Probe: "small", RequestID: "req-3", SendLag: -50 * time.Microsecond,
				TTFT: 50 * ms, E2E: 50 * ms, PromptTokens: 64, CompletionTokens: 1, Events: 1, HTTPStatus: 200,
				Retry: prober.RetryConnClosed,
			},
			good: true,
		},
		{ // Other probe: TPOT and E2EL violations at once; a chat role chunk 150ms before the content.
			// The server reported its timing: queued 120ms, first token 230ms after scheduling, so
			// 50ms of the TTFT were outside the server's timing.
			rec: prober.Record{
				Target: "sim", Probe: "large", RequestID: "req-4", SendLag: 20 * ms,
				TTFT: 400 * ms, TTFTText: 550 * ms, ITL: []time.Duration{100 * ms, 200 * ms}, E2E: 700 * ms,
				PromptTokens: 1000, CompletionTokens: 3, Events: 3, HTTPStatus: 200,
				Backend: "pod-a", Attribution: map[string]string{"x-served-by": "pod-a"},
				ServerQueueTime: 120 * ms, ServerTTFT: 230 * ms, ServerGenerationTime: 300 * ms,
				HasServerQueue: true, HasServerTTFT: true, HasServerGenerationTime: true,
			},
			violated: []string{slo.NameTPOT, slo.NameE2EL},
		},
		{ // A third probe: a reasoning model: the first reasoning token at 80ms, thinking 1.22s, the
			// answer at 1.3s (an answer-TTFT violation), 64 reasoning tokens of 66.
			rec: prober.Record{
				Target: "sim", Probe: "reasoner", RequestID: "req-5", SendLag: 1 * ms,
				TTFT: 80 * ms, TTFR: 80 * ms, ThinkingTime: 1220 * ms, TTFTText: 1300 * ms,
				ITL: []time.Duration{1220 * ms, 100 * ms}, E2E: 1400 * ms, ReasoningTokens: 64,
				PromptTokens: 100, CompletionTokens: 66, Events: 3, HTTPStatus: 200,
			},
			violated: []string{slo.NameTTFA},
		},
	}
	// One failure per error class. Their timings must not reach the latency
	// histograms; their tokens count.
	for i, c := range prober.ErrorClasses {
		r := prober.Record{
			Target: "sim", Probe: "small", RequestID: fmt.Sprintf("err-%d", i), SendLag: 1 * ms,
			Error: c, ErrorMessage: "x",
		}
		if c == prober.ClassStream {
			r.TTFT, r.TTFTText, r.E2E, r.ITL = 100*ms, 100*ms, 300*ms, []time.Duration{200 * ms}
			r.PromptTokens, r.CompletionTokens, r.HTTPStatus = 64, 2, 200
			r.CachedTokens, r.CachedTokensReported = 64, true // a failed request's report does not count
		}
		if c == prober.ClassConnect {
			r.Retry = prober.RetryConnReset // its resend failed too
			r.ResolveTime = 4 * ms          // the phase it went through before failing
		}
		obs = append(obs, observation{rec: r, violated: nil})
	}
	return obs
}

func newFixtureRegistry(t testing.TB) (*prometheus.Registry, *Metrics) {
	t.Helper()
	reg, m := newMetrics()
	m.Init("sim", "small")
	m.Init("sim", "large")
	for _, o := range fixture() {
		m.Observe(&o.rec, verdict(o.good, o.violated...))
	}
	m.Skipped("sim", "small", SkipMaxConcurrency)
	m.Skipped("sim", "small", SkipMaxConcurrency)
	m.InFlight("sim", "small", 1)
	m.SetSLO("sim", "small", 800*ms, 50*ms, 0)
	m.SetSLO("sim", "large", 0, 50*ms, 5*time.Second)
	m.SetTargetInfo("sim", manager.TargetInfo{ServerVersion: "0.11.0", Model: "meta-llama/Llama-3.1-8B-Instruct",
		MaxModelLen: "131072", Engine: "vllm", ServerInstance: "vllm:8000"})
	m.SetTargetLabels("sim", map[string]string{"canary": "chat-v2", "role": "baseline"})
	m.SetTargetCosts(map[string]float64{"sim": 2.5})
	m.SetProbeRate("sim", "small", 4)
	m.SetProbeRate("sim", "large", 0.05)
	m.SetLastArrival("sim", "small", time.Unix(1700000000, 250_000_000))
	m.SetLastArrival("sim", "large", time.Unix(1700000000, 0))
	m.SetGoodputObjective("sim", "small", 0.99)
	m.SetGoodputObjective("sim", "large", 0.995)
	answerFixture(m) // answers_test.go
	return reg, m
}

// exposition is g's families in the text format (testutil.GatherAndFormat
// filters everything out when given no names).
func exposition(t *testing.T, g prometheus.Gatherer) string {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

func TestGolden(t *testing.T) {
	reg, _ := newFixtureRegistry(t)
	golden := filepath.Join("testdata", "golden.prom")
	if *update {
		if err := os.WriteFile(golden, []byte(exposition(t, reg)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(golden)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := testutil.GatherAndCompare(reg, f); err != nil {
		t.Fatal(err)
	}
}

// TestHandComputed pins the values the golden file must contain, computed
// by hand from fixture(), so a wrong golden file cannot pass unnoticed.
func TestHandComputed(t *testing.T) {
	_, m := newFixtureRegistry(t)
	tests := []struct {
		name string
		c    prometheus.Collector
		want float64
	}{
		{name: "success small", c: m.requests.WithLabelValues("sim", "small", "success"), want: 3},
		{name: "success large", c: m.requests.WithLabelValues("sim", "large", "success"), want: 1},
		{name: "http_429", c: m.requests.WithLabelValues("sim", "small", "http_429"), want: 1},
		{name: "canceled", c: m.requests.WithLabelValues("sim", "small", "canceled"), want: 1},
		{name: "error on large is zero", c: m.requests.WithLabelValues("sim", "large", "timeout"), want: 0},
		{name: "good small", c: m.good.WithLabelValues("sim", "small"), want: 2},
		{name: "good large", c: m.good.WithLabelValues("sim", "large"), want: 0},
		{name: "ttft violations", c: m.sloViolations.WithLabelValues("sim", "small", "ttft"), want: 1},
		{name: "tpot violations large", c: m.sloViolations.WithLabelValues("sim", "large", "tpot"), want: 1},
		{name: "e2el violations large", c: m.sloViolations.WithLabelValues("sim", "large", "e2el"), want: 1},
		{name: "prompt tokens small", c: m.promptTokens.WithLabelValues("sim", "small"), want: 64 * 4},
		{name: "generation tokens small", c: m.genTokens.WithLabelValues("sim", "small"), want: 4 + 3 + 1 + 2},
		{name: "skipped", c: m.skipped.WithLabelValues("sim", "small", string(SkipMaxConcurrency)), want: 2},
		{name: "in flight", c: m.inFlight.WithLabelValues("sim", "small"), want: 1},
		{name: "slo ttft", c: m.sloThreshold.WithLabelValues("sim", "small", "ttft"), want: 0.8},
		{name: "slo e2el large", c: m.sloThreshold.WithLabelValues("sim", "large", "e2el"), want: 5},
		{name: "arrival rate", c: m.arrivalRate.WithLabelValues("sim", "large"), want: 0.05},
		{name: "last arrival", c: m.lastArrival.WithLabelValues("sim", "small"), want: 1700000000.25},
		{name: "objective", c: m.objective.WithLabelValues("sim", "large"), want: 0.995},
		{name: "retries closed", c: m.retries.WithLabelValues("sim", "small", string(prober.RetryConnClosed)), want: 1},
		{name: "retries reset", c: m.retries.WithLabelValues("sim", "small", string(prober.RetryConnReset)), want: 1},
		{name: "retries large are zero", c: m.retries.WithLabelValues("sim", "large", string(prober.RetryConnError)), want: 0},
		{name: "cached tokens", c: m.cachedTokens.WithLabelValues("sim", "small"), want: 48},
		{name: "cache hits", c: m.cacheRequests.WithLabelValues("sim", "small", CacheHit), want: 1},
		{name: "cache misses", c: m.cacheRequests.WithLabelValues("sim", "small", CacheMiss), want: 1},
		{name: "ttfa violations reasoner", c: m.sloViolations.WithLabelValues("sim", "reasoner", "ttfa"), want: 1},
	}
	// The reasoning histograms exist only for the probe whose request reasoned.
	if n := testutil.CollectAndCount(m.reasoningTok); n != 1 {
		t.Errorf("%d llmprobe_reasoning_tokens series, want 1 (probe reasoner)", n)
	}
	if n := testutil.CollectAndCount(m.thinking); n != 1 {
		t.Errorf("%d llmprobe_thinking_time_seconds series, want 1 (probe reasoner)", n)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := testutil.ToFloat64(tt.c); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}

	hists := []struct {
		name      string
		v         *prometheus.HistogramVec
		probe     string
		wantCount uint64
		wantSum   float64
	}{
		{name: "ttft", v: m.ttft, probe: "small", wantCount: 3, wantSum: 0.120 + 0.900 + 0.050},
		{name: "content ttft: requests with text", v: m.ttfc, probe: "small", wantCount: 2, wantSum: 0.120 + 0.900},
		{name: "content ttft large", v: m.ttfc, probe: "large", wantCount: 1, wantSum: 0.550},
		{name: "e2e", v: m.e2e, probe: "small", wantCount: 3, wantSum: 0.195 + 1.0 + 0.050},
		{name: "tpot", v: m.tpot, probe: "small", wantCount: 2, wantSum: 0.025 + 0.050},
		{name: "itl one per gap", v: m.itl, probe: "small", wantCount: 5, wantSum: 0.020 + 0.030 + 0.025 + 0.040 + 0.060},
		{name: "send lag every request", v: m.sendLag, probe: "small", wantCount: 3 + 10, wantSum: 0.0002 + 0.003 + 0 + 10*0.001},
		{name: "tpot large", v: m.tpot, probe: "large", wantCount: 1, wantSum: 0.150},
		{name: "reasoning tokens", v: m.reasoningTok, probe: "reasoner", wantCount: 1, wantSum: 64},
		{name: "thinking time", v: m.thinking, probe: "reasoner", wantCount: 1, wantSum: 1.22},
		{name: "content ttft reasoner: the answer", v: m.ttfc, probe: "reasoner", wantCount: 1, wantSum: 1.3},
	}
	for _, tt := range hists {
		t.Run(tt.name, func(t *testing.T) {
			h := histogramOf(t, tt.v.WithLabelValues("sim", tt.probe).(prometheus.Metric))
			if h.GetSampleCount() != tt.wantCount {
				t.Errorf("count %d, want %d", h.GetSampleCount(), tt.wantCount)
			}
			if d := h.GetSampleSum() - tt.wantSum; d > 1e-9 || d < -1e-9 {
				t.Errorf("sum %v, want %v", h.GetSampleSum(), tt.wantSum)
			}
		})
	}
}

func histogramOf(t *testing.T, m prometheus.Metric) *dto.Histogram {
	t.Helper()
	var out dto.Metric
	if err := m.Write(&out); err != nil {
		t.Fatal(err)
	}
	if out.Histogram == nil {
		t.Fatal("not a histogram")
	}
	return out.Histogram
}

func TestLint(t *testing.T) {
	_, m := newFixtureRegistry(t)
	problems, err := testutil.CollectAndLint(m)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

func TestNames(t *testing.T) {
	reg, _ := newFixtureRegistry(t)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, mf := range mfs {
		got = append(got, mf.GetName())
	}
	want := Names()
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("gathered families %v\nNames() %v", got, want)
	}
}

// newMetrics is a Metrics on a new pedantic registry.
func newMetrics() (*prometheus.Registry, *Metrics) {
	reg := prometheus.NewPedanticRegistry()
	return reg, New(reg)
}

// observeAll hands m each of recs with the verdict v.
func observeAll(m *Metrics, v slo.Verdict, recs []prober.Record) {
	for _, r := range recs {
		m.Observe(&r, v)
	}
}

func gatherFamily(t *testing.T, reg prometheus.Gatherer, name string) *dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf
		}
	}
	return nil
}

func labelsOf(m *dto.Metric) map[string]string {
	l := map[string]string{}
	for _, lp := range m.GetLabel() {
		l[lp.GetName()] = lp.GetValue()
	}
	return l
}

func TestBucketsMatchVLLM(t *testing.T) {
	// vllm/v1/metrics/buckets.py @139b1c3f (vllm-reference.md table 2.3).
	vllmTTFT := []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0,
		7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	vllmITL := []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5,
		10.0, 20.0, 40.0, 80.0}
	vllmRequest := []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0,
		120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
	reg, _ := newFixtureRegistry(t)
	tests := []struct {
		name string
		want []float64
	}{
		{name: NameTTFT, want: vllmTTFT},
		// llmprobe's decode histograms are finer than vLLM's (issue 21 D3)
		// and hold every vLLM bound, checked below.
		{name: NameITL, want: DecodeLatencyBuckets},
		{name: NameTPOT, want: DecodeLatencyBuckets},
		{name: NameE2E, want: vllmRequest},
		{name: NameSendLag, want: SendLagBuckets},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mf := gatherFamily(t, reg, tt.name)
			if mf == nil || mf.GetType() != dto.MetricType_HISTOGRAM {
				t.Fatalf("family %s missing or not a histogram", tt.name)
			}
			for _, m := range mf.GetMetric() {
				var got []float64
				for _, b := range m.GetHistogram().GetBucket() {
					got = append(got, b.GetUpperBound())
				}
				if !slices.Equal(got, tt.want) {
					t.Errorf("%v: buckets %v, want %v", labelsOf(m), got, tt.want)
				}
			}
		})
	}
	if !slices.Equal(InterTokenLatencyBuckets, vllmITL) {
		t.Errorf("InterTokenLatencyBuckets %v, want vLLM's %v", InterTokenLatencyBuckets, vllmITL)
	}
	for _, b := range vllmITL {
		if !slices.Contains(DecodeLatencyBuckets, b) {
			t.Errorf("DecodeLatencyBuckets lacks vLLM's bound %g", b)
		}
	}
	if !slices.IsSorted(DecodeLatencyBuckets) || len(DecodeLatencyBuckets) > 30 {
		t.Errorf("DecodeLatencyBuckets must be sorted and at most 30 bounds: %v", DecodeLatencyBuckets)
	}
	if SendLagBuckets[0] != 0.0001 || !slices.Contains(SendLagBuckets, 0.01) {
		t.Errorf("send lag buckets must start at 100µs and contain 10ms: %v", SendLagBuckets)
	}
}

func TestNativeHistograms(t *testing.T) {
	reg, _ := newFixtureRegistry(t)
	for _, name := range []string{NameTTFT, NameITL, NameTPOT, NameE2E, NameSendLag} {
		t.Run(name, func(t *testing.T) {
			mf := gatherFamily(t, reg, name)
			var seen bool
			for _, m := range mf.GetMetric() {
				if labelsOf(m)["probe"] != "small" {
					continue
				}
				seen = true
				h := m.GetHistogram()
				// Factor 1.1 -> schema 3 (2^(2^-3) ≈ 1.0905).
				if h.Schema == nil || h.GetSchema() != 3 {
					t.Errorf("schema = %v, want 3", h.Schema)
				}
				if h.GetZeroThreshold() <= 0 {
					t.Errorf("zero threshold not set")
				}
				if len(h.GetPositiveSpan()) == 0 || len(h.GetPositiveDelta()) == 0 {
					t.Errorf("no native positive buckets: spans %v deltas %v", h.GetPositiveSpan(), h.GetPositiveDelta())
				}
				var n int64
				var total int64
				for _, d := range h.GetPositiveDelta() {
					n += d
					total += n
				}
				total += int64(h.GetZeroCount())
				if uint64(total) != h.GetSampleCount() {
					t.Errorf("native buckets hold %d observations, count is %d", total, h.GetSampleCount())
				}
			}
			if !seen {
				t.Fatal("no series for probe small")
			}
		})
	}
}

func TestExemplars(t *testing.T) {
	reg, _ := newFixtureRegistry(t)
	tests := []struct {
		name   string
		family string
		want   []string // request ids expected among the exemplars of probe small
	}{
		{name: "ttft", family: NameTTFT, want: []string{"req-1", "req-2", "req-3"}},
		{name: "e2e", family: NameE2E, want: []string{"req-1", "req-2", "req-3"}},
		{name: "tpot", family: NameTPOT, want: []string{"req-1", "req-2"}},
		{name: "itl largest gap", family: NameITL, want: []string{"req-1", "req-2"}},
		{name: "send lag", family: NameSendLag, want: []string{"req-1", "req-2", "req-3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mf := gatherFamily(t, reg, tt.family)
			classic := map[string]bool{}
			native := map[string]bool{}
			for _, m := range mf.GetMetric() {
				if labelsOf(m)["probe"] != "small" {
					continue
				}
				for _, b := range m.GetHistogram().GetBucket() {
					if e := b.GetExemplar(); e != nil {
						classic[exemplarID(t, e)] = true
						if e.GetValue() > b.GetUpperBound() {
							t.Errorf("exemplar %v above its bucket %v", e.GetValue(), b.GetUpperBound())
						}
					}
				}
				for _, e := range m.GetHistogram().GetExemplars() {
					native[exemplarID(t, e)] = true
				}
			}
			for _, id := range tt.want {
				if !native[id] {
					t.Errorf("native exemplars %v lack %s", native, id)
				}
			}
			if len(classic) == 0 {
				t.Error("no classic bucket exemplars")
			}
			for id := range classic {
				// Send lag observes every sent request; latency histograms
				// only successful ones.
				if tt.family != NameSendLag && strings.HasPrefix(id, "err-") {
					t.Errorf("failed request %s has a latency exemplar", id)
				}
			}
		})
	}
	// The ITL exemplar is on the largest gap: req-2's 60ms gap lands in the
	// (0.05, 0.075] bucket with value 0.06.
	mf := gatherFamily(t, reg, NameITL)
	for _, m := range mf.GetMetric() {
		if labelsOf(m)["probe"] != "small" {
			continue
		}
		for _, e := range m.GetHistogram().GetExemplars() {
			if exemplarID(t, e) == "req-2" && e.GetValue() != 0.06 {
				t.Errorf("req-2 ITL exemplar value %v, want 0.06 (largest gap)", e.GetValue())
			}
		}
	}
}

func exemplarID(t *testing.T, e *dto.Exemplar) string {
	t.Helper()
	if len(e.GetLabel()) != 1 || e.GetLabel()[0].GetName() != "request_id" {
		t.Fatalf("exemplar labels %v, want exactly request_id", e.GetLabel())
	}
	return e.GetLabel()[0].GetValue()
}

func TestExemplarGuard(t *testing.T) {
	tests := []struct {
		name      string
		id        string
		wantLabel bool
	}{
		{name: "normal id", id: "cmpl-0123456789abcdef", wantLabel: true},
		{name: "empty id", id: "", wantLabel: false},
		{name: "too long for an exemplar", id: strings.Repeat("x", 200), wantLabel: false},
		{name: "invalid utf8", id: "a\xffb", wantLabel: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg, m := newMetrics()
			r := &prober.Record{Target: "t", Probe: "p", RequestID: tt.id, TTFT: 10 * ms, E2E: 20 * ms, CompletionTokens: 1}
			m.Observe(r, slo.Verdict{Good: true}) // must not panic
			mf := gatherFamily(t, reg, NameTTFT)
			h := mf.GetMetric()[0].GetHistogram()
			if h.GetSampleCount() != 1 {
				t.Fatalf("count %d, want 1", h.GetSampleCount())
			}
			if got := len(h.GetExemplars()) > 0; got != tt.wantLabel {
				t.Errorf("exemplar present = %v, want %v", got, tt.wantLabel)
			}
		})
	}
}

// TestTraceExemplars: a traced request's exemplars carry trace_id beside
// request_id; the trace id goes first in the 128-rune budget, so a request
// id that does not fit beside it is left out; the pooled label map of a
// traced request does not leak its trace id into the next request's
// exemplars.
func TestTraceExemplars(t *testing.T) {
	const trace = "4bf92f3577b34da6a3ce929d0e0e4736"
	tests := []struct {
		name, id, trace string
		want            map[string]string
	}{
		{name: "traced", id: "req-1", trace: trace, want: map[string]string{"request_id": "req-1", "trace_id": trace}},
		{name: "untraced after traced", id: "req-2", want: map[string]string{"request_id": "req-2"}},
		{name: "id at the budget beside a trace", id: strings.Repeat("x", 78), trace: trace,
			want: map[string]string{"request_id": strings.Repeat("x", 78), "trace_id": trace}},
		{name: "id over the budget beside a trace", id: strings.Repeat("x", 79), trace: trace, want: map[string]string{"trace_id": trace}},
		{name: "long id untraced", id: strings.Repeat("x", 118), want: map[string]string{"request_id": strings.Repeat("x", 118)}},
		{name: "malformed trace id ignored", id: "req-3", trace: "abc", want: map[string]string{"request_id": "req-3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg, m := newMetrics()
			// A traced request first, so the pool's map held a trace id.
			m.Observe(&prober.Record{Target: "t", Probe: "q", RequestID: "warm", TraceID: trace, TTFT: ms, E2E: ms, CompletionTokens: 1}, slo.Verdict{Good: true})
			m.Observe(&prober.Record{Target: "t", Probe: "p", RequestID: tt.id, TraceID: tt.trace, TTFT: 10 * ms, E2E: 20 * ms, CompletionTokens: 1}, slo.Verdict{Good: true})
			for _, metric := range gatherFamily(t, reg, NameTTFT).GetMetric() {
				if labelsOf(metric)["probe"] != "p" {
					continue
				}
				ex := metric.GetHistogram().GetExemplars()
				if len(ex) != 1 {
					t.Fatalf("%d native exemplars, want 1", len(ex))
				}
				got := map[string]string{}
				for _, l := range ex[0].GetLabel() {
					got[l.GetName()] = l.GetValue()
				}
				if !maps.Equal(got, tt.want) {
					t.Errorf("exemplar labels %v, want %v", got, tt.want)
				}
			}
		})
	}
}

func TestInitPrecreatesSeries(t *testing.T) {
	reg, m := newMetrics()
	m.Init("a", "p")
	m.Init("a", "p") // idempotent
	tests := []struct {
		name string
		want int
	}{
		{name: NameRequests, want: 1 + len(prober.ErrorClasses)},
		{name: NameSLOViolations, want: len(SLONames)},
		{name: NameSkipped, want: len(SkipReasons)},
		{name: NameGoodRequests, want: 1},
		{name: NamePromptTokens, want: 1},
		{name: NameGenTokens, want: 1},
		{name: NameInFlight, want: 1},
		{name: NameTTFT, want: 1},
		{name: NameSLOThreshold, want: 0},
		{name: NameTargetInfo, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := testutil.GatherAndCount(reg, tt.name)
			if err != nil {
				t.Fatal(err)
			}
			if n != tt.want {
				t.Errorf("%d series, want %d", n, tt.want)
			}
		})
	}
	mf := gatherFamily(t, reg, NameRequests)
	var got []string
	for _, s := range mf.GetMetric() {
		got = append(got, labelsOf(s)["outcome"])
		if v := s.GetCounter().GetValue(); v != 0 {
			t.Errorf("%v = %v, want 0", labelsOf(s), v)
		}
	}
	want := []string{"success"}
	for _, c := range prober.ErrorClasses {
		want = append(want, string(c))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("outcomes %v, want %v", got, want)
	}
}

func TestSetSLOAndTargetInfo(t *testing.T) {
	reg, m := newMetrics()
	m.SetSLO("a", "p", 800*ms, 50*ms, 5*time.Second)
	m.SetSLO("a", "p", 500*ms, 0, 0) // unset tpot and e2el
	m.SetTargetInfo("a", manager.TargetInfo{ServerVersion: "0.10.0", Model: "m1", MaxModelLen: "4096", Engine: "vllm", ServerInstance: "a:8000"})
	m.SetTargetInfo("a", manager.TargetInfo{ServerVersion: "0.11.0", Model: "m1", MaxModelLen: "4096", Engine: "vllm", ServerInstance: "a:8000"}) // replaces
	m.SetTargetInfo("b", manager.TargetInfo{Model: "m2"})
	want := `
# HELP llmprobe_slo_threshold_seconds Configured SLO threshold per SLO; absent when the SLO is not set.
# TYPE llmprobe_slo_threshold_seconds gauge
llmprobe_slo_threshold_seconds{probe="p",slo="ttft",target="a"} 0.5
# HELP llmprobe_target_info Target information from discovery (/v1/models, the engine's version and info endpoints) and the host:port of the server's /metrics (server_instance, the join to the server's own series); value 1.
# TYPE llmprobe_target_info gauge
llmprobe_target_info{engine="vllm",max_model_len="4096",model="m1",server_instance="a:8000",server_version="0.11.0",target="a"} 1
llmprobe_target_info{engine="",max_model_len="",model="m2",server_instance="",server_version="",target="b"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), NameSLOThreshold, NameTargetInfo); err != nil {
		t.Fatal(err)
	}
}

// TestProbeGauges checks the per-probe gauges set at probe start and per
// arrival: values as given, and the series deleted for values that mean
// "not configured".
func TestProbeGauges(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(m *Metrics)
		want string
	}{
		{
			name: "set",
			set: func(m *Metrics) {
				m.SetProbeRate("a", "p", 0.01)
				m.SetLastArrival("a", "p", time.Unix(1700000123, 500_000_000))
				m.SetGoodputObjective("a", "p", 0.999)
			},
			want: `
# HELP llmprobe_goodput_objective_ratio Configured goodput objective: the share of requests that must be good.
# TYPE llmprobe_goodput_objective_ratio gauge
llmprobe_goodput_objective_ratio{probe="p",target="a"} 0.999
# HELP llmprobe_probe_arrival_rate Configured mean arrival rate of the probe in requests per second.
# TYPE llmprobe_probe_arrival_rate gauge
llmprobe_probe_arrival_rate{probe="p",target="a"} 0.01
# HELP llmprobe_probe_last_arrival_timestamp_seconds Unix time of the probe's last scheduled arrival, sent or skipped (the probe's start time until its first arrival).
# TYPE llmprobe_probe_last_arrival_timestamp_seconds gauge
llmprobe_probe_last_arrival_timestamp_seconds{probe="p",target="a"} 1.7000001235e+09
`,
		},
		{
			name: "later arrival replaces",
			set: func(m *Metrics) {
				m.SetLastArrival("a", "p", time.Unix(1700000000, 0))
				m.SetLastArrival("a", "p", time.Unix(1700000060, 0))
			},
			want: `
# HELP llmprobe_probe_last_arrival_timestamp_seconds Unix time of the probe's last scheduled arrival, sent or skipped (the probe's start time until its first arrival).
# TYPE llmprobe_probe_last_arrival_timestamp_seconds gauge
llmprobe_probe_last_arrival_timestamp_seconds{probe="p",target="a"} 1.70000006e+09
`,
		},
		{
			name: "invalid values delete",
			set: func(m *Metrics) {
				for _, r := range []float64{0, -1, math.Inf(1), math.NaN()} {
					m.SetProbeRate("a", "p", 1)
					m.SetProbeRate("a", "p", r)
				}
				for _, o := range []float64{0, 1, 1.5, -0.1, math.NaN()} {
					m.SetGoodputObjective("a", "p", 0.99)
					m.SetGoodputObjective("a", "p", o)
				}
			},
			want: ``,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg, m := newMetrics()
			tc.set(m)
			if err := testutil.GatherAndCompare(reg, strings.NewReader(tc.want),
				NameArrivalRate, NameLastArrival, NameObjective); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestDelete(t *testing.T) {
	seriesOf := func(t *testing.T, reg prometheus.Gatherer) map[string]int {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int{}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				l := labelsOf(m)
				out[l["target"]+"/"+l["probe"]]++
			}
		}
		return out
	}
	t.Run("probe", func(t *testing.T) {
		reg, m := newFixtureRegistry(t)
		m.DeleteProbe("sim", "small")
		got := seriesOf(t, reg)
		if got["sim/small"] != 0 {
			t.Errorf("%d series of sim/small left", got["sim/small"])
		}
		if got["sim/large"] == 0 {
			t.Error("sim/large was deleted too")
		}
		if got["sim/"] != 3 {
			t.Errorf("target-level series (info, labels and cost): %d, want 3", got["sim/"])
		}
		// Observing again re-creates the full set of series.
		m.Observe(&prober.Record{Target: "sim", Probe: "small", TTFT: ms, E2E: ms}, slo.Verdict{Good: true})
		// Three probes: small, large and reasoner (created by its Observe).
		if n, _ := testutil.GatherAndCount(reg, NameRequests); n != 3*(1+len(prober.ErrorClasses)) {
			t.Errorf("requests series after re-create: %d", n)
		}
	})
	t.Run("target", func(t *testing.T) {
		reg, m := newFixtureRegistry(t)
		m.Init("other", "p")
		m.DeleteTarget("sim")
		got := seriesOf(t, reg)
		for k, n := range got {
			if strings.HasPrefix(k, "sim/") {
				t.Errorf("%d series of %s left", n, k)
			}
		}
		if got["other/p"] == 0 {
			t.Error("other target deleted too")
		}
	})
}

func TestConcurrentUse(t *testing.T) {
	reg, m := newMetrics()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			probe := fmt.Sprintf("p%d", g%2)
			for i := range 200 {
				r := &prober.Record{Target: "t", Probe: probe, RequestID: "r", TTFT: ms, E2E: 2 * ms,
					ITL: []time.Duration{ms}, CompletionTokens: 2}
				m.InFlight("t", probe, 1)
				m.Observe(r, verdict(i%2 == 0, slo.NameTTFT))
				m.InFlight("t", probe, -1)
				if i%50 == 0 {
					m.DeleteProbe("t", "p1")
					m.SetSLO("t", probe, ms, 0, 0)
				}
			}
		}()
	}
	for range 20 {
		if _, err := reg.Gather(); err != nil {
			t.Error(err)
		}
	}
	wg.Wait()
}

// BenchmarkObserve measures the per-request path for a successful 16-token
// record (15 ITL gaps), with and without exemplars.
func BenchmarkObserve(b *testing.B) {
	m := New(nil)
	m.Init("sim", "small")
	itl := make([]time.Duration, 15)
	for i := range itl {
		itl[i] = time.Duration(20+i) * ms
	}
	r := &prober.Record{
		Target: "sim", Probe: "small", RequestID: "cmpl-8f14e45fceea167a5a36dedd4bea2543",
		SendLag: 300 * time.Microsecond, TTFT: 150 * ms, ITL: itl, E2E: 150*ms + 405*ms,
		PromptTokens: 64, CompletionTokens: 16, Events: 16,
	}
	b.Run("exemplars", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.Observe(r, slo.Verdict{Good: true})
		}
	})
	// Without a request id there are no exemplars: the difference is the
	// cost of client_golang's exemplar bookkeeping.
	noID := *r
	noID.RequestID = ""
	b.Run("no_exemplars", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.Observe(&noID, slo.Verdict{Good: true})
		}
	})
}

// TestDocsListEveryMetric keeps the docs in step with the families this
// package exports: docs/metrics.md lists Names() and ClientNames(),
// docs/sweep-api.md lists SweepNames().
func TestDocsListEveryMetric(t *testing.T) {
	for _, c := range []struct {
		doc   string
		names []string
	}{{"metrics.md", Names()}, {"metrics.md", ClientNames()}, {"sweep-api.md", SweepNames()}} {
		doc, err := os.ReadFile(filepath.Join("..", "..", "docs", c.doc))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range c.names {
			t.Run(name, func(t *testing.T) {
				if !strings.Contains(string(doc), "`"+name+"`") {
					t.Errorf("docs/%s does not document %s", c.doc, name)
				}
			})
		}
	}
}

func TestNotSentIsCountedButHasNoSendLag(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg)
	m.Init("t", "p")
	m.Observe(&prober.Record{Target: "t", Probe: "p", RequestID: "a", Error: prober.ClassConnect, NotSent: true, SendLag: 10 * time.Second}, slo.Verdict{})
	m.Observe(&prober.Record{Target: "t", Probe: "p", RequestID: "b", Error: prober.ClassConnect, SendLag: time.Millisecond}, slo.Verdict{})
	if got := testutil.ToFloat64(m.requests.WithLabelValues("t", "p", "connect")); got != 2 {
		t.Errorf("connect failures = %v, want 2", got)
	}
	n, err := testutil.GatherAndCount(reg, NameSendLag)
	if err != nil || n != 1 {
		t.Fatalf("send lag series: %d, %v", n, err)
	}
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == NameSendLag {
			if c := mf.GetMetric()[0].GetHistogram().GetSampleCount(); c != 1 {
				t.Errorf("send lag observed %d times, want 1 (the not-sent request is not a send)", c)
			}
		}
	}
}

// TestObserverEventsAreTheSetters checks that the events of the manager's
// observer interfaces export what the setters they stand for export.
func TestObserverEventsAreTheSetters(t *testing.T) {
	start := time.Unix(1700000000, 0)
	s := slo.SLO{TTFT: 800 * ms, E2EL: 5 * time.Second}
	byEvents, bySetters := prometheus.NewPedanticRegistry(), prometheus.NewPedanticRegistry()
	var e manager.ProbeObserver = New(byEvents)
	e.ProbeStarted("t", "p", manager.ProbeSettings{Rate: 2, SLO: s, GoodputObjective: 0.99, Start: start})
	e.SLOChanged("t", "p", slo.SLO{TPOT: 50 * ms}, 0.995)
	m := New(bySetters)
	m.Init("t", "p")
	m.SetProbeRate("t", "p", 2)
	m.SetLastArrival("t", "p", start)
	m.SetSLO("t", "p", 0, 50*ms, 0)
	m.SetGoodputObjective("t", "p", 0.995)
	if g, w := exposition(t, byEvents), exposition(t, bySetters); g != w || !strings.Contains(g, `slo="tpot"`) {
		t.Errorf("events exported\n%s\nsetters\n%s", g, w)
	}
}

// TestTargetLabels checks llmprobe_target_labels: one series per target with
// its own label names, replaced by a later call, removed by no labels and by
// DeleteTarget, and nothing for a target without labels.
func TestTargetLabels(t *testing.T) {
	reg, m := newMetrics()
	in := map[string]string{"canary": "chat-v2", "role": "baseline"}
	m.SetTargetLabels("a", in)
	in["role"] = "mutated" // m keeps its own copy
	m.SetTargetLabels("b", map[string]string{"canary": "chat-v2", "role": "candidate", "zone": "eu"})
	m.SetTargetLabels("c", map[string]string{"team": "x"})
	m.SetTargetLabels("d", nil)
	want := `# HELP llmprobe_target_labels Static labels of the target from the configuration (targets[].labels, e.g. canary and role), for rules to join on target; value 1.
# TYPE llmprobe_target_labels gauge
llmprobe_target_labels{canary="chat-v2",role="baseline",target="a"} 1
llmprobe_target_labels{canary="chat-v2",role="candidate",target="b",zone="eu"} 1
llmprobe_target_labels{target="c",team="x"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), NameTargetLabels); err != nil {
		t.Fatal(err)
	}
	m.SetTargetLabels("c", nil)
	m.DeleteTarget("b")
	m.SetTargetLabels("a", map[string]string{"canary": "chat-v3", "role": "baseline"})
	want = `# HELP llmprobe_target_labels Static labels of the target from the configuration (targets[].labels, e.g. canary and role), for rules to join on target; value 1.
# TYPE llmprobe_target_labels gauge
llmprobe_target_labels{canary="chat-v3",role="baseline",target="a"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), NameTargetLabels); err != nil {
		t.Fatal(err)
	}
}

// TestCacheSeriesOnlyWhereReported: the per-request prefix-cache counters
// exist for a probe whose responses reported cached tokens and not for one
// whose responses never did (the fixture's "large" probe).
func TestCacheSeriesOnlyWhereReported(t *testing.T) {
	reg, _ := newFixtureRegistry(t)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := map[string]int{}
	for _, mf := range mfs {
		if mf.GetName() != NamePromptCachedTokens && mf.GetName() != NamePromptCacheRequests {
			continue
		}
		series[mf.GetName()] = len(mf.GetMetric())
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "probe" && l.GetValue() != "small" {
					t.Errorf("%s has a series for probe %q, whose responses never reported cached tokens", mf.GetName(), l.GetValue())
				}
			}
		}
	}
	if series[NamePromptCacheRequests] != 2 || series[NamePromptCachedTokens] != 1 {
		t.Errorf("series %v, want 2 of %s (hit and miss of probe small) and 1 of %s",
			series, NamePromptCacheRequests, NamePromptCachedTokens)
	}
}

// TestCacheHitThreshold: a response that reports fewer than
// prober.MinCacheHitTokens cached prompt tokens (llama.cpp's BOS token on
// a fresh prompt) is a miss, one that reports exactly that many a hit; the
// cached-tokens counter adds every reported token either way.
func TestCacheHitThreshold(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg)
	for _, cached := range []int{0, 1, prober.MinCacheHitTokens - 1, prober.MinCacheHitTokens, 64} {
		m.Observe(&prober.Record{Target: "t", Probe: "p", HTTPStatus: 200, PromptTokens: 100, CompletionTokens: 1,
			CachedTokens: cached, CachedTokensReported: true}, slo.Verdict{})
	}
	want := fmt.Sprintf(`# HELP %[1]s x
# TYPE %[1]s counter
%[1]s{probe="p",result="hit",target="t"} 2
%[1]s{probe="p",result="miss",target="t"} 3
`, NamePromptCacheRequests)
	if err := testutil.CollectAndCompare(m.cacheRequests, strings.NewReader(strings.Replace(want, "# HELP "+NamePromptCacheRequests+" x",
		"# HELP "+NamePromptCacheRequests+" "+helpOf(t, reg, NamePromptCacheRequests), 1)), NamePromptCacheRequests); err != nil {
		t.Error(err)
	}
	if got := testutil.ToFloat64(m.cachedTokens.WithLabelValues("t", "p")); got != float64(1+prober.MinCacheHitTokens-1+prober.MinCacheHitTokens+64) {
		t.Errorf("cached tokens %v", got)
	}
}

// helpOf is the HELP text of family name in reg.
func helpOf(t *testing.T, reg *prometheus.Registry, name string) string {
	t.Helper()
	mf := gatherFamily(t, reg, name)
	if mf == nil {
		t.Fatalf("no family %s", name)
	}
	return mf.GetHelp()
}
