// Package arrival owns the open-loop arrival processes: seeded generators of
// absolute arrival offsets (Poisson, gamma with burstiness, constant) and a
// statistical self-check of observed gaps against the process they should
// follow.
//
// The parametrisation is vllm bench serve's: every gap is drawn from a gamma
// distribution with shape = burstiness and scale = 1/(rate*burstiness), so the
// mean gap is 1/rate whatever the burstiness; burstiness 1 is the exponential
// distribution (a Poisson process), below 1 is burstier, above 1 is more
// regular, and the constant process is the limit burstiness -> +Inf. Unlike
// vLLM, arrival times are never rescaled so that the last one lands on
// count/rate: the offsets are the running sum of the drawn gaps, exactly.
//
// A rate of +Inf ("send everything at once") is not an arrival process and is
// rejected here; the scheduler's burst mode (prober/schedule) handles it.
//
// Every process is bounded in arrivals per second whatever its parameters:
// burstiness is limited to [MinBurstiness, MaxBurstiness], and the offsets
// New returns pass a rate limiter (a GCRA, the leaky bucket of ATM traffic
// policing) that lets bursts of up to MaxBurst arrivals through untouched and
// spaces any longer run at 1/min(MaxSpeedup·rate, MaxRate). In any window of
// w seconds a Process yields at most MaxBurst + w·min(MaxSpeedup·rate,
// MaxRate) arrivals. The limiter keeps the drawn schedule as its reference:
// once a run is spaced out, arrivals are back at their drawn times, so the
// long-run rate stays rate for any rate below MaxRate; at the burstiness
// Validate accepts the limiter almost never engages (tested), so the
// statistics are the drawn ones.
package arrival

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// The kinds of arrival process accepted by New.
const (
	KindPoisson  = "poisson"
	KindGamma    = "gamma"
	KindConstant = "constant"
)

// Kinds lists the accepted kinds in a stable order (for flag help and docs).
var Kinds = []string{KindPoisson, KindGamma, KindConstant}

// The bounds of every process (see the package doc).
const (
	// MinBurstiness is the smallest gamma shape accepted: gaps with a
	// coefficient of variation of 10. Below it nearly every gap underflows to
	// 0 and a process sends its arrivals in runs of millions.
	MinBurstiness = 0.01
	// MaxBurstiness is the largest gamma shape accepted (a coefficient of
	// variation of about 0.03; use KindConstant for evenly spaced arrivals).
	MaxBurstiness = 1000
	// MaxBurst is the longest run of arrivals a process yields at any
	// spacing.
	MaxBurst = 100
	// MaxSpeedup is how much faster than its mean rate a process may yield
	// arrivals past a run of MaxBurst.
	MaxSpeedup = 1000
	// MaxRate is the most arrivals per second a process yields past a run of
	// MaxBurst, whatever its rate: a process at a higher rate yields MaxRate
	// arrivals per second.
	MaxRate = 1e6
)

// ErrInfiniteRate is returned (wrapped) by New for rate = +Inf: a burst is not
// an arrival process; callers run the scheduler in burst mode instead.
var ErrInfiniteRate = errors.New("rate +Inf is a burst, not an arrival process")

// Process yields the arrival times of an open-loop schedule.
//
// Next returns the absolute offset of the next arrival from the start instant
// of the schedule; successive offsets never decrease. The first arrival is at
// the first drawn gap, not at 0 (as in vllm bench serve, whose first request
// waits for its own delay). Offsets saturate at the largest time.Duration.
// A Process is not safe for concurrent use: one scheduler goroutine owns it.
type Process interface {
	Next() time.Duration
}

// pcgStream is the fixed second word of the PCG state; the first is the
// user's seed, so equal seeds give equal schedules across runs and builds.
const pcgStream = 0x6c6c6d70726f6265 // "llmprobe"

// NewRand returns the generator every llmprobe sampler uses for a seed:
// math/rand/v2's PCG seeded with (seed, a fixed stream constant). It is
// exported so that other packages draw from the same, documented source.
func NewRand(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, pcgStream))
}

// New returns the arrival process of the given kind at rate arrivals per
// second. burstiness is used by KindGamma only (it must still be > 0 for every
// kind so that a config can carry the default 1 everywhere); gamma with
// burstiness 1 yields exactly the same schedule as poisson with the same seed.
// The process is deterministic under seed.
func New(kind string, rate, burstiness float64, seed uint64) (Process, error) {
	if err := Validate(kind, rate, burstiness); err != nil {
		return nil, err
	}
	r := NewRand(seed)
	var p Process
	switch kind {
	case KindPoisson:
		p = &poisson{rng: r, rate: rate}
	case KindGamma:
		if burstiness == 1 {
			p = &poisson{rng: r, rate: rate}
		} else {
			p = &gammaProcess{rng: r, shape: burstiness, scale: 1 / (rate * burstiness)}
		}
	default: // KindConstant
		p = &constant{gap: 1 / rate}
	}
	return limit(p, rate), nil
}

