package sweep

import (
	"fmt"
	"math"
	"slices"
)

// DefaultGoodputRatio is the fraction of the offered rate that goodput must
// reach for a step to count as keeping up (DESIGN.md §9 point 7).
const DefaultGoodputRatio = 0.9

// StepOutcome is what the knee logic needs to know about one load level
// (all rounds of it, aggregated). For open loop, Level is the requested
// arrival rate in req/s; for closed loop it is the concurrency.
type StepOutcome struct {
	// Level is the requested rate (req/s) or the concurrency.
	Level float64
	// Offered is the offered request rate the goodput is compared with:
	// the requested rate in open loop, the request throughput in closed loop.
	Offered float64
	// Goodput is good requests per second (request_goodput); without SLOs it
	// is the request throughput of successful requests.
	Goodput float64
	// Throughput is completed requests per second (request_throughput). At a
	// saturated level it estimates the capacity; the search uses it as a hint.
	Throughput float64
	// SLOHeld is true when every configured SLO holds at p99 (true without
	// SLOs).
	SLOHeld bool
	// Valid is false when a validity check excluded the level from the knee.
	Valid bool
}

// Passes reports whether the level keeps up: it is valid, its SLO p99s hold
// and its goodput is at least ratio times the offered rate.
func (o StepOutcome) Passes(ratio float64) bool {
	return o.Valid && o.SLOHeld && o.Offered > 0 && o.Goodput >= ratio*o.Offered
}

// Knee is the knee found in a set of step outcomes.
type Knee struct {
	// Found is true when some level passed and a higher valid level failed:
	// the knee is bracketed. With Found false, Level is a lower bound (every
	// level passed; the knee is above the highest one tried) or 0 (no level
	// passed).
	Found bool `json:"found"`
	// Level is the highest passing level below the first failing one (0 when
	// none passed).
	Level float64 `json:"level"`
	// Upper is the lowest failing valid level above Level (0 when none
	// failed).
	Upper float64 `json:"upper,omitempty"`
	// MaxGoodput is the highest goodput of any valid level, in req/s, and
	// MaxGoodputLevel the level that reached it.
	MaxGoodput      float64 `json:"max_goodput"`
	MaxGoodputLevel float64 `json:"max_goodput_level"`
	// NonMonotonic is true when a valid level above the first failing one
	// passed again (noise, or a system that recovers); the knee is still the
	// level below the first failure.
	NonMonotonic bool `json:"non_monotonic,omitempty"`
	// Reason says in words how the knee was decided.
	Reason string `json:"reason"`
}

// LadderKnee decides the knee of a rate (or concurrency) ladder: the highest
// level at which goodput is still at least ratio times the offered rate and
// the SLO p99s hold, taken below the first valid level that fails. Invalid
// levels are skipped. Outcomes may come in any order.
func LadderKnee(outcomes []StepOutcome, ratio float64) Knee {
	os := slices.Clone(outcomes)
	slices.SortStableFunc(os, func(a, b StepOutcome) int {
		switch {
		case a.Level < b.Level:
			return -1
		case a.Level > b.Level:
			return 1
		}
		return 0
	})
	var k Knee
	failed := false
	valid := 0
	for _, o := range os {
		if !o.Valid {
			continue
		}
		valid++
		if o.Goodput > k.MaxGoodput || k.MaxGoodputLevel == 0 {
			k.MaxGoodput, k.MaxGoodputLevel = o.Goodput, o.Level
		}
		pass := o.Passes(ratio)
		switch {
		case pass && !failed:
			k.Level = o.Level
		case pass && failed:
			k.NonMonotonic = true
		case !pass && !failed:
			failed = true
			k.Upper = o.Level
		}
	}
	switch {
	case valid == 0:
		k.Reason = "no valid step: the knee cannot be decided"
	case k.Level == 0:
		k.Reason = fmt.Sprintf("no level passed; the knee is below %s", fmtLevel(k.Upper))
	case !failed && invalidAbove(os, k.Level):
		k.Reason = fmt.Sprintf("every valid level passed; higher levels were invalid and excluded, so the knee is at least %s", fmtLevel(k.Level))
	case !failed:
		k.Reason = fmt.Sprintf("every valid level passed; the knee is above %s", fmtLevel(k.Level))
	default:
		k.Found = true
		k.Reason = fmt.Sprintf("highest passing level %s, first failing level %s", fmtLevel(k.Level), fmtLevel(k.Upper))
	}
	return k
}

func invalidAbove(os []StepOutcome, level float64) bool {
	for _, o := range os {
		if !o.Valid && o.Level > level {
			return true
		}
	}
	return false
}

// SearchOptions configures the adaptive knee search (--rates auto). The zero
// value of a field selects its default.
type SearchOptions struct {
	// Start is the first rate tried, req/s. Default 1.
	Start float64
	// Factor multiplies the rate while every step passes. Default 2
	// (doubling).
	Factor float64
	// Tolerance is the relative width at which the search stops: it ends
	// once the highest passing rate lo and the lowest failing rate hi satisfy
	// hi <= lo*(1+Tolerance), so lo is within Tolerance of the knee. Default
	// 0.1.
	Tolerance float64
	// MaxSteps bounds the number of levels run. Default 16.
	MaxSteps int
	// MinRate ends the downward search when even this rate fails. Default
	// Start/64.
	MinRate float64
	// MaxRate ends the upward search when this rate passes. Default 1e6.
	MaxRate float64
	// Ratio is the goodput/offered ratio a passing level must reach.
	// Default DefaultGoodputRatio.
	Ratio float64
}

