package compare

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// synthShape is the known distribution one side's requests are drawn
// from: per request a lognormal TTFT and TPOT (median and log-sd), each
// round scaled by its own lognormal factor (the spread between rounds:
// another batch mix, a warmer cache, a neighbour's load), like a default
// compare run (--rates 4 --num-prompts 200 --rounds 4: 2 rounds of 200
// requests per side, 128 output tokens each).
type synthShape struct {
	rounds, n          int
	ttftMS, ttftSigma  float64
	tpotMS, tpotSigma  float64
	roundSigma         float64
	outputTokens, rate float64
}

// defaultShape is a chat server at moderate load: TTFT p99 ≈ 2.3× its
// median, TPOT per request within ± 25 %, 3 % between rounds.
var defaultShape = synthShape{rounds: 2, n: 200, ttftMS: 120, ttftSigma: 0.35, tpotMS: 25, tpotSigma: 0.1,
	roundSigma: 0.03, outputTokens: 128, rate: 4}

// synthSide draws one side from s, its latencies scaled by ttftX and tpotX
// (1: the baseline's distribution).
func synthSide(s synthShape, ttftX, tpotX float64, rng *rand.Rand) *Evidence {
	ev := &Evidence{Name: "synthetic", Format: FormatLLMProbe, Fields: map[string][]string{}}
	addFields(ev.Fields, map[string]string{FieldEndpoint: "http://a", FieldModel: "m", FieldServerVersion: "1",
		FieldEngineConfig: "{}", FieldWorkload: "sha256:w", FieldRate: "4", FieldSeed: "0"})
	out := int(s.outputTokens)
	for r := 1; r <= s.rounds; r++ {
		ft := math.Exp(s.roundSigma * rng.NormFloat64())
		fp := math.Exp(s.roundSigma * rng.NormFloat64())
		st := Step{Label: "rate=4", Round: r, Completed: s.n, Duration: float64(s.n) / s.rate,
			FinishReasons: map[string]int{"length": s.n}, ErrorClasses: map[string]int{},
			Validity: &sweep.Validity{Valid: true, Flags: []string{}, Reasons: []string{}, Idle: sweep.IdleProof{Status: sweep.IdleProven}}}
		minE2E := math.Inf(1)
		for range s.n {
			ttft := ttftX * ft * s.ttftMS * math.Exp(s.ttftSigma*rng.NormFloat64())
			tpot := tpotX * fp * s.tpotMS * math.Exp(s.tpotSigma*rng.NormFloat64())
			e2e := ttft + tpot*float64(out-1)
			minE2E = math.Min(minE2E, e2e)
			st.Requests = append(st.Requests, Request{OK: true, TTFT: ttft, TPOT: tpot, E2EL: e2e, OutputTokens: out, FinishReason: "length"})
		}
		st.RateDuration = st.Duration - minE2E/1000
		ev.Steps = append(ev.Steps, st)
	}
	return ev
}

// scenario is one row of the error-rate table.
type scenario struct {
	name         string
	ttftX, tpotX float64
}

// rates counts the outcomes of a scenario's comparisons.
type rates struct{ pass, fail, inconclusive int }

func (r rates) n() int { return r.pass + r.fail + r.inconclusive }

func (r rates) share(k int) float64 { return float64(k) / float64(r.n()) }

