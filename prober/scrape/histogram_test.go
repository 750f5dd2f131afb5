package scrape

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/prometheus/prometheus/promql"
)

func TestQuantileEdgeRules(t *testing.T) {
	inf := math.Inf(1)
	h := func(bs ...Bucket) *Histogram {
		var count float64
		for _, b := range bs {
			if math.IsInf(b.UpperBound, 1) {
				count = b.Count
			}
		}
		return &Histogram{Buckets: bs, count: count}
	}
	// 10 observations: 4 in (0,1], 4 in (1,2], 2 above 2.
	base := h(Bucket{1, 4}, Bucket{2, 8}, Bucket{inf, 10})
	tests := []struct {
		name string
		h    *Histogram
		q    float64
		want float64 // NaN compares as NaN
	}{
		{name: "q below 0", h: base, q: -0.1, want: math.Inf(-1)},
		{name: "q above 1", h: base, q: 1.1, want: math.Inf(1)},
		{name: "q NaN", h: base, q: math.NaN(), want: math.NaN()},
		{name: "first bucket interpolates from 0", h: base, q: 0.2, want: 0.5},
		{name: "second bucket", h: base, q: 0.6, want: 1.5},
		{name: "exactly on a boundary", h: base, q: 0.8, want: 2},
		{name: "+Inf bucket returns highest finite bound", h: base, q: 0.95, want: 2},
		{name: "q=1 in +Inf bucket", h: base, q: 1, want: 2},
		{name: "q=0", h: base, q: 0, want: 0},
		{name: "no observations", h: h(Bucket{1, 0}, Bucket{inf, 0}), q: 0.5, want: math.NaN()},
		{name: "only +Inf bucket", h: h(Bucket{inf, 3}), q: 0.5, want: math.NaN()},
		{name: "no +Inf bucket", h: &Histogram{Buckets: []Bucket{{1, 1}, {2, 2}}, count: 2}, q: 0.5, want: math.NaN()},
		{name: "no buckets", h: &Histogram{}, q: 0.5, want: math.NaN()},
		{name: "non-positive first bound returned as is", h: h(Bucket{-1, 5}, Bucket{1, 10}, Bucket{inf, 10}), q: 0.2, want: -1},
		{name: "unsorted input", h: h(Bucket{inf, 10}, Bucket{2, 8}, Bucket{1, 4}), q: 0.6, want: 1.5},
		{name: "duplicate bounds coalesced", h: h(Bucket{1, 2}, Bucket{1, 2}, Bucket{2, 8}, Bucket{inf, 10}), q: 0.2, want: 0.5},
		{name: "non-monotonic forced", h: h(Bucket{1, 4}, Bucket{2, 3}, Bucket{3, 8}, Bucket{inf, 8}), q: 0.75, want: 2.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.h.Quantile(tt.q)
			if !(got == tt.want || (math.IsNaN(got) && math.IsNaN(tt.want)) || near(got, tt.want)) {
				t.Errorf("Quantile(%v) = %v, want %v", tt.q, got, tt.want)
			}
		})
	}
	// Quantile must not modify the histogram.
	unsorted := h(Bucket{inf, 10}, Bucket{2, 8}, Bucket{1, 4})
	unsorted.Quantile(0.5)
	if unsorted.Buckets[0].UpperBound != inf {
		t.Error("Quantile sorted the receiver's buckets")
	}
}

// TestQuantileMatchesPrometheus checks Quantile against Prometheus' own
// promql.BucketQuantile on random classic histograms, including vLLM's
// bucket layouts, empty buckets, and noisy/non-monotonic counts.
func TestQuantileMatchesPrometheus(t *testing.T) {
	layouts := []struct {
		name   string
		bounds []float64
	}{
		{name: "vllm ttft", bounds: []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}},
		{name: "vllm request latency", bounds: []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}},
		{name: "with negative and zero bounds", bounds: []float64{-2, 0, 0.5, 1, 3}},
		{name: "two buckets", bounds: []float64{1}},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	qs := []float64{0, 0.01, 0.1, 0.25, 0.5, 0.9, 0.95, 0.99, 0.999, 1}
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			for trial := range 300 {
				bs := make([]Bucket, 0, len(l.bounds)+1)
				pb := make(promql.Buckets, 0, len(l.bounds)+1)
				var cum float64
				for _, ub := range append(append([]float64{}, l.bounds...), math.Inf(1)) {
					switch rng.IntN(4) {
					case 0: // empty bucket
					case 1:
						cum += float64(rng.IntN(1000))
					default:
						cum += float64(rng.IntN(10))
					}
					c := cum
					if trial%7 == 0 && rng.IntN(5) == 0 {
						c -= float64(rng.IntN(3)) // a decrease to be forced monotonic
					}
					if trial%11 == 0 {
						c *= 1 + 1e-14 // floating point noise
					}
					bs = append(bs, Bucket{UpperBound: ub, Count: c})
					pb = append(pb, promql.Bucket{UpperBound: ub, Count: c})
				}
				h := &Histogram{Buckets: bs, count: cum}
				for _, q := range qs {
					in := make(promql.Buckets, len(pb))
					copy(in, pb)
					want, _, _, _, _, _ := promql.BucketQuantile(q, in)
					got := h.Quantile(q)
					if !(got == want || (math.IsNaN(got) && math.IsNaN(want))) {
						t.Fatalf("trial %d q=%v: got %v, promql %v; buckets %v", trial, q, got, want, bs)
					}
				}
			}
		})
	}
}

func TestNewHistogram(t *testing.T) {
	h := NewHistogram([]Bucket{{2, 3}, {1, 1}}, 4, 5)
	if len(h.Buckets) != 3 || h.Buckets[0].UpperBound != 1 || !math.IsInf(h.Buckets[2].UpperBound, 1) || h.Buckets[2].Count != 4 {
		t.Errorf("buckets %v", h.Buckets)
	}
	if h.Count() != 4 || h.Sum() != 5 || h.Mean() != 1.25 {
		t.Errorf("count %v sum %v mean %v", h.Count(), h.Sum(), h.Mean())
	}
	if m := NewHistogram(nil, 0, 0).Mean(); !math.IsNaN(m) {
		t.Errorf("empty mean %v, want NaN", m)
	}
}
