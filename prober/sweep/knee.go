package sweep

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
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
	// Valid is false when a validity check excluded the level from the knee;
	// Invalid then says why, one "flag: reason" per validity flag.
	Valid   bool
	Invalid []string
	// MeasuredGoodput is vllm bench serve's request_goodput (good requests
	// per second of the step's duration, drain included), the goodput
	// people read; 0 means "use Goodput". The knee itself compares Goodput
	// with Offered.
	MeasuredGoodput float64
}

// reportedGoodput is the goodput shown for the level: MeasuredGoodput when
// set, else Goodput.
func (o StepOutcome) reportedGoodput() float64 {
	if o.MeasuredGoodput > 0 {
		return o.MeasuredGoodput
	}
	return o.Goodput
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
	// MaxGoodput is the highest goodput (StepOutcome.MeasuredGoodput, vLLM's
	// request_goodput, when set) of any valid level, in req/s, and
	// MaxGoodputLevel the level that reached it; both 0 without a valid
	// level.
	MaxGoodput      float64 `json:"max_goodput"`
	MaxGoodputLevel float64 `json:"max_goodput_level"`
	// NonMonotonic is true when a valid level above the first failing one
	// passed again (noise, or a system that recovers); the knee is still the
	// level below the first failure.
	NonMonotonic bool `json:"non_monotonic,omitempty"`
	// Reason says in words how the knee was decided.
	Reason string `json:"reason"`
	// Stop says why an adaptive search ended early (SearchResult.Stop):
	// a level that stayed invalid, the step budget; empty otherwise.
	Stop string `json:"stop,omitempty"`
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
		if g := o.reportedGoodput(); g > k.MaxGoodput || k.MaxGoodputLevel == 0 {
			k.MaxGoodput, k.MaxGoodputLevel = g, o.Level
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
	// Start is the first rate tried, req/s. Default 1. The sweep sets it
	// from a closed-loop throughput probe unless --auto-start is given.
	Start float64
	// Factor multiplies the rate while every step passes. Default 2
	// (doubling).
	Factor float64
	// Tolerance is the relative width at which the search stops: it ends
	// once the highest passing rate lo and the lowest failing rate hi satisfy
	// hi <= lo*(1+Tolerance), so lo is within Tolerance of the knee. Default
	// DefaultAutoTolerance (5 %).
	Tolerance float64
	// MaxSteps bounds the number of steps run, reruns of invalid levels
	// included. Default 16.
	MaxSteps int
	// Retries is how many more times an invalid level is run before the
	// search gives up on it. Default 2; negative means none.
	Retries int
	// MinRate ends the downward search when even this rate fails. Default
	// Start/64.
	MinRate float64
	// MaxRate ends the upward search when this rate passes. Default 1e6.
	MaxRate float64
	// Ratio is the goodput/offered ratio a passing level must reach.
	// Default DefaultGoodputRatio.
	Ratio float64
}

// DefaultSearchRetries is SearchOptions.Retries' default.
const DefaultSearchRetries = 2

func (o SearchOptions) withDefaults() SearchOptions {
	if o.Start <= 0 {
		o.Start = 1
	}
	if o.Factor <= 1 {
		o.Factor = 2
	}
	if o.Tolerance <= 0 {
		o.Tolerance = DefaultAutoTolerance
	}
	if o.MaxSteps <= 0 {
		o.MaxSteps = 16
	}
	switch {
	case o.Retries == 0:
		o.Retries = DefaultSearchRetries
	case o.Retries < 0:
		o.Retries = 0
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

// Why a search ended (SearchResult.End).
const (
	// SearchBracketed: hi <= lo*(1+Tolerance), the normal end.
	SearchBracketed = "bracketed"
	// SearchMaxSteps: MaxSteps steps ran first.
	SearchMaxSteps = "max-steps"
	// SearchMaxRate: MaxRate passed; the knee is above it.
	SearchMaxRate = "max-rate"
	// SearchMinRate: even MinRate failed; the knee is below it.
	SearchMinRate = "min-rate"
	// SearchInvalid: a level stayed invalid after its reruns.
	SearchInvalid = "invalid"
	// SearchError: the prober returned an error (e.g. SIGINT).
	SearchError = "error"
)

// SearchResult is the result of Search.
type SearchResult struct {
	Knee
	// Steps holds every outcome in the order run, reruns included.
	Steps []StepOutcome `json:"-"`
	// End says why the search ended (SearchBracketed, SearchMaxSteps, ...).
	End string `json:"end"`
	// Stop explains an early end in words (a level that stayed invalid,
	// the step budget); empty after SearchBracketed.
	Stop string `json:"stop,omitempty"`
}

// Search finds the knee rate adaptively. It multiplies the rate by Factor
// from Start while levels pass (dividing instead, down to MinRate, when the
// first level fails), which brackets the knee between the highest passing
// rate lo and the lowest failing rate hi; then it narrows [lo, hi] until
// hi <= lo*(1+Tolerance). Each narrowing step tries, in order of preference:
//
//   - T/Ratio, where T is the request throughput measured at hi, when it lies
//     well inside (lo, hi) and hi failed on goodput alone (its SLO p99s
//     held): a saturated server completes about its capacity T, goodput
//     cannot exceed it, so no rate above T/Ratio can pass; this is the knee
//     of a throughput-bound server. When hi also broke an SLO, the knee may
//     be latency-bound, well below T/Ratio, and the guess would waste steps;
//   - right after such a guess, lo*(1+Tolerance) when the guess passed or
//     hi/(1+Tolerance) when it failed, which ends the search at once when the
//     guess was close;
//   - otherwise the geometric midpoint sqrt(lo*hi).
//
// A level fails when an SLO p99 fails or goodput is below Ratio times the
// rate. An invalid level (client-saturated, not-idle, errors) says nothing
// about the server, so it is neither a pass nor a failure: it is run again,
// up to Retries more times, and when it stays invalid the search stops
// there (End SearchInvalid, Stop naming the level and its flags) rather
// than narrow on a level it could not measure. The knee reported is lo, a
// rate that was run and passed. Search returns the outcomes gathered so
// far with the prober's error, if any.
func Search(opts SearchOptions, probe Prober) (SearchResult, error) {
	o := opts.withDefaults()
	var res SearchResult
	full := func() bool { return len(res.Steps) >= o.MaxSteps }
	// run probes rate, rerunning it while it is invalid. ok is false when
	// the search must stop (res.End and res.Stop are then set).
	run := func(rate float64) (out StepOutcome, pass, ok bool, err error) {
		for attempt := 1; ; attempt++ {
			out, err = probe(rate)
			if err != nil {
				res.End = SearchError
				return out, false, false, err
			}
			if out.Level == 0 {
				out.Level = rate
			}
			if out.Offered == 0 {
				out.Offered = rate
			}
			res.Steps = append(res.Steps, out)
			if out.Valid {
				return out, out.Passes(o.Ratio), true, nil
			}
			if attempt > o.Retries {
				res.End = SearchInvalid
				why := strings.Join(out.Invalid, "; ")
				if why == "" {
					why = "no reason given"
				}
				res.Stop = fmt.Sprintf("rate %s req/s was invalid in %s (%s); the search stopped there instead of narrowing on a level it could not measure",
					fmtLevel(rate), attemptsText(attempt), why)
				return out, false, false, nil
			}
			if full() {
				res.End = SearchMaxSteps
				res.Stop = fmt.Sprintf("the step budget (%d) ran out while rerunning the invalid rate %s req/s", o.MaxSteps, fmtLevel(rate))
				return out, false, false, nil
			}
		}
	}
	finish := func(err error) (SearchResult, error) {
		res.Knee = LadderKnee(res.Steps, o.Ratio)
		return res, err
	}
	maxSteps := func() (SearchResult, error) {
		res.End = SearchMaxSteps
		res.Stop = fmt.Sprintf("%d steps ran (--auto-max-steps) before the knee was bracketed within %s", o.MaxSteps, pct100(o.Tolerance))
		return finish(nil)
	}

	var lo, hi float64 // highest passing, lowest failing (0 = none yet)
	var hiOut StepOutcome
	rate := o.Start
	// Bracket.
	for {
		if full() {
			return maxSteps()
		}
		out, pass, ok, err := run(rate)
		if err != nil || !ok {
			return finish(err)
		}
		if pass {
			lo = rate
			if hi != 0 {
				break
			}
			if rate >= o.MaxRate {
				res.End = SearchMaxRate
				res.Stop = fmt.Sprintf("the highest rate allowed (%s req/s) passed", fmtLevel(o.MaxRate))
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
			res.End = SearchMinRate
			res.Stop = fmt.Sprintf("no rate passed down to %s req/s", fmtLevel(hi))
			return finish(nil)
		}
	}
	// Narrow.
	hintUsed := 0.0 // the hi for which the throughput hint was tried
	lastWasHint := false
	for hi > lo*(1+o.Tolerance) {
		if full() {
			return maxSteps()
		}
		var p float64
		h := hiOut.Throughput / o.Ratio
		switch {
		case hintUsed != hi && hiOut.SLOHeld && h > lo*(1+o.Tolerance/2) && h < hi/(1+o.Tolerance/2):
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
		out, pass, ok, err := run(p)
		if err != nil || !ok {
			return finish(err)
		}
		if pass {
			lo = p
		} else {
			hi, hiOut = p, out
		}
	}
	res.End = SearchBracketed
	return finish(nil)
}

func attemptsText(n int) string {
	if n == 1 {
		return "its only attempt"
	}
	return "all " + strconv.Itoa(n) + " attempts"
}

// pct100 formats a fraction as a percentage ("10 %").
func pct100(f float64) string { return strconv.FormatFloat(100*f, 'g', 4, 64) + " %" }

func fmtLevel(v float64) string {
	if math.IsInf(v, 1) {
		return "inf"
	}
	return fmt.Sprintf("%.4g", v)
}
