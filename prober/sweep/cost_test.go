package sweep

import (
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/slo"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// recordingSink keeps every record by step, and the output tokens of each
// step's requests that succeeded and met an SLO.
type recordingSink struct {
	DiscardSink
	slo slo.SLO

	mu   sync.Mutex
	good map[int]int // step -> output tokens of its good requests
	recs map[int][]prober.Record
}

func (s *recordingSink) Record(r StepRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.recs == nil {
		s.recs = map[int][]prober.Record{}
	}
	s.recs[r.Step] = append(s.recs[r.Step], *r.Record)
	if good, _ := s.slo.Evaluate(r.Record); good && r.Record.OK() {
		out := r.Record.CompletionTokens
		if out <= 0 {
			out = r.Record.Events
		}
		s.good[r.Step] += out
	}
	return nil
}

// TestCostAndKneeInterval runs a ladder against a simulator that serves one
// sequence at a time (about 60 req/s for 16 output tokens at 1 ms a step)
// under a TTFT SLO, with a price: every step's good output tokens are the
// output tokens of its records that met the SLO, its cost per million good
// output tokens is price / (good tokens / duration × 3600) × 1e6 from the
// step's own figures, the knee's cost is the knee step's, and the knee is
// stated with a bootstrap interval that contains it. On a machine too busy
// for the client to keep 20 or 400 req/s, a step flagged client-saturated
// (with its evidence) is the right answer: that level is then neither the
// knee nor its bracket, and no knee is found.
func TestCostAndKneeInterval(t *testing.T) {
	testutil.Slow(t)
	cfg := saturatingConfig(t)
	cfg.NumPrompts = 110
	cfg.SLO = slo.SLO{TTFT: 2 * time.Second}
	cfg.CostPerHour = 3.6
	sink := &recordingSink{slo: cfg.SLO, good: map[int]int{}}
	res := runSweep(t, cfg, sink)
	if res.CostPerHour != 3.6 || res.Fingerprint.Target.CostPerHour != 3.6 {
		t.Errorf("price %v in the result, %v in the fingerprint, want 3.6", res.CostPerHour, res.Fingerprint.Target.CostPerHour)
	}
	for _, st := range res.Steps {
		x := &st.Stats
		if x.GoodOutputTokens != sink.good[st.Index] {
			t.Errorf("step %s: %d good output tokens, the records' good requests hold %d", st.Label, x.GoodOutputTokens, sink.good[st.Index])
		}
		if x.GoodOutputTokens > x.TotalOutputTokens || x.GoodOutputTokens != 16*x.Good {
			t.Errorf("step %s: %d good output tokens of %d, %d good requests of 16 tokens", st.Label, x.GoodOutputTokens, x.TotalOutputTokens, x.Good)
		}
		want := 3.6 / (float64(x.GoodOutputTokens) / x.Duration * 3600) * 1e6
		got, ok := res.StepCost(st)
		if x.GoodOutputTokens == 0 {
			if ok {
				t.Errorf("step %s: a cost %v without a good token", st.Label, got)
			}
			continue
		}
		if !ok || math.Abs(got-want) > 1e-9*want {
			t.Errorf("step %s: cost per million good output tokens %v (%v), want %v", st.Label, got, ok, want)
		}
	}
	resultKeys := []string{`"cost_per_hour_usd":3.6`, `"cost_per_million_good_output_tokens":`, `"good_output_tokens":`}
	var saturated []float64
	for _, st := range res.Steps {
		if clientSaturated(t, st, cfg.Validity, sink.recs[st.Index]) {
			saturated = append(saturated, st.Level)
		}
	}
	if len(saturated) > 0 {
		k := res.Knee
		if k.Found || slices.Contains(saturated, k.Low) || slices.Contains(saturated, k.Upper) || k.Interval != nil {
			t.Errorf("knee %+v with level(s) %v invalid: want no knee, and neither bracket at an invalid level", k, saturated)
		}
		checkResultKeys(t, res, resultKeys)
		return
	}
	if !res.Knee.Found || res.Knee.Level != 20 {
		for _, st := range res.Steps {
			t.Logf("%s: keep-up %.3f, SLO held %v, valid %v %v", st.Label, st.Stats.GoodputRatio, st.Stats.SLOHeld, st.Validity.Valid, st.Validity.Reasons)
		}
		t.Fatalf("knee %+v, want 20 req/s (the simulator serves about 60)", res.Knee)
	}
	kc, ok := res.KneeCost()
	if sc, _ := res.StepCost(res.Steps[0]); !ok || kc != sc {
		t.Errorf("knee cost %v (%v), want the knee step's %v", kc, ok, sc)
	}
	ki := res.Knee.Interval
	if ki == nil || ki.Method != KneeFromBootstrap || ki.Iters != DefaultKneeIters || !ki.Contains(res.Knee.Level) ||
		len(ki.Resampled) != 2 || ki.Located == 0 {
		t.Fatalf("knee interval %+v, want a bootstrap over both levels containing 20", ki)
	}
	if txt := ki.Text("req/s"); !strings.Contains(txt, "95 % interval 20") || !strings.Contains(txt, "levels 20, 400 resampled 1000 times") {
		t.Errorf("interval text %q", txt)
	}
	checkResultKeys(t, res, append(resultKeys, `"interval":{"method":"bootstrap"`))
}

// checkResultKeys fails unless the JSON of res holds every key.
func checkResultKeys(t *testing.T, res *Result, keys []string) {
	t.Helper()
	b := resultJSON(t, res)
	for _, key := range keys {
		if !strings.Contains(string(b), key) {
			t.Errorf("result.json has no %s", key)
		}
	}
}

// saturatingConfig is testConfig against a simulator serving one sequence
// at a time, 16 tokens in and out, at 20 and 400 req/s: the second level
// is past the server's capacity.
func saturatingConfig(t *testing.T) Config {
	t.Helper()
	sc := simtest.Fast()
	sc.MaxNumSeqs = 1
	url, _ := simtest.Start(t, sc)
	cfg := testConfig(t, url)
	cfg.Workload = workload.Spec{InputTokens: workload.Fixed(16), OutputTokens: workload.Fixed(16)}
	cfg.Rates, cfg.RatesText = []float64{20, 400}, "20,400"
	return cfg
}

// TestKneeOverRounds states the knee of a two-round ladder from the knee
// rule run on each round alone. A machine too busy for the client to keep
// a level's rate (a step flagged client-saturated, with its evidence) may
// leave no knee, and then no interval.
func TestKneeOverRounds(t *testing.T) {
	cfg := saturatingConfig(t)
	cfg.NumPrompts, cfg.Rounds = 40, 2
	sink := &recordingSink{good: map[int]int{}}
	res := runSweep(t, cfg, sink)
	ki := res.Knee.Interval
	saturated := false
	for _, st := range res.Steps {
		saturated = clientSaturated(t, st, cfg.Validity, sink.recs[st.Index]) || saturated
	}
	if saturated && !res.Knee.Found {
		if ki != nil {
			t.Errorf("knee %+v not found, but an interval %+v", res.Knee, ki)
		}
		return
	}
	if !res.Knee.Found || ki == nil || ki.Method != KneeFromRounds || len(ki.PerRound) != 2 || !ki.Contains(res.Knee.Level) {
		t.Fatalf("knee %+v interval %+v, want a range over 2 rounds containing the knee", res.Knee, ki)
	}
	if txt := ki.Text("req/s"); !strings.Contains(txt, "range over 2 rounds") {
		t.Errorf("interval text %q", txt)
	}
}

// TestCostPerMillion checks the formula and its edges.
func TestCostPerMillion(t *testing.T) {
	if c, ok := CostPerMillion(3.6, 1000); !ok || math.Abs(c-1) > 1e-12 {
		t.Errorf("3.6 USD/h at 1000 good tokens/s: %v %v, want 1 USD per million", c, ok)
	}
	for _, tc := range [][2]float64{{0, 100}, {2, 0}, {-1, 10}, {2, math.Inf(1)}, {math.NaN(), 5}} {
		if c, ok := CostPerMillion(tc[0], tc[1]); ok {
			t.Errorf("CostPerMillion(%v, %v) = %v, want no cost", tc[0], tc[1], c)
		}
	}
	for _, v := range []float64{-1, math.NaN(), math.Inf(1), 2e6} {
		cfg := Config{CostPerHour: v}
		if err := validateCostPerHour(cfg.CostPerHour); err == nil || !strings.HasPrefix(err.Error(), "CostPerHour: ") {
			t.Errorf("price %v: %v, want a CostPerHour error", v, err)
		}
	}
}
