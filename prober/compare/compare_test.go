package compare

import (
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/prober/slo"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// side builds the evidence of one side: rounds rounds of n requests at
// level rate=4, TTFT ~ ttft ms and TPOT ~ tpot ms (5 % noise), out output
// tokens, a valid round with an idle proof.
type sideSpec struct {
	rounds, n  int
	ttft, tpot float64
	out        int
	seed       uint64
	fields     map[string]string
	validity   func(*sweep.Validity)
	failed     map[string]int
	// noise is the requests' relative spread (0: 5 %).
	noise float64
}

func buildSide(s sideSpec) *Evidence {
	rng := rand.New(rand.NewPCG(s.seed, 1))
	ev := &Evidence{Name: "side", Format: FormatLLMProbe, Fields: map[string][]string{}}
	f := map[string]string{
		FieldEndpoint: "http://a", FieldModel: "m", FieldServerVersion: "0.11.0", FieldEngineConfig: "{block_size=16}",
		FieldWorkload: "sha256:abc", FieldRate: "4", FieldSeed: "0",
	}
	for k, v := range s.fields {
		if v == "" {
			delete(f, k)
		} else {
			f[k] = v
		}
	}
	addFields(ev.Fields, f)
	if s.out == 0 {
		s.out = 16
	}
	if s.noise == 0 {
		s.noise = 0.05
	}
	for r := 1; r <= s.rounds; r++ {
		st := Step{Label: "rate=4", Round: r, Duration: float64(s.n) / 4, FinishReasons: map[string]int{"length": s.n},
			ErrorClasses: map[string]int{}}
		v := sweep.Validity{Valid: true, Flags: []string{}, Reasons: []string{}, Idle: sweep.IdleProof{Status: sweep.IdleProven}}
		if s.validity != nil {
			s.validity(&v)
		}
		st.Validity = &v
		for i := 0; i < s.n; i++ {
			ttft := s.ttft * (1 + s.noise*rng.NormFloat64())
			tpot := s.tpot * (1 + s.noise*rng.NormFloat64())
			st.Requests = append(st.Requests, Request{OK: true, TTFT: ttft, TPOT: tpot, E2EL: ttft + tpot*float64(s.out-1),
				OutputTokens: s.out, FinishReason: "length"})
		}
		st.Completed = s.n
		for k, n := range s.failed {
			st.ErrorClasses[k] += n
			st.Failed += n
			for range n {
				st.Requests = append(st.Requests, Request{ErrorClass: k, TPOT: -1, OutputTokens: -1})
			}
		}
		ev.Steps = append(ev.Steps, st)
	}
	return ev
}

func defaultOpts(t *testing.T) Options {
	t.Helper()
	th, err := ParseThresholds(DefaultThresholds)
	if err != nil {
		t.Fatal(err)
	}
	return Options{Thresholds: th, SLO: defaultSLO, Iters: 500}
}

// defaultSLO is the methodology's example SLO.
var defaultSLO = slo.SLO{TTFT: 800 * time.Millisecond, TPOT: 50 * time.Millisecond}

func rule(v *Verdict, name string) Rule {
	for _, r := range v.Rules {
		if r.Name == name {
			return r
		}
	}
	return Rule{}
}

func TestCompare(t *testing.T) {
	base := sideSpec{rounds: 2, n: 150, ttft: 100, tpot: 20}
	f := func(name string, b, c sideSpec, opts func(*Options), outcome string, want ...string) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			o := defaultOpts(t)
			if opts != nil {
				opts(&o)
			}
			if c.seed == 0 {
				c.seed = 99
			}
			v := Compare(buildSide(b), buildSide(c), o)
			text := strings.Join(append(append([]string{}, v.Reasons...), v.Missing...), "\n")
			if v.Outcome != outcome {
				t.Fatalf("outcome %s, want %s:\n%s", v.Outcome, outcome, text)
			}
			for _, w := range want {
				if !strings.Contains(text, w) {
					t.Errorf("reasons and missing lack %q:\n%s", w, text)
				}
			}
			wantCode := map[string]int{OutcomePass: 0, OutcomeFail: 1, OutcomeInconclusive: 3}[outcome]
			if v.ExitCode() != wantCode {
				t.Errorf("exit code %d, want %d", v.ExitCode(), wantCode)
			}
		})
	}
	f("identical", base, base, nil, OutcomePass)
	slow := base
	slow.tpot = 40
	f("slower decode", base, slow, nil, OutcomeFail, "tpot_p99 @ rate=4: regressed", "beyond the 10 % limit")
	faster := base
	faster.tpot = 10
	f("faster decode", base, faster, nil, OutcomePass, "every rule holds")
	model := base
	model.fields = map[string]string{FieldModel: "other"}
	f("other model", base, model, nil, OutcomeInconclusive, "model differs (baseline m, candidate other)", "--vary endpoint,model)")
	f("other model declared", base, model, func(o *Options) { o.Vary = []string{FieldEndpoint, FieldModel} }, OutcomePass)
	noVersion := base
	noVersion.fields = map[string]string{FieldServerVersion: ""}
	f("version not recorded", base, noVersion, nil, OutcomeInconclusive, "not recorded on both sides: server_version")
	few := sideSpec{rounds: 2, n: 30, ttft: 100, tpot: 20}
	f("too few samples", few, few, nil, OutcomeInconclusive, "p99 needs 100 per side: 40 more requests per side")
	one := base
	one.rounds = 1
	f("one round", one, one, nil, OutcomeInconclusive, "at least 2 rounds per side")
	sat := base
	sat.validity = func(v *sweep.Validity) {
		v.Valid, v.Flags, v.Reasons = false, []string{sweep.FlagClientSaturated}, []string{"send-lag p99 30 ms > 10 ms"}
	}
	f("client saturated", base, sat, nil, OutcomeInconclusive, "client saturated in candidate round 1 rate=4 (send-lag p99 30 ms > 10 ms)")
	busy := base
	busy.validity = func(v *sweep.Validity) { v.Idle.Status = sweep.IdleNotIdle }
	f("not idle", base, busy, nil, OutcomeInconclusive, "server not idle before candidate round 1")
	errs := base
	errs.failed = map[string]int{"http_5xx": 1}
	f("error class on one side", base, errs, nil, OutcomeInconclusive, "http_5xx (2, candidate only)")
	longer := base
	longer.out = 32
	f("output tokens differ", base, longer, nil, OutcomeInconclusive, "the distributions differ")
	f("goodput without SLO", base, base, func(o *Options) { o.SLO = slo.SLO{} }, OutcomeInconclusive, "an SLO (--goodput)")
	// Identical but noisy sides: the TPOT p99's interval reaches past the
	// 10 % limit, which rules out neither a pass nor a fail (V1).
	noisy := base
	noisy.noise, noisy.n = 0.3, 100
	f("wide interval", noisy, noisy, nil, OutcomeInconclusive, "tpot_p99 @ rate=4 undecided:", "past the 10 % limit",
		"requests per side, all rounds together, to decide tpot_p99 @ rate=4")
}

