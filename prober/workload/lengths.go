package workload

import (
	"math"
	"math/rand/v2"
)

// LengthSampler draws token lengths from a validated LengthSpec. It holds no
// random state (the caller passes the generator), so one sampler may be
// shared by goroutines that each own their *rand.Rand.
type LengthSampler struct {
	spec   LengthSpec
	lo, hi int       // uniform bounds (inclusive)
	cum    []float64 // choice: cumulative weights
}

// NewLengthSampler validates s and returns its sampler. The rules, per dist:
//   - fixed: always value.
//   - uniform with value and range_ratio r: integers uniform in
//     [floor(value*(1-r)), ceil(value*(1+r))], as vllm bench serve's
//     --random-range-ratio (the low bound raised to 1 if it rounds to 0);
//   - uniform with min and max: integers uniform in [min, max];
//   - lognormal: round(exp(ln(median) + sigma*N(0,1))), at least 1, capped
//     at max (required);
//   - choice: value i with probability weight_i / sum(weights).
func NewLengthSampler(s LengthSpec) (*LengthSampler, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	l := &LengthSampler{spec: s}
	switch s.Dist {
	case DistUniform:
		if s.Value != 0 {
			l.lo = max(1, int(math.Floor(float64(s.Value)*(1-s.RangeRatio))))
			l.hi = max(1, int(math.Ceil(float64(s.Value)*(1+s.RangeRatio))))
		} else {
			l.lo, l.hi = s.Min, s.Max
		}
	case DistChoice:
		var sum float64
		for _, c := range s.Choices {
			sum += c.Weight
			l.cum = append(l.cum, sum)
		}
	}
	return l, nil
}

// Spec returns the spec the sampler draws from.
func (l *LengthSampler) Spec() LengthSpec { return l.spec }

// Range returns the smallest and largest length the sampler can draw; hi is
// at most MaxLength.
func (l *LengthSampler) Range() (lo, hi int) {
	switch l.spec.Dist {
	case DistFixed:
		return l.spec.Value, l.spec.Value
	case DistUniform:
		return l.lo, l.hi
	case DistLognormal:
		return 1, l.spec.Max
	default: // choice
		lo, hi = math.MaxInt, 0
		for _, c := range l.spec.Choices {
			lo, hi = min(lo, c.Value), max(hi, c.Value)
		}
		return lo, hi
	}
}

// Draw returns one length in [1, MaxLength] using r.
func (l *LengthSampler) Draw(r *rand.Rand) int {
	switch l.spec.Dist {
	case DistFixed:
		return l.spec.Value
	case DistUniform:
		return l.lo + r.IntN(l.hi-l.lo+1)
	case DistLognormal:
		v := math.Round(math.Exp(math.Log(l.spec.Median) + l.spec.Sigma*r.NormFloat64()))
		if v > float64(l.spec.Max) { // max is required and <= MaxLength
			return l.spec.Max
		}
		if !(v >= 1) {
			return 1
		}
		return int(v)
	default: // choice
		u := r.Float64() * l.cum[len(l.cum)-1]
		for i, c := range l.cum {
			if u < c {
				return l.spec.Choices[i].Value
			}
		}
		return l.spec.Choices[len(l.spec.Choices)-1].Value
	}
}
