package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// Expected values follow numpy's definitions (np.percentile default
// "linear", np.median, np.mean, np.std with ddof=0). The small cases are
// worked by hand in the comments; the values for the generated series were
// printed by numpy 1.24 with repr() and are compared bit for bit.

// latencies is a small, unsorted sample.
var latencies = []float64{0.123, 0.456, 0.0789, 1.5, 0.333, 0.25, 0.9, 0.061, 0.777, 0.42, 2.5, 0.018}

// series is math.fmod(i*0.37, 1.13) for i in range(n), in Python and Go alike.
func series(n int, scale, offset float64) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = math.Mod(float64(i)*0.37, 1.13)*scale + offset
	}
	return xs
}

func TestPercentile(t *testing.T) {
	tests := []struct {
		name string
		xs   []float64
		p    float64
		want float64
	}{
		// sorted [1 2 3 4]: index 3*0.9 = 2.7 -> 3 + 0.7*(4-3) = 3.7
		{name: "brief example p90", xs: []float64{4, 1, 3, 2}, p: 90, want: 3.7},
		// index 1.5 -> 2 + 0.5 = 2.5
		{name: "p50 even", xs: []float64{1, 2, 3, 4}, p: 50, want: 2.5},
		// index 0.75 -> 1.75
		{name: "p25", xs: []float64{1, 2, 3, 4}, p: 25, want: 1.75},
		// index 2.97 -> 4 - 0.03*1 in numpy's lerp (t >= 0.5) = 3.9699999999999998
		{name: "p99 lerp from above", xs: []float64{1, 2, 3, 4}, p: 99, want: 3.9699999999999998},
		{name: "p0 is min", xs: latencies, p: 0, want: 0.018},
		{name: "p100 is max", xs: latencies, p: 100, want: 2.5},
		{name: "single", xs: []float64{7}, p: 99, want: 7},
		{name: "empty is 0 (vLLM x or 0)", xs: nil, p: 99, want: 0},
		{name: "latencies p10", xs: latencies, p: 10, want: 0.06279},
		{name: "latencies p50", xs: latencies, p: 50, want: 0.3765},
		{name: "latencies p90", xs: latencies, p: 90, want: 1.4400000000000002},
		{name: "latencies p99", xs: latencies, p: 99, want: 2.3900000000000006},
		{name: "latencies p99.9", xs: latencies, p: 99.9, want: 2.4890000000000008},
		{name: "latencies p33.3", xs: latencies, p: 33.3, want: 0.2072009999999999},
		{name: "series p50", xs: series(300, 1, 0), p: 50, want: 0.5700000000000043},
		{name: "series p90", xs: series(300, 1, 0), p: 90, want: 1.0210000000000055},
		{name: "series p99", xs: series(300, 1, 0), p: 99, want: 1.1101000000000116},
		{name: "series p99.9", xs: series(300, 1, 0), p: 99.9, want: 1.1200000000000065},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			orig := append([]float64(nil), tc.xs...)
			if got := Percentile(tc.xs, tc.p); got != tc.want {
				t.Fatalf("Percentile(p=%v) = %v, want %v", tc.p, got, tc.want)
			}
			for i := range orig {
				if orig[i] != tc.xs[i] {
					t.Fatal("Percentile modified its input")
				}
			}
		})
	}
}

func TestPercentileInvalid(t *testing.T) {
	tests := []struct {
		name string
		p    float64
	}{
		{name: "negative", p: -1},
		{name: "above 100", p: 100.5},
		{name: "nan", p: math.NaN()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Percentile([]float64{1, 2}, tc.p); !math.IsNaN(got) {
				t.Fatalf("Percentile(p=%v) = %v, want NaN", tc.p, got)
			}
		})
	}
}

func TestMoments(t *testing.T) {
	tests := []struct {
		name                  string
		xs                    []float64
		mean, median, std     float64
		naiveMeanDiffersFromN bool
	}{
		// mean 2.5; deviations -1.5 -0.5 0.5 1.5 -> squares sum 5, /4 = 1.25
		{name: "1..4", xs: []float64{3, 1, 4, 2}, mean: 2.5, median: 2.5, std: math.Sqrt(1.25)},
		{name: "odd count", xs: []float64{5, 1, 3}, mean: 3, median: 3, std: math.Sqrt(8.0 / 3)},
		{name: "empty", xs: nil},
		{name: "latencies", xs: latencies, mean: 0.6180749999999999, median: 0.3765, std: 0.701940924775725},
		// numpy's pairwise sum gives ...046; naive left-to-right gives ...042.
		{name: "series 300", xs: series(300, 1, 0), mean: 0.5665000000000046, median: 0.5700000000000043, std: 0.32752417213594065, naiveMeanDiffersFromN: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Mean(tc.xs); got != tc.mean {
				t.Errorf("Mean = %v, want %v", got, tc.mean)
			}
			if got := Median(tc.xs); got != tc.median {
				t.Errorf("Median = %v, want %v", got, tc.median)
			}
			if got := Std(tc.xs); got != tc.std {
				t.Errorf("Std = %v, want %v", got, tc.std)
			}
			if tc.naiveMeanDiffersFromN {
				var naive float64
				for _, x := range tc.xs {
					naive += x
				}
				if naive/float64(len(tc.xs)) == tc.mean {
					t.Error("naive summation matches too: the case does not test pairwise summation")
				}
			}
		})
	}
}