// TestEvidenceToDecide: the requests per side that would bring an
// interval's upper end under the limit (or its lower end over 0), from its
// width narrowing as 1/sqrt(n).
func TestEvidenceToDecide(t *testing.T) {
	for _, tc := range []struct {
		d    decision
		n    int
		need int
		how  string
	}{
		// No change, interval -10 … +20 % against 10 %: half the upper
		// half-width, four times the requests.
		{decision{worse: 0, lo: -0.1, hi: 0.2, limit: 0.1}, 400, 1600, "would decide it (pass"},
		// +15 % beyond 10 %, interval -5 … +35 %: the lower half-width
		// 0.20 must shrink to 0.15.
		{decision{worse: 0.15, lo: -0.05, hi: 0.35, limit: 0.1}, 400, 712, "would decide it (fail"},
		{decision{worse: 0.0999, lo: 0, hi: 0.3, limit: 0.1}, 400, 0, "too close to the limit"},
		{decision{worse: 0, lo: -0.1, hi: 0.1, limit: 0}, 400, 0, "sits on the limit"},
	} {
		need, how := evidenceToDecide(tc.d, tc.n)
		if need != tc.need || !strings.Contains(how, tc.how) {
			t.Errorf("%+v: %d (%s), want %d (%s)", tc.d, need, how, tc.need, tc.how)
		}
	}
}