func (o SearchOptions) withDefaults() SearchOptions {
	if o.Start <= 0 {
		o.Start = 1
	}
	if o.Factor <= 1 {
		o.Factor = 2
	}
	if o.Tolerance <= 0 {
		o.Tolerance = 0.1
	}
	if o.MaxSteps <= 0 {
		o.MaxSteps = 16
	}
	if o.MinRate <= 0 {
		o.MinRate = o.Start / 64
	}
	if o.MaxRate <= 0 {
		o.MaxRate = 1e6
	}
	if o.Ratio <= 0 {
		o.Ratio = DefaultGoodputRatio
	}
	return o
}

// Prober runs one load level at the given rate and reports its outcome. An
// error (for example a canceled context) ends the search.
type Prober func(rate float64) (StepOutcome, error)

// SearchResult is the result of Search.
type SearchResult struct {
	Knee
	// Steps holds every outcome in the order run.
	Steps []StepOutcome `json:"-"`
}

// Search finds the knee rate adaptively. It multiplies the rate by Factor
// from Start while levels pass (halving instead, down to MinRate, when the
// first level fails), which brackets the knee between the highest passing
// rate lo and the lowest failing rate hi; then it narrows [lo, hi] until
// hi <= lo*(1+Tolerance). Each narrowing step tries, in order of preference:
//
//   - T/Ratio, where T is the request throughput measured at hi, when it lies
//     well inside (lo, hi): a saturated server completes about its capacity
//     T, goodput cannot exceed it, so no rate above T/Ratio can pass; this is
//     the knee of a throughput-bound server and an upper estimate of a
//     latency-bound one;
//   - right after such a guess, lo*(1+Tolerance) when the guess passed or
//     hi/(1+Tolerance) when it failed, which ends the search at once when the
//     guess was close;
//   - otherwise the geometric midpoint sqrt(lo*hi).
//
// A level fails when it is invalid, when an SLO p99 fails, or when goodput
// is below Ratio times the rate. The knee reported is lo, a rate that was
// run and passed. Search returns the outcomes gathered so far with the
// prober's error, if any.
func Search(opts SearchOptions, probe Prober) (SearchResult, error) {
	o := opts.withDefaults()
	var res SearchResult
	run := func(rate float64) (StepOutcome, bool, error) {
		out, err := probe(rate)
		if err != nil {
			return out, false, err
		}
		if out.Level == 0 {
			out.Level = rate
		}
		if out.Offered == 0 {
			out.Offered = rate
		}
		res.Steps = append(res.Steps, out)
		return out, out.Passes(o.Ratio), nil
	}
	finish := func(err error) (SearchResult, error) {
		k := LadderKnee(res.Steps, o.Ratio)
		res.Knee = k
		return res, err
	}

	var lo, hi float64 // highest passing, lowest failing (0 = none yet)
	var hiOut StepOutcome
	rate := o.Start
	// Bracket.
	for len(res.Steps) < o.MaxSteps {
		out, pass, err := run(rate)
		if err != nil {
			return finish(err)
		}
		if pass {
			lo = rate
			if hi != 0 {
				break
			}
			if rate >= o.MaxRate {
				return finish(nil)
			}
			rate = math.Min(rate*o.Factor, o.MaxRate)
			continue
		}
		hi, hiOut = rate, out
		if lo != 0 {
			break
		}
		rate /= o.Factor
		if rate < o.MinRate {
			return finish(nil)
		}
	}
	if lo == 0 || hi == 0 {
		return finish(nil)
	}
	// Narrow.
	hintUsed := 0.0 // the hi for which the throughput hint was tried
	lastWasHint := false
	for hi > lo*(1+o.Tolerance) && len(res.Steps) < o.MaxSteps {
		var p float64
		h := hiOut.Throughput / o.Ratio
		switch {
		case hintUsed != hi && h > lo*(1+o.Tolerance/2) && h < hi/(1+o.Tolerance/2):
			p, hintUsed, lastWasHint = h, hi, true
		case lastWasHint:
			lastWasHint = false
			if res.Steps[len(res.Steps)-1].Passes(o.Ratio) {
				p = lo * (1 + o.Tolerance) * (1 - 1e-9)
			} else {
				p = hi / (1 + o.Tolerance) * (1 + 1e-9)
			}
			if p <= lo || p >= hi {
				p = math.Sqrt(lo * hi)
			}
		default:
			lastWasHint = false
			p = math.Sqrt(lo * hi)
		}
		out, pass, err := run(p)
		if err != nil {
			return finish(err)
		}
		if pass {
			lo = p
		} else {
			hi, hiOut = p, out
		}
	}
	return finish(nil)
}

func fmtLevel(v float64) string {
	if math.IsInf(v, 1) {
		return "inf"
	}
	return fmt.Sprintf("%.4g", v)
}
