package workload

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func TestLengthSamplerRange(t *testing.T) {
	tests := []struct {
		name   string
		spec   LengthSpec
		lo, hi int
	}{
		{name: "fixed", spec: Fixed(64), lo: 64, hi: 64},
		// vLLM: floor(1024*0.5)=512, ceil(1024*1.5)=1536
		{name: "uniform ratio", spec: LengthSpec{Dist: DistUniform, Value: 1024, RangeRatio: 0.5}, lo: 512, hi: 1536},
		// floor(7.5)=7, ceil(12.5)=13
		{name: "uniform ratio rounding", spec: LengthSpec{Dist: DistUniform, Value: 10, RangeRatio: 0.25}, lo: 7, hi: 13},
		// floor(0.1)=0 raised to 1, ceil(1.9)=2
		{name: "uniform low raised to 1", spec: LengthSpec{Dist: DistUniform, Value: 1, RangeRatio: 0.9}, lo: 1, hi: 2},
		{name: "uniform ratio 0", spec: LengthSpec{Dist: DistUniform, Value: 5}, lo: 5, hi: 5},
		{name: "uniform min max", spec: LengthSpec{Dist: DistUniform, Min: 10, Max: 20}, lo: 10, hi: 20},
		{name: "lognormal capped", spec: LengthSpec{Dist: DistLognormal, Median: 200, Sigma: 2, Max: 300}, lo: 1, hi: 300},
		// The audit's config (median 300, sigma 2.5) with the hard cap as max.
		{name: "lognormal at the hard cap", spec: LengthSpec{Dist: DistLognormal, Median: 300, Sigma: 2.5, Max: MaxLength}, lo: 1, hi: MaxLength},
		{name: "choice", spec: LengthSpec{Dist: DistChoice, Choices: []Choice{{100, 0.9}, {9100, 0.1}}}, lo: 100, hi: 9100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, err := NewLengthSampler(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if lo, hi := l.Range(); lo != tc.lo || hi != tc.hi {
				t.Fatalf("Range = [%d, %d], want [%d, %d]", lo, hi, tc.lo, tc.hi)
			}
			r := newRand(1)
			seen := map[int]bool{}
			for range 20000 {
				v := l.Draw(r)
				if v < tc.lo || v > tc.hi {
					t.Fatalf("draw %d outside [%d, %d]", v, tc.lo, tc.hi)
				}
				seen[v] = true
			}
			if !seen[tc.lo] || !seen[tc.hi] {
				t.Fatalf("bounds never drawn in 20000 draws: lo %v hi %v", seen[tc.lo], seen[tc.hi])
			}
			if tc.spec.Dist == DistUniform && len(seen) != tc.hi-tc.lo+1 {
				t.Fatalf("%d distinct values, want every integer of [%d, %d]", len(seen), tc.lo, tc.hi)
			}
		})
	}
}

func TestLengthSamplerDistribution(t *testing.T) {
	const n = 40000
	t.Run("uniform mean", func(t *testing.T) {
		l, _ := NewLengthSampler(LengthSpec{Dist: DistUniform, Value: 1024, RangeRatio: 0.5})
		r := newRand(2)
		var sum float64
		for range n {
			sum += float64(l.Draw(r))
		}
		// mean 1024, std of a draw (1536-512+1)/sqrt(12) ~ 296, SE ~ 1.5
		if m := sum / n; math.Abs(m-1024) > 8 {
			t.Fatalf("mean %v, want 1024 +- 8", m)
		}
	})
	t.Run("lognormal median", func(t *testing.T) {
		// max 100000 is 7.8 sigma above the median: never reached.
		l, err := NewLengthSampler(LengthSpec{Dist: DistLognormal, Median: 200, Sigma: 0.8, Max: 100000})
		if err != nil {
			t.Fatal(err)
		}
		r := newRand(3)
		xs := make([]int, n)
		var logSum float64
		for i := range xs {
			xs[i] = l.Draw(r)
			logSum += math.Log(float64(xs[i]))
		}
		slices.Sort(xs)
		if med := xs[n/2]; med < 194 || med > 206 {
			t.Fatalf("median %d, want 200 +- 3%%", med)
		}
		// Std of log draws ~ sigma.
		mean := logSum / n
		var ss float64
		for _, x := range xs {
			d := math.Log(float64(x)) - mean
			ss += d * d
		}
		if s := math.Sqrt(ss / n); math.Abs(s-0.8) > 0.03 {
			t.Fatalf("std of log lengths %v, want 0.8", s)
		}
	})
	// share is the fraction of n draws of spec (seeded seed) that are v.
	share := func(t *testing.T, spec LengthSpec, seed uint64, v int) float64 {
		l, err := NewLengthSampler(spec)
		if err != nil {
			t.Fatal(err)
		}
		r := newRand(seed)
		hits := 0
		for range n {
			if l.Draw(r) == v {
				hits++
			}
		}
		return float64(hits) / n
	}
	t.Run("lognormal cap share", func(t *testing.T) {
		// P(X > 400) for median 200, sigma 0.8 = P(Z > ln2/0.8 = 0.866) ~ 0.193
		if f := share(t, LengthSpec{Dist: DistLognormal, Median: 200, Sigma: 0.8, Max: 400}, 4, 400); math.Abs(f-0.193) > 0.01 {
			t.Fatalf("share at the cap %v, want ~0.193", f)
		}
	})
	t.Run("choice weights", func(t *testing.T) {
		// 10% +- 4.5 SE (SE = 0.0015)
		if f := share(t, LengthSpec{Dist: DistChoice, Choices: []Choice{{100, 9}, {9100, 1}}}, 5, 9100); math.Abs(f-0.1) > 0.007 {
			t.Fatalf("share of 9100 %v, want 0.1", f)
		}
	})
}