// forEachSeeded runs f(i, rng) for every i in [0, n) on every CPU, rng
// seeded with (seed, i): comparison i draws the same whatever the CPUs.
func forEachSeeded(n int, seed uint64, f func(i int, rng *rand.Rand)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := range next {
				f(i, rand.New(rand.NewPCG(seed, uint64(i))))
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// runScenario runs n comparisons of sc, each with its own seeds, on every
// CPU.
func runScenario(t *testing.T, sc scenario, shape synthShape, n, iters int, seed uint64) rates {
	t.Helper()
	th, err := ParseThresholds(DefaultThresholds)
	if err != nil {
		t.Fatal(err)
	}
	outcomes := make([]string, n)
	forEachSeeded(n, seed, func(i int, rng *rand.Rand) {
		b := synthSide(shape, 1, 1, rng)
		c := synthSide(shape, sc.ttftX, sc.tpotX, rng)
		v := Compare(b, c, Options{Thresholds: th, SLO: defaultSLO, Iters: iters, Seed: uint64(i)})
		outcomes[i] = v.Outcome
	})
	var r rates
	for _, o := range outcomes {
		switch o {
		case OutcomePass:
			r.pass++
		case OutcomeFail:
			r.fail++
		default:
			r.inconclusive++
		}
	}
	return r
}

// TestVerdictErrorRates measures the verdict's error rates on comparisons
// drawn from known distributions (no network, fixed seeds): identical
// sides must fail in at most 5 % of the comparisons, a candidate 50 %
// slower (TTFT and TPOT) must pass in at most 1 %, and the power at +20 %
// (the share that fails) is reported. docs/compare.md's table is this
// test's log (go test ./prober/compare -run TestVerdictErrorRates -v).
func TestVerdictErrorRates(t *testing.T) {
	testutil.Slow(t)
	// n comparisons for each asserted row, half as many for the rows that
	// only report the power of one figure.
	// The race detector slows the bootstrap 5-10 times and finds nothing
	// more in 200 draws than in 20 (CI's -race step beside other load ran
	// past the 10-minute package timeout with 60): the table is measured
	// without it.
	n := 200
	switch {
	case testutil.RaceEnabled:
		n = 20
	case testing.Short():
		n = 60
	}
	// The last rows show the limit of 2 rounds per side: a spread between
	// rounds of 10 % (a round's own effect, which the validity flags do
	// not see) is measured from 2 values per side; the same requests in 4
	// rounds per side measure it.
	spread := defaultShape
	spread.roundSigma = 0.1
	spread4 := spread
	spread4.rounds, spread4.n = 4, 100
	scenarios := []struct {
		scenario
		n     int
		shape synthShape
	}{
		{scenario{"identical sides", 1, 1}, n, defaultShape},
		{scenario{"+50 % (TTFT and TPOT)", 1.5, 1.5}, n, defaultShape},
		{scenario{"+20 % (TTFT and TPOT)", 1.2, 1.2}, n, defaultShape},
		{scenario{"+20 % TPOT only", 1, 1.2}, n / 2, defaultShape},
		{scenario{"+20 % TTFT only", 1.2, 1}, n / 2, defaultShape},
		{scenario{"identical sides, 10 % between rounds", 1, 1}, n / 2, spread},
		{scenario{"identical sides, 10 % between rounds, 4 rounds of 100 per side", 1, 1}, n / 2, spread4},
	}
	var table strings.Builder
	fmt.Fprintf(&table, "| candidate | comparisons | pass | fail | inconclusive |\n|---|---:|---:|---:|---:|\n")
	got := map[string]rates{}
	for k, sc := range scenarios {
		r := runScenario(t, sc.scenario, sc.shape, sc.n, DefaultIters, uint64(1000+k))
		got[sc.name] = r
		fmt.Fprintf(&table, "| %s | %d | %.1f %% | %.1f %% | %.1f %% |\n", sc.name, r.n(),
			100*r.share(r.pass), 100*r.share(r.fail), 100*r.share(r.inconclusive))
	}
	t.Logf("verdicts (2 rounds of %d requests per side, TTFT lognormal median %g ms sigma %g, TPOT median %g ms sigma %g, "+
		"%g %% between rounds unless said; bootstrap %d):\n%s", defaultShape.n, defaultShape.ttftMS, defaultShape.ttftSigma,
		defaultShape.tpotMS, defaultShape.tpotSigma, 100*defaultShape.roundSigma, DefaultIters, table.String())
	if r := got["identical sides"]; r.share(r.fail) > 0.05 {
		t.Errorf("identical sides: false fail %.1f %% > 5 %%", 100*r.share(r.fail))
	}
	if r := got["+50 % (TTFT and TPOT)"]; r.share(r.pass) > 0.01 {
		t.Errorf("+50 %%: false pass %.1f %% > 1 %%", 100*r.share(r.pass))
	}
	for _, name := range []string{"+20 % (TTFT and TPOT)", "+20 % TPOT only", "+20 % TTFT only"} {
		if r := got[name]; r.share(r.pass) > 0.01 {
			t.Errorf("%s: false pass %.1f %% > 1 %% (twice the limit)", name, 100*r.share(r.pass))
		}
	}
}
