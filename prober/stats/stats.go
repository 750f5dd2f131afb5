// Package stats owns the exact statistics of sweep and compare reports:
// numpy-compatible mean, median, population standard deviation and linear
// percentiles (so figures match vllm bench serve on the same data), a
// Summary of one metric, a seeded bootstrap confidence interval for a
// percentile, and the rule that flags a percentile as unreliable when there
// are too few samples.
//
// Empty inputs give 0 for every statistic, as vllm bench serve's
// np.percentile(x or 0, p) does; Summary.N tells the caller there was no data.
// Functions never modify their input slices and are safe for concurrent use.
package stats

import (
	"math"
	"slices"
	"strconv"
)

// pairwiseBlock is numpy's PW_BLOCKSIZE.
const pairwiseBlock = 128

// Sum adds xs the way numpy's add.reduce does for a contiguous float64 array
// (pairwise summation with an 8-way unrolled base case), so Mean and Std
// match numpy to the last bit.
func Sum(xs []float64) float64 {
	n := len(xs)
	switch {
	case n < 8:
		var res float64
		for _, x := range xs {
			res += x
		}
		return res
	case n <= pairwiseBlock:
		var r [8]float64
		copy(r[:], xs[:8])
		i := 8
		for ; i < n-n%8; i += 8 {
			r[0] += xs[i]
			r[1] += xs[i+1]
			r[2] += xs[i+2]
			r[3] += xs[i+3]
			r[4] += xs[i+4]
			r[5] += xs[i+5]
			r[6] += xs[i+6]
			r[7] += xs[i+7]
		}
		res := ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
		for ; i < n; i++ {
			res += xs[i]
		}
		return res
	default:
		n2 := n / 2
		n2 -= n2 % 8
		return Sum(xs[:n2]) + Sum(xs[n2:])
	}
}

// Mean is np.mean(xs); 0 for no data.
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return Sum(xs) / float64(len(xs))
}

// Std is np.std(xs), the population standard deviation (ddof=0); 0 for no
// data.
func Std(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	m := Mean(xs)
	d := make([]float64, len(xs))
	for i, x := range xs {
		d[i] = (x - m) * (x - m)
	}
	return math.Sqrt(Sum(d) / float64(len(xs)))
}

// Median is np.median(xs): the middle element, or the mean of the two middle
// elements for an even count; 0 for no data.
func Median(xs []float64) float64 {
	return medianSorted(sortedCopy(xs))
}

func medianSorted(s []float64) float64 {
	n := len(s)
	switch {
	case n == 0:
		return 0
	case n%2 == 1:
		return s[n/2]
	default:
		return (s[n/2-1] + s[n/2]) / 2
	}
}

// Percentile is np.percentile(xs, p) with numpy's default "linear" method:
// the value at virtual index (n-1)*p/100 of the sorted data, interpolated
// between its neighbours exactly as numpy's _lerp does. p must be in
// [0, 100]; outside it (or NaN) the result is NaN. No data gives 0.
func Percentile(xs []float64, p float64) float64 {
	if !(p >= 0 && p <= 100) {
		return math.NaN()
	}
	return percentileSorted(sortedCopy(xs), p)
}

// PercentileSorted is Percentile for data already sorted ascending (no copy,
// no sort): use it to take many percentiles of one sample.
func PercentileSorted(sorted []float64, p float64) float64 {
	if !(p >= 0 && p <= 100) {
		return math.NaN()
	}
	return percentileSorted(sorted, p)
}

func percentileSorted(s []float64, p float64) float64 {
	n := len(s)
	if n == 0 {
		return 0
	}
	prev, gamma := virtualIndex(n, p)
	next := min(prev+1, n-1)
	return lerp(s[prev], s[next], gamma)
}

