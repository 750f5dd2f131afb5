package compare

import (
	"math"
	"strings"
	"testing"
)

// TestCompareCost judges the cost per million good output tokens: the same
// requests on both sides at a 20 % higher candidate price regress the cost
// by exactly 20 % (fail, naming cost); SLO misses on the candidate raise
// its cost by the good tokens they lose; without a price on one side the
// figure is not recorded and the verdict inconclusive.
func TestCompareCost(t *testing.T) {
	th, err := ParseThresholds("cost=5%")
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Thresholds: th, SLO: defaultSLO, Iters: 300}
	spec := sideSpec{rounds: 2, n: 150, ttft: 100, tpot: 20}
	b, c := buildSide(spec), buildSide(spec)
	b.CostPerHour, c.CostPerHour = 2, 2.4
	v := Compare(b, c, o)
	f := v.Figures[0]
	if v.Outcome != OutcomeFail || f.Name != FigureCost || f.Status != StatusFailed || math.Abs(f.Change-0.2) > 1e-12 ||
		f.Unit != "USD/M tok" || !strings.Contains(strings.Join(v.Reasons, "\n"), "cost @ rate=4: regressed:") {
		t.Fatalf("verdict %s, figure %+v", v.Outcome, f)
	}
	// 16 tokens per request, 150 requests per round of 37.5 s: 64 good
	// tokens/s; 2 USD/h is 2 / (64 × 3600) × 1e6.
	if want := 2 / (64.0 * 3600) * 1e6; math.Abs(f.Baseline-want) > 1e-9 {
		t.Errorf("baseline cost %v, want %v", f.Baseline, want)
	}

	// The candidate's TPOT breaks the 50 ms SLO on about half its requests:
	// the same price buys half the good tokens.
	c = buildSide(sideSpec{rounds: 2, n: 150, ttft: 100, tpot: 50, seed: 7})
	c.CostPerHour = 2
	v = Compare(b, c, o)
	if f := v.Figures[0]; f.Status != StatusFailed || f.Change < 0.5 || f.CILo <= 0.05 {
		t.Errorf("SLO misses: cost figure %+v", f)
	}

	c.CostPerHour = 0
	v = Compare(b, c, o)
	if f := v.Figures[0]; v.Outcome != OutcomeInconclusive || f.Status != StatusNotRecorded || !strings.Contains(f.Detail, "no price per hour of the candidate") ||
		!strings.Contains(strings.Join(v.Missing, "\n"), "--baseline-cost-per-hour and --candidate-cost-per-hour") {
		t.Errorf("no candidate price: %s %+v %v", v.Outcome, f, v.Missing)
	}
}
