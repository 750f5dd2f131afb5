package stats

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// CI is a confidence interval for a statistic.
type CI struct {
	Lo    float64 `json:"lo"`
	Hi    float64 `json:"hi"`
	Conf  float64 `json:"conf"`  // e.g. 0.95
	Iters int     `json:"iters"` // bootstrap resamples
}

// bootstrapStream is the fixed second word of the bootstrap PCG state.
const bootstrapStream = 0x626f6f7473747270 // "bootstrp"

// BootstrapCI returns a percentile-bootstrap confidence interval at level
// conf (in (0, 1), e.g. 0.95) for percentile p (in [0, 100]) of xs: iters
// resamples of len(xs) values drawn with replacement (PCG seeded by seed, so
// the interval is reproducible), the statistic computed on each with
// Percentile's numpy-linear rule, and the (1-conf)/2 and (1+conf)/2
// percentiles of those values as bounds. Each resample costs O(n) (no sort:
// resampled indices of the sorted data are counted), so 2,000 iterations
// over 10,000 samples take well under a second. It returns an error for an
// empty sample, iters < 1 or an invalid p or conf.
func BootstrapCI(xs []float64, p, conf float64, iters int, seed uint64) (CI, error) {
	switch {
	case len(xs) == 0:
		return CI{}, errors.New("bootstrap of an empty sample")
	case !(p >= 0 && p <= 100):
		return CI{}, fmt.Errorf("percentile must be in [0, 100], got %v", p)
	case !(conf > 0 && conf < 1):
		return CI{}, fmt.Errorf("confidence must be in (0, 1), got %v", conf)
	case iters < 1:
		return CI{}, fmt.Errorf("iterations must be >= 1, got %d", iters)
	}
	s := sortedCopy(xs)
	n := len(s)
	rng := newBootstrapRand(seed)
	counts := make([]int, n)
	est := make([]float64, iters)
	for it := range est {
		clear(counts)
		for range n {
			counts[rng.IntN(n)]++
		}
		// The resample sorted is s[j] repeated counts[j] times.
		est[it] = PercentileOfCounts(s, counts, n, p)
	}
	slices.Sort(est)
	alpha := (1 - conf) / 2
	return CI{
		Lo:    percentileSorted(est, 100*alpha),
		Hi:    percentileSorted(est, 100*(1-alpha)),
		Conf:  conf,
		Iters: iters,
	}, nil
}

func newBootstrapRand(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, bootstrapStream))
}

// PercentileOfCounts is Percentile's numpy-linear percentile p of the
// sample that holds sorted[j] counts[j] times (m values in all, sorted
// ascending): a bootstrap replicate drawn as counts over the sorted data,
// taken in O(len(sorted)) without building or sorting it. No value (m 0)
// gives NaN.
func PercentileOfCounts(sorted []float64, counts []int, m int, p float64) float64 {
	if m == 0 || !(p >= 0 && p <= 100) {
		return math.NaN()
	}
	prev, gamma := virtualIndex(m, p)
	next := min(prev+1, m-1)
	a, b := math.NaN(), math.NaN()
	rank := 0
	for j, c := range counts {
		if c == 0 {
			continue
		}
		rank += c
		if math.IsNaN(a) && rank > prev {
			a = sorted[j]
		}
		if rank > next {
			b = sorted[j]
			break
		}
	}
	return lerp(a, b, gamma)
}