func TestSumPairwiseLarge(t *testing.T) {
	// 1000 values near 1000: numpy np.mean = 1000.0005617200001, np.std =
	// 0.00032630728094957634 (naive summation gives 1000.0005617199996).
	xs := series(1000, 1e-3, 1e3)
	if got := Mean(xs); got != 1000.0005617200001 {
		t.Errorf("Mean = %v, want 1000.0005617200001", got)
	}
	if got := Std(xs); got != 0.00032630728094957634 {
		t.Errorf("Std = %v, want 0.00032630728094957634", got)
	}
}

func TestSummarize(t *testing.T) {
	s := Summarize(latencies, 99.9, 10, 50)
	want := Summary{N: 12, Mean: 0.6180749999999999, Median: 0.3765, Std: 0.701940924775725, Min: 0.018, Max: 2.5,
		P50: 0.3765, P90: 1.4400000000000002, P99: 2.3900000000000006}
	if s.N != want.N || s.Mean != want.Mean || s.Median != want.Median || s.Std != want.Std || s.Min != want.Min ||
		s.Max != want.Max || s.P50 != want.P50 || s.P90 != want.P90 || s.P99 != want.P99 {
		t.Fatalf("Summarize = %+v, want %+v", s, want)
	}
	wantQ := []Quantile{{P: 99.9, Value: 2.4890000000000008, Reliable: false}, {P: 10, Value: 0.06279, Reliable: true}, {P: 50, Value: 0.3765, Reliable: true}}
	if len(s.Percentiles) != len(wantQ) {
		t.Fatalf("Percentiles = %+v, want %+v", s.Percentiles, wantQ)
	}
	for i := range wantQ {
		if s.Percentiles[i] != wantQ[i] {
			t.Errorf("Percentiles[%d] = %+v, want %+v", i, s.Percentiles[i], wantQ[i])
		}
	}
	if v, ok := s.Percentile(99); !ok || v != want.P99 {
		t.Errorf("Percentile(99) = %v, %v", v, ok)
	}
	if v, ok := s.Percentile(99.9); !ok || v != 2.4890000000000008 {
		t.Errorf("Percentile(99.9) = %v, %v", v, ok)
	}
	if _, ok := s.Percentile(75); ok {
		t.Error("Percentile(75) reported as computed")
	}
	if e := Summarize(nil); e.N != 0 || e.Mean != 0 || e.P99 != 0 || e.Max != 0 {
		t.Errorf("Summarize(nil) = %+v, want zeros", e)
	}
}

func TestReliability(t *testing.T) {
	tests := []struct {
		name string
		p    float64
		min  int
	}{
		{name: "p99", p: 99, min: 100},
		{name: "p99.9", p: 99.9, min: 1000},
		{name: "p99.99", p: 99.99, min: 10000},
		{name: "p90", p: 90, min: 10},
		{name: "p95", p: 95, min: 20},
		{name: "median", p: 50, min: 2},
		{name: "p75", p: 75, min: 4},
		{name: "max", p: 100, min: 1},
		{name: "min", p: 0, min: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := MinSamples(tc.p); got != tc.min {
				t.Fatalf("MinSamples(%v) = %d, want %d", tc.p, got, tc.min)
			}
			if Reliable(tc.min-1, tc.p) && tc.min > 1 {
				t.Errorf("Reliable(%d, %v) = true", tc.min-1, tc.p)
			}
			if !Reliable(tc.min, tc.p) {
				t.Errorf("Reliable(%d, %v) = false", tc.min, tc.p)
			}
		})
	}
	if !P99Unreliable(99) || P99Unreliable(100) {
		t.Error("P99Unreliable boundary wrong: want true at 99, false at 100")
	}
}

func TestPercentileKey(t *testing.T) {
	tests := []struct {
		name string
		p    float64
		want string
	}{
		{name: "integer", p: 99, want: "99"},
		{name: "fraction", p: 99.9, want: "99.9"},
		{name: "two decimals", p: 99.99, want: "99.99"},
		{name: "fifty", p: 50, want: "50"},
		{name: "zero", p: 0, want: "0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := PercentileKey(tc.p); got != tc.want {
				t.Fatalf("PercentileKey(%v) = %q, want %q", tc.p, got, tc.want)
			}
		})
	}
}

