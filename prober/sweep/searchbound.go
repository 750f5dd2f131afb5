package sweep

import (
	"fmt"
	"math"
	"strings"
)

// The knee search's client ceiling: levels that stay invalid after their
// reruns are unmeasurable, the search stays below them and, ending right
// below one, states a bound (KneeBoundDetail); and the repeats of the levels
// that bracket a found knee (SearchOptions.Repeats). search.go is the
// search itself.

// maxUnmeasurableDown is how many levels in a row, from the first, may
// stay invalid before the search gives up stepping down: with the factor
// squared per step that is Factor^6 below the start (8 times with sqrt 2,
// 64 times with 2). A client that cannot keep its schedule that far below
// where it started is on a host too busy to measure anything, and each
// slower step costs more time.
const maxUnmeasurableDown = 4

// UnmeasurableTolerance is the relative width at which the search stops
// narrowing between a passing rate and a rate above it that could not be
// measured: a lower bound within 20 % of what the client could not drive
// says enough (the shard advice does not need more), and every rerun of an
// unmeasurable level costs two steps.
const UnmeasurableTolerance = 0.2

// tolerance is the relative bracket width at which narrowing stops:
// Tolerance under a failing rate, UnmeasurableTolerance (when wider) under
// a rate that could not be measured.
func (s *searcher) tolerance() float64 {
	if s.upper() == s.hi {
		return s.o.Tolerance
	}
	return math.Max(s.o.Tolerance, UnmeasurableTolerance)
}

// upper is the bracket's upper end: the lowest failing rate or the lowest
// rate that could not be measured, whichever is lower (0: neither yet).
func (s *searcher) upper() float64 {
	switch {
	case s.hi == 0:
		return s.unmeas
	case s.unmeas == 0:
		return s.hi
	}
	return math.Min(s.hi, s.unmeas)
}

// unmeasurable records that rate stayed invalid after its reruns: the
// search stays below it from now on.
func (s *searcher) unmeasurable(rate float64, out StepOutcome) {
	if s.unmeas == 0 || rate < s.unmeas {
		s.unmeas, s.unmeasOut = rate, out
	}
}

// unmeasStop says why a search that ended below an unmeasurable level
// stopped there.
func (s *searcher) unmeasStop() string {
	if s.unconfirmedBound {
		return fmt.Sprintf("rate %s req/s could not be measured: invalid in %s (%s); %s req/s passed once, and its confirmation was invalid too, so the knee is at least %s req/s (unconfirmed)",
			fmtLevel(s.unmeas), attemptsText(s.o.Retries+1, s.o.Retries+1), strings.Join(s.unmeasOut.Invalid, "; "), fmtLevel(s.lo), fmtLevel(s.lo))
	}
	return fmt.Sprintf("rate %s req/s could not be measured: invalid in %s (%s); %s req/s passed and was confirmed, so the knee is at least %s req/s",
		fmtLevel(s.unmeas), attemptsText(s.o.Retries+1, s.o.Retries+1), strings.Join(s.unmeasOut.Invalid, "; "), fmtLevel(s.lo), fmtLevel(s.lo))
}

// bound is the knee's lower bound when the search ended below a level it
// could not measure: the confirmed level, the unmeasurable one and its
// flags, and, when the client was the limit, how many shards would reach
// the rate the search still needed: the lowest failing rate when one
// failed, else the higher of the throughput probe's estimate over Ratio
// (the highest rate a throughput-bound server can keep up with) and one
// bracketing step above the unmeasurable level.
func (s *searcher) bound() *KneeBoundDetail {
	b := &KneeBoundDetail{AtLeast: s.confirmed, Confirmed: true, Unmeasurable: s.unmeas, Client: true}
	if s.unconfirmedBound {
		b.AtLeast, b.Confirmed = s.lo, false
	}
	for _, r := range s.unmeasOut.Invalid {
		f, _, _ := strings.Cut(r, ":")
		b.Flags = append(b.Flags, f)
		if f != FlagClientSaturated && f != FlagClientReadLag {
			b.Client = false
		}
	}
	if len(b.Flags) == 0 {
		b.Client = false
	}
	if b.Client {
		need := s.hi
		if need == 0 {
			need = math.Max(s.o.Capacity/s.o.Ratio, s.unmeas*s.o.Factor)
		}
		b.ShardsFor = roundRate(need)
		b.Shards = max(2, int(math.Ceil(b.ShardsFor/b.AtLeast)))
	}
	return b
}

// repeat runs the knee level lo and the failing level hi above it again,
// each until it has Repeats valid runs, within the step budget: runs of
// their own arrivals, whose spread the knee's interval reports. A repeat's
// verdict is VerdictRepeat; it does not move the knee.
func (s *searcher) repeat() error {
	for _, rate := range []float64{s.hi, s.confirmed} {
		for s.validRuns(rate) < s.o.Repeats && !s.full() {
			out, err := s.probe(rate, max(s.requestsFor(rate), s.length[s.confirmed]))
			if err != nil {
				return err
			}
			if out.Level == 0 {
				out.Level = rate
			}
			if out.Offered == 0 {
				out.Offered = rate
			}
			v, why := out.judge(s.o.Ratio)
			out.Why = why
			if v != VerdictInvalid && v != VerdictTooShort {
				out.Why = "repeat: " + v
				if why != "" {
					out.Why += ": " + why
				}
				v = VerdictRepeat
			}
			out.Verdict = v
			s.res.Steps = append(s.res.Steps, out)
			if v != VerdictRepeat && s.runsAt(rate) >= 2*s.o.Repeats {
				break // a level that will not give valid runs
			}
		}
	}
	return nil
}

// validRuns counts the valid, decided runs of rate so far; runsAt every
// run of it.
func (s *searcher) validRuns(rate float64) int {
	n := 0
	for _, o := range s.res.Steps {
		if o.Level == rate && o.Valid && o.Verdict != VerdictTooShort && o.Verdict != VerdictInvalid {
			n++
		}
	}
	return n
}

func (s *searcher) runsAt(rate float64) int {
	n := 0
	for _, o := range s.res.Steps {
		if o.Level == rate {
			n++
		}
	}
	return n
}