// TestResultOptions: analyze of a compare directory takes the thresholds
// compare compared: result.json's compared, or for a result.json written
// before it, max_regression without goodput when there was no SLO (V2).
func TestResultOptions(t *testing.T) {
	th, err := ParseThresholds("ttft_p99=10%,tpot_p90=7%,goodput=5%,cost=0.125")
	if err != nil {
		t.Fatal(err)
	}
	text := FormatThresholds(th)
	if back, err := ParseThresholds(text); err != nil || !slices.Equal(back, th) {
		t.Errorf("FormatThresholds %q reads back as %+v (%v), want %+v", text, back, err, th)
	}
	old := &Result{MaxRegression: DefaultThresholds, SLO: map[string]float64{}}
	if got := FormatThresholds(old.Options(Options{}, Given{}).Thresholds); got != "ttft_p99=10%,tpot_p99=10%" {
		t.Errorf("older result.json without an SLO compares %s", got)
	}
	old.SLO = map[string]float64{"ttft": 800}
	if got := FormatThresholds(old.Options(Options{}, Given{}).Thresholds); got != "ttft_p99=10%,tpot_p99=10%,goodput=5%" {
		t.Errorf("older result.json with an SLO compares %s", got)
	}
	cur := &Result{MaxRegression: DefaultThresholds, Compared: "tpot_p99=10%", SLO: map[string]float64{"ttft": 800}}
	if got := FormatThresholds(cur.Options(Options{}, Given{}).Thresholds); got != "tpot_p99=10%" {
		t.Errorf("result.json with compared gives %s", got)
	}
}

func TestCompareSummariesOnly(t *testing.T) {
	b, c := buildSide(sideSpec{rounds: 2, n: 150, ttft: 100, tpot: 20}), buildSide(sideSpec{rounds: 2, n: 150, ttft: 100, tpot: 20, seed: 3})
	for _, e := range []*Evidence{b, c} {
		for i := range e.Steps {
			e.Steps[i].Requests = nil
			e.Steps[i].Percentiles = map[string]map[float64]float64{MetricTPOT: {99: 21}}
		}
	}
	v := Compare(b, c, defaultOpts(t))
	if v.Outcome != OutcomeInconclusive {
		t.Fatalf("outcome %s, want inconclusive", v.Outcome)
	}
	if r := rule(v, RuleOutputTokens); r.Status != StatusNotRecorded {
		t.Errorf("output tokens rule %s, want not-recorded", r.Status)
	}
	for _, f := range v.Figures {
		if f.Status != StatusNotRecorded {
			t.Errorf("figure %s: %s, want not-recorded", f.Name, f.Status)
		}
	}
	if f := v.Figures[1]; f.Baseline != 21 || len(f.BaselineRounds) != 2 {
		t.Errorf("tpot figure: %+v, want the recorded p99s", f)
	}
}

func TestParseThresholds(t *testing.T) {
	th, err := ParseThresholds("ttft_p99=10%, tpot_p99.9=0.2,goodput=5%,throughput=1%")
	if err != nil {
		t.Fatal(err)
	}
	want := []Threshold{{MetricTTFT, 99, 0.1}, {MetricTPOT, 99.9, 0.2}, {FigureGoodput, 0, 0.05}, {FigureThroughput, 0, 0.01}}
	for i, w := range want {
		if th[i].Metric != w.Metric || th[i].P != w.P || math.Abs(th[i].Max-w.Max) > 1e-12 {
			t.Errorf("threshold %d: %+v, want %+v", i, th[i], w)
		}
	}
	if th[1].Name() != "tpot_p99.9" {
		t.Errorf("name %q", th[1].Name())
	}
	for in, msg := range map[string]string{
		"ttft=10%":              `unknown figure "ttft"`,
		"ttft_p99":              "is not NAME=LIMIT",
		"ttft_p99=-1%":          "is not a percentage",
		"ttft_p99=1,ttft_p99=2": "ttft_p99 given twice",
		"":                      "no NAME=LIMIT pair",
		"itl_p99=10%":           `unknown figure "itl_p99"`,
	} {
		if _, err := ParseThresholds(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseThresholds(%q) = %v, want %q", in, err, msg)
		}
	}
}