func TestLengthSpecStrict(t *testing.T) {
	tests := []struct {
		name    string
		spec    LengthSpec
		wantErr string
	}{
		{name: "fixed with range_ratio", spec: LengthSpec{Dist: DistFixed, Value: 5, RangeRatio: 0.5}, wantErr: "range_ratio does not apply to dist fixed"},
		{name: "fixed with max", spec: LengthSpec{Dist: DistFixed, Value: 5, Max: 9}, wantErr: "max does not apply to dist fixed"},
		{name: "uniform min max with ratio", spec: LengthSpec{Dist: DistUniform, Min: 1, Max: 9, RangeRatio: 0.1}, wantErr: "range_ratio needs value for dist uniform"},
		{name: "uniform with sigma", spec: LengthSpec{Dist: DistUniform, Value: 5, Sigma: 1}, wantErr: "sigma does not apply to dist uniform"},
		{name: "lognormal with value", spec: LengthSpec{Dist: DistLognormal, Median: 5, Sigma: 1, Value: 3}, wantErr: "value does not apply to dist lognormal"},
		{name: "lognormal with min", spec: LengthSpec{Dist: DistLognormal, Median: 5, Sigma: 1, Min: 3}, wantErr: "min does not apply to dist lognormal"},
		{name: "choice with value", spec: LengthSpec{Dist: DistChoice, Value: 1, Choices: []Choice{{1, 1}}}, wantErr: "value does not apply to dist choice"},
		{name: "unknown dist still reported", spec: LengthSpec{Dist: "normal", Value: 1}, wantErr: `unknown dist "normal"`},
		{name: "lognormal ok", spec: LengthSpec{Dist: DistLognormal, Median: 5, Sigma: 1, Max: 10}},
		{name: "lognormal without max", spec: LengthSpec{Dist: DistLognormal, Median: 300, Sigma: 2.5},
			wantErr: "max is required for dist lognormal (an unbounded draw can exceed any context length; use the model's max_model_len)"},
		{name: "lognormal max below median", spec: LengthSpec{Dist: DistLognormal, Median: 300, Sigma: 1, Max: 299}, wantErr: "max must be >= median (300) for dist lognormal, got 299"},
		{name: "lognormal negative max", spec: LengthSpec{Dist: DistLognormal, Median: 3, Sigma: 1, Max: -1}, wantErr: "max must be >= median (3) for dist lognormal, got -1"},
		{name: "lognormal max at the cap", spec: LengthSpec{Dist: DistLognormal, Median: 300, Sigma: 2.5, Max: MaxLength}},
		{name: "lognormal max over the cap", spec: LengthSpec{Dist: DistLognormal, Median: 300, Sigma: 2.5, Max: MaxLength + 1}, wantErr: "max must be <= 1048576 (the largest length llmprobe draws), got 1048577"},
		{name: "fixed at the cap", spec: Fixed(MaxLength)},
		{name: "fixed over the cap", spec: Fixed(MaxLength + 1), wantErr: "value must be <= 1048576 (the largest length llmprobe draws), got 1048577"},
		{name: "uniform ratio over the cap", spec: LengthSpec{Dist: DistUniform, Value: 800000, RangeRatio: 0.5}, wantErr: "ceil(value*(1+range_ratio)) must be <= 1048576 (the largest length llmprobe draws), got 1200000"},
		{name: "uniform ratio at the cap", spec: LengthSpec{Dist: DistUniform, Value: 1 << 19, RangeRatio: 0.999999}},
		{name: "uniform max over the cap", spec: LengthSpec{Dist: DistUniform, Min: 1, Max: 2 << 20}, wantErr: "max must be <= 1048576 (the largest length llmprobe draws), got 2097152"},
		{name: "choice over the cap", spec: LengthSpec{Dist: DistChoice, Choices: []Choice{{1, 1}, {1 << 21, 1}}}, wantErr: "choices[1].value must be <= 1048576 (the largest length llmprobe draws), got 2097152"},
		{name: "uniform ok", spec: LengthSpec{Dist: DistUniform, Value: 5, RangeRatio: 0.2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewLengthSampler(tc.spec)
			if (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestSpecHash(t *testing.T) {
	yes := true
	a := DefaultSpec()
	b := DefaultSpec()
	b.IgnoreEOS = &yes // the default written out
	c := DefaultSpec()
	c.PrefixTokens = 1
	if a.Hash() != b.Hash() {
		t.Fatal("explicit default ignore_eos changed the hash")
	}
	if a.Hash() == c.Hash() {
		t.Fatal("different prefix, same hash")
	}
	if h := a.Hash(); !strings.HasPrefix(h, "sha256:") || len(h) != 7+64 {
		t.Fatalf("hash %q", h)
	}
	bad := DefaultSpec()
	bad.InputTokens = LengthSpec{Dist: DistLognormal, Median: 3, Sigma: math.NaN()}
	if bad.Hash() == a.Hash() {
		t.Fatal("NaN spec hashed like the default")
	}
}