func TestBootstrapCI(t *testing.T) {
	xs := series(500, 1, 0)
	ci, err := BootstrapCI(xs, 50, 0.95, 2000, 1)
	if err != nil {
		t.Fatal(err)
	}
	med := Percentile(xs, 50)
	if !(ci.Lo <= med && med <= ci.Hi) {
		t.Fatalf("95%% CI %+v does not contain the sample median %v", ci, med)
	}
	if ci.Hi-ci.Lo <= 0 || ci.Hi-ci.Lo > 0.3 {
		t.Fatalf("95%% CI %+v has an implausible width", ci)
	}
	again, err := BootstrapCI(xs, 50, 0.95, 2000, 1)
	if err != nil || again != ci {
		t.Fatalf("same seed gave %+v, want %+v", again, ci)
	}
	other, err := BootstrapCI(xs, 50, 0.95, 2000, 2)
	if err != nil || other == ci {
		t.Fatalf("another seed gave the same interval %+v", other)
	}
	narrow, err := BootstrapCI(xs, 50, 0.5, 2000, 1)
	if err != nil || !(narrow.Lo >= ci.Lo && narrow.Hi <= ci.Hi) {
		t.Fatalf("50%% CI %+v not inside the 95%% CI %+v", narrow, ci)
	}
	// With few samples the p99 interval must be wide and reach the maximum.
	few := latencies
	p99, err := BootstrapCI(few, 99, 0.9, 1000, 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("p99 90%% CI over 12 samples: %+v", p99)
	if p99.Hi-p99.Lo < 0.5 || p99.Hi > 2.5 {
		t.Fatalf("p99 CI over 12 samples %+v is too narrow", p99)
	}
	// Constant data: the interval collapses.
	c, err := BootstrapCI([]float64{3, 3, 3, 3}, 99, 0.95, 100, 1)
	if err != nil || c.Lo != 3 || c.Hi != 3 {
		t.Fatalf("constant data CI = %+v, %v", c, err)
	}
}

// TestBootstrapMatchesSort checks the O(n) counting shortcut against a plain
// resample-sort-percentile with the same random draws.
func TestBootstrapMatchesSort(t *testing.T) {
	xs := series(37, 1, 0)
	for _, p := range []float64{0, 10, 50, 90, 99, 100} {
		ci, err := BootstrapCI(xs, p, 0.8, 1, 5)
		if err != nil {
			t.Fatal(err)
		}
		// One iteration: the interval is the single bootstrap estimate.
		s := sortedCopy(xs)
		rng := NewRand(5, bootstrapStream)
		re := make([]float64, len(s))
		for i := range re {
			re[i] = s[rng.IntN(len(s))]
		}
		want := Percentile(re, p)
		if ci.Lo != want || ci.Hi != want {
			t.Errorf("p%v: CI %+v, want both bounds %v", p, ci, want)
		}
	}
}

func TestBootstrapErrors(t *testing.T) {
	tests := []struct {
		name    string
		xs      []float64
		p, conf float64
		iters   int
		wantErr string
	}{
		{name: "empty", xs: nil, p: 99, conf: 0.95, iters: 10, wantErr: "bootstrap of an empty sample"},
		{name: "bad p", xs: []float64{1}, p: 101, conf: 0.95, iters: 10, wantErr: "percentile must be in [0, 100], got 101"},
		{name: "bad conf", xs: []float64{1}, p: 99, conf: 1, iters: 10, wantErr: "confidence must be in (0, 1), got 1"},
		{name: "bad iters", xs: []float64{1}, p: 99, conf: 0.95, iters: 0, wantErr: "iterations must be >= 1, got 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := BootstrapCI(tc.xs, tc.p, tc.conf, tc.iters, 1)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func BenchmarkBootstrapCI10k(b *testing.B) {
	xs := series(10000, 1, 0)
	for b.Loop() {
		if _, err := BootstrapCI(xs, 99, 0.95, 1000, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// TestPercentileOfCounts: the percentile of a sample given as counts over
// sorted values equals Percentile of the sample written out, to the bit,
// walking from either end (p at or below 50 from the bottom, above from
// the top), on replicates with gaps, repeats and ties.
func TestPercentileOfCounts(t *testing.T) {
	sorted := []float64{1, 2, 3, 10}
	counts := []int{1, 1, 1, 1}
	for _, p := range []float64{0, 25, 50, 90, 99, 100} {
		want := map[float64]float64{0: 1, 25: 1.75, 50: 2.5, 90: 7.9, 99: 9.79, 100: 10}[p]
		if got := PercentileOfCounts(sorted, counts, 4, p); math.Abs(got-want) > 1e-9 {
			t.Errorf("p%v = %v, want %v", p, got, want)
		}
	}
	if got := PercentileOfCounts(sorted, []int{0, 0, 0, 0}, 0, 50); !math.IsNaN(got) {
		t.Errorf("no value: %v, want NaN", got)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 500 {
		n := 1 + rng.IntN(300)
		sorted := make([]float64, n)
		for i := range sorted {
			sorted[i] = math.Floor(100 * rng.Float64())
		}
		slices.Sort(sorted)
		counts, m := make([]int, n), 0
		var sample []float64
		for range n {
			counts[rng.IntN(n)]++
			m++
		}
		for j, c := range counts {
			for range c {
				sample = append(sample, sorted[j])
			}
		}
		for _, p := range []float64{0, 10, 50, 50.5, 75, 90, 99, 99.9, 100, 100 * rng.Float64()} {
			if got, want := PercentileOfCounts(sorted, counts, m, p), PercentileSorted(sample, p); got != want {
				t.Fatalf("trial %d: p%v = %v, want %v", trial, p, got, want)
			}
		}
	}
}