func TestParseVary(t *testing.T) {
	v, err := ParseVary("endpoint, model,endpoint")
	if err != nil || len(v) != 2 || v[1] != FieldModel {
		t.Fatalf("ParseVary = %v, %v", v, err)
	}
	if _, err := ParseVary("modle"); err == nil || !strings.Contains(err.Error(), `unknown fingerprint field "modle"`) {
		t.Errorf("ParseVary(modle) = %v", err)
	}
}

func TestKSTest(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var a, b, c []float64
	for range 400 {
		a = append(a, rng.NormFloat64())
		b = append(b, rng.NormFloat64())
		c = append(c, rng.NormFloat64()+0.5)
	}
	if d, p := ksTest(a, a); d != 0 || p != 1 {
		t.Errorf("identical samples: D=%v p=%v, want 0, 1", d, p)
	}
	if _, p := ksTest(a, b); p < 0.01 {
		t.Errorf("same distribution: p=%v, want >= 0.01", p)
	}
	if d, p := ksTest(a, c); p > 1e-6 || d < 0.1 {
		t.Errorf("shifted distribution: D=%v p=%v, want a rejection", d, p)
	}
	// By hand: D = 0.4 (F1(2) = 0.4, F2(2) = 0); en = sqrt(25/10), lambda =
	// (en + 0.12 + 0.11/en) * 0.4 = 0.708 and Q(0.708) = 0.697.
	d, p := ksTest([]float64{1, 2, 3, 4, 5}, []float64{3, 4, 5, 6, 7})
	if d != 0.4 || math.Abs(p-0.697) > 0.01 {
		t.Errorf("small samples: D=%v p=%v, want 0.4, ~0.697", d, p)
	}
}

func TestDiffCI(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	sample := func(mu float64) [][]float64 {
		var out [][]float64
		for range 3 {
			var r []float64
			for range 200 {
				r = append(r, mu*(1+0.1*rng.NormFloat64()))
			}
			out = append(out, r)
		}
		return out
	}
	b, same, up := newFigure(sample(10), nil, 99), newFigure(sample(10), nil, 99), newFigure(sample(15), nil, 99)
	if lo, hi, ok := diffCI(b, same, 1000, 0.95, 1); !ok || lo > 0 || hi < 0 {
		t.Errorf("same distribution: interval %v … %v, want it to hold 0", lo, hi)
	}
	lo, hi, ok := diffCI(b, up, 1000, 0.95, 1)
	if !ok || !(lo > 0.3 && hi < 0.7) {
		t.Errorf("50 %% slower: interval %v … %v, want about +50 %%", lo, hi)
	}
	// Rounds that disagree widen the interval: the same pooled samples split
	// into rounds with a shift between them.
	shifted := [][]float64{sample(8)[0], sample(12)[0]}
	steady := [][]float64{append(append([]float64{}, shifted[0]...), shifted[1]...)}
	l1, h1, _ := diffCI(newFigure(shifted, nil, 50), newFigure(shifted, nil, 50), 1000, 0.95, 2)
	l2, h2, _ := diffCI(newFigure(steady, nil, 50), newFigure(steady, nil, 50), 1000, 0.95, 2)
	if !(h1-l1 > 2*(h2-l2)) {
		t.Errorf("spread between rounds: interval width %v, want well above the single round's %v", h1-l1, h2-l2)
	}
	// Rates: per-request flags over durations.
	rb := newFigure([][]float64{{1, 1, 1, 1}, {1, 1, 1, 0}}, []float64{1, 1}, 0)
	if v := rb.value(); v != 3.5 {
		t.Errorf("rate value %v, want 3.5", v)
	}
}