// Validate checks the parameters New accepts: kind one of Kinds, rate > 0 and
// finite, burstiness > 0 and finite, and for KindGamma within
// [MinBurstiness, MaxBurstiness]. Errors name the parameter.
func Validate(kind string, rate, burstiness float64) error {
	switch kind {
	case KindPoisson, KindGamma, KindConstant:
	case "":
		return errors.New("arrival is required (one of poisson, gamma, constant)")
	default:
		return fmt.Errorf("unknown arrival %q (one of poisson, gamma, constant)", kind)
	}
	if math.IsInf(rate, 1) {
		return fmt.Errorf("rate: %w", ErrInfiniteRate)
	}
	if !(rate > 0) || math.IsInf(rate, 0) {
		return fmt.Errorf("rate must be > 0 and finite, got %v", rate)
	}
	if !(burstiness > 0) || math.IsInf(burstiness, 0) {
		return fmt.Errorf("burstiness must be > 0 and finite, got %v", burstiness)
	}
	if kind == KindGamma && (burstiness < MinBurstiness || burstiness > MaxBurstiness) {
		return fmt.Errorf("burstiness must be between %v and %v, got %v", MinBurstiness, MaxBurstiness, burstiness)
	}
	return nil
}

// limited bounds the arrivals per second of a process with the generic cell
// rate algorithm: an arrival earlier than tat - tol is moved to tat - tol,
// and each arrival moves tat to gap past itself (or past the old tat).
type limited struct {
	p   Process
	gap time.Duration // emission interval of the limit
	tol time.Duration // (MaxBurst-1) * gap: the burst let through
	tat time.Duration // theoretical arrival time of the next arrival
}

// limit wraps p, of mean rate rate, in the bounds of the package doc.
func limit(p Process, rate float64) *limited {
	gap := offset(1 / min(MaxSpeedup*rate, MaxRate))
	tol := time.Duration(math.MaxInt64)
	if gap <= math.MaxInt64/(MaxBurst-1) {
		tol = gap * (MaxBurst - 1)
	}
	return &limited{p: p, gap: max(gap, 1), tol: tol}
}

func (l *limited) Next() time.Duration {
	o := l.p.Next()
	if earliest := l.tat - l.tol; o < earliest {
		o = earliest
	}
	l.tat = max(l.tat, o)
	if l.tat > math.MaxInt64-l.gap {
		l.tat = math.MaxInt64
	} else {
		l.tat += l.gap
	}
	return o
}

// offset converts a running sum in seconds to a Duration, rounding to the
// nearest nanosecond and saturating instead of overflowing.
func offset(sec float64) time.Duration {
	ns := math.Round(sec * 1e9)
	if ns >= math.MaxInt64 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(ns)
}

type poisson struct {
	rng  *rand.Rand
	rate float64
	t    float64 // seconds since start
}

func (p *poisson) Next() time.Duration {
	p.t += p.rng.ExpFloat64() / p.rate
	return offset(p.t)
}

type gammaProcess struct {
	rng          *rand.Rand
	shape, scale float64
	t            float64
}

func (g *gammaProcess) Next() time.Duration {
	g.t += gammaVariate(g.rng, g.shape) * g.scale
	return offset(g.t)
}

type constant struct {
	gap float64
	n   float64
}

// Next returns n/rate for the n-th arrival (computed by multiplication, not
// summation, so it does not drift by accumulated rounding).
func (c *constant) Next() time.Duration {
	c.n++
	return offset(c.n * c.gap)
}

// gammaVariate draws from Gamma(shape, 1) with Marsaglia and Tsang's method
// (ACM TOMS 26(3), 2000); shapes below 1 use the boost
// Gamma(a) = Gamma(a+1) * U^(1/a), computed in log space so that very small
// shapes give tiny gaps instead of underflowing to NaN.
func gammaVariate(r *rand.Rand, shape float64) float64 {
	if shape < 1 {
		g := gammaVariate(r, shape+1)
		u := r.Float64()
		for u == 0 {
			u = r.Float64()
		}
		return math.Exp(math.Log(g) + math.Log(u)/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.Float64()
		x2 := x * x
		if u < 1-0.0331*x2*x2 {
			return d * v
		}
		if u > 0 && math.Log(u) < 0.5*x2+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}
