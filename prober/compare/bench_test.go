package compare

import "testing"

// BenchmarkCompare10k is one comparison of two sides of 2 rounds x 5,000
// requests with the default thresholds and 2,000 bootstrap resamples.
func BenchmarkCompare10k(b *testing.B) {
	base := buildSide(sideSpec{rounds: 2, n: 5000, ttft: 100, tpot: 20})
	cand := buildSide(sideSpec{rounds: 2, n: 5000, ttft: 100, tpot: 20, seed: 9})
	th, err := ParseThresholds(DefaultThresholds)
	if err != nil {
		b.Fatal(err)
	}
	o := Options{Thresholds: th, SLO: defaultSLO}
	b.ResetTimer()
	for range b.N {
		if v := Compare(base, cand, o); v.Outcome != OutcomePass {
			b.Fatalf("outcome %s: %v", v.Outcome, v.Reasons)
		}
	}
}