func TestDiffFields(t *testing.T) {
	b := map[string][]string{FieldEndpoint: {"a"}, FieldModel: {"m"}, FieldSeed: {"0", "1"}, FieldServerVersion: {"1"}}
	c := map[string][]string{FieldEndpoint: {"b"}, FieldModel: {"m"}, FieldSeed: {"0", "1"}, FieldServerVersion: {"1", "2"}}
	got := map[string]string{}
	for _, d := range DiffFields(b, c, DefaultVary) {
		got[d.Field] = d.Status
	}
	want := map[string]string{FieldEndpoint: FieldVaried, FieldModel: FieldSame, FieldSeed: FieldSame,
		FieldServerVersion: FieldChanged, FieldEngineConfig: FieldNotRecorded}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %s, want %s", k, got[k], w)
		}
	}
}

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRegressionOnOneRound: a candidate 25 % slower in one round of two
// and 4 % in the other (something its validity flags did not see) does not
// fail, although the interval excludes no change: without that round the
// change is within the limit, so the figure is undecided and the verdict
// asks for more rounds.
func TestRegressionOnOneRound(t *testing.T) {
	b := buildSide(sideSpec{rounds: 2, n: 150, ttft: 100, tpot: 20})
	c := buildSide(sideSpec{rounds: 2, n: 150, ttft: 100, tpot: 20, seed: 7})
	for i := range c.Steps[0].Requests {
		c.Steps[0].Requests[i].TPOT *= 1.25
	}
	for i := range c.Steps[1].Requests {
		c.Steps[1].Requests[i].TPOT *= 1.04
	}
	v := Compare(b, c, Options{Thresholds: []Threshold{{Metric: MetricTPOT, P: 99, Max: 0.1}}, SLO: defaultSLO, Iters: 500})
	f := v.Figures[0]
	if v.Outcome != OutcomeInconclusive || f.Status != StatusUndecided || !strings.Contains(f.Detail, "but not without candidate round 1") {
		t.Fatalf("outcome %s, figure %s: %s", v.Outcome, f.Status, f.Detail)
	}
	if m := strings.Join(v.Missing, "\n"); !strings.Contains(m, "more rounds per side (--rounds)") {
		t.Errorf("missing: %s", m)
	}
	// Both rounds slower: a regression.
	for i := range c.Steps[1].Requests {
		c.Steps[1].Requests[i].TPOT *= 1.2
	}
	if v := Compare(b, c, Options{Thresholds: []Threshold{{Metric: MetricTPOT, P: 99, Max: 0.1}}, SLO: defaultSLO, Iters: 500}); v.Outcome != OutcomeFail {
		t.Errorf("both rounds slower: %s %v", v.Outcome, v.Reasons)
	}
}

// TestJudgeV1: the figures of issue 22 V1. A 50 %-slower candidate whose
// TPOT p99 came out +20.7 % with an interval of −0.6 … +188.7 % passed
// ("no significant difference"); an interval reaching far past the limit
// is undecided. A change whose whole interval lies under the limit passes;
// one beyond it, excluding 0, fails.
func TestJudgeV1(t *testing.T) {
	th := Threshold{Metric: MetricTPOT, P: 99, Max: 0.1}
	for _, tc := range []struct {
		change, lo, hi float64
		want           Status
	}{
		{0.207, -0.006, 1.887, StatusUndecided},
		{0.02, -0.05, 0.099, StatusOK},
		{0.02, -0.05, 0.10, StatusUndecided},
		{0.25, 0.02, 0.5, StatusFailed},
		{0.08, 0.02, 0.5, StatusUndecided}, // a significant regression that may be within the limit or not
		{-0.3, -0.5, -0.1, StatusOK},
	} {
		f := Figure{Baseline: 10, Candidate: 10 * (1 + tc.change), Change: tc.change, CILo: tc.lo, CIHi: tc.hi, Conf: 0.95, Unit: "ms",
			NBaseline: 400, NCandidate: 400}
		judge(&f, th, roundOut{})
		if f.Status != tc.want {
			t.Errorf("%+v: %s (%s), want %s", tc, f.Status, f.Detail, tc.want)
		}
	}
	// A rate (goodput) regresses downwards: a drop whose interval reaches
	// −20 % against a 5 % limit is undecided.
	f := Figure{Baseline: 10, Candidate: 9.9, Change: -0.01, CILo: -0.2, CIHi: 0.02, Conf: 0.95, Unit: "req/s", NBaseline: 400, NCandidate: 400}
	if judge(&f, Threshold{Metric: FigureGoodput, Max: 0.05}, roundOut{}); f.Status != StatusUndecided {
		t.Errorf("goodput drop: %s (%s)", f.Status, f.Detail)
	}
}