// virtualIndex splits numpy's linear virtual index (n-1)*q, q = p/100, into
// its floor (clipped to the data) and fractional part.
func virtualIndex(n int, p float64) (int, float64) {
	q := p / 100
	vi := float64(n-1) * q
	f := math.Floor(vi)
	prev := int(f)
	if prev >= n-1 {
		return n - 1, 0
	}
	return prev, vi - f
}

// lerp is numpy's _lerp: a + (b-a)*t, or b - (b-a)*(1-t) when t >= 0.5.
func lerp(a, b, t float64) float64 {
	d := b - a
	if t >= 0.5 {
		return b - d*(1-t)
	}
	return a + d*t
}

func sortedCopy(xs []float64) []float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s
}

// MinSamples is the smallest sample count for which percentile p has at
// least one observation at or beyond it, ceil(100/(100-p)): 100 for p99,
// 1000 for p99.9, 10 for p90, 2 for the median. p = 100 (the max) needs 1.
func MinSamples(p float64) int {
	if p >= 100 {
		return 1
	}
	if p <= 0 {
		return 1
	}
	return int(math.Ceil(100/(100-p) - 1e-6))
}

// Reliable reports whether n samples are enough for percentile p
// (n >= MinSamples(p)). With fewer, a report flags the figure, e.g.
// "p99 unreliable (n=42 < 100)", and shows a bootstrap interval.
func Reliable(n int, p float64) bool { return n >= MinSamples(p) }

// P99Unreliable reports whether a p99 over n samples must be flagged
// (n < 100).
func P99Unreliable(n int) bool { return !Reliable(n, 99) }

// PercentileKey is vllm bench serve's name for percentile p in result keys:
// "99" for 99, "99.9" for 99.9 (as in p99.9_ttft_ms).
func PercentileKey(p float64) string {
	if p == math.Trunc(p) && math.Abs(p) < 1e15 {
		return strconv.FormatInt(int64(p), 10)
	}
	return strconv.FormatFloat(p, 'f', -1, 64)
}

// Quantile is one percentile of a Summary.
type Quantile struct {
	P     float64 `json:"p"`
	Value float64 `json:"value"`
	// Reliable is false when N < MinSamples(P).
	Reliable bool `json:"reliable"`
}

// Summary describes one metric over a set of samples, in the samples' unit.
type Summary struct {
	N      int     `json:"n"`
	Mean   float64 `json:"mean"`
	Median float64 `json:"median"`
	Std    float64 `json:"std"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	P50    float64 `json:"p50"`
	P90    float64 `json:"p90"`
	P99    float64 `json:"p99"`
	// Percentiles holds the extra percentiles asked for, in the order given.
	Percentiles []Quantile `json:"percentiles,omitempty"`
}

// Summarize computes a Summary of xs (sorting one copy once) with the extra
// percentiles ps (each in [0, 100]).
func Summarize(xs []float64, ps ...float64) Summary {
	s := sortedCopy(xs)
	sum := Summary{
		N:      len(s),
		Mean:   Mean(xs),
		Median: medianSorted(s),
		Std:    Std(xs),
		P50:    percentileSorted(s, 50),
		P90:    percentileSorted(s, 90),
		P99:    percentileSorted(s, 99),
	}
	if len(s) > 0 {
		sum.Min, sum.Max = s[0], s[len(s)-1]
	}
	for _, p := range ps {
		sum.Percentiles = append(sum.Percentiles, Quantile{P: p, Value: PercentileSorted(s, p), Reliable: Reliable(len(s), p)})
	}
	return sum
}

// Percentile returns the value of percentile p from the Summary: P50, P90,
// P99, or one of the extra Percentiles; ok is false when p was not computed.
func (s Summary) Percentile(p float64) (v float64, ok bool) {
	for _, q := range s.Percentiles {
		if q.P == p {
			return q.Value, true
		}
	}
	switch p {
	case 50:
		return s.P50, true
	case 90:
		return s.P90, true
	case 99:
		return s.P99, true
	}
	return 0, false
}
