package sweep

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Prober runs one load level at the given rate and reports its outcome.
// minRequests, when positive, is the fewest requests each of its steps must
// send (the search asks for longer steps when a level was too short to
// decide); 0 means the configured step length. An error (for example a
// canceled context) ends the search.
type Prober func(rate float64, minRequests int) (StepOutcome, error)

// Why a search ended (SearchResult.End).
const (
	// SearchBracketed: hi <= lo*(1+Tolerance) and lo confirmed, the normal
	// end.
	SearchBracketed = "bracketed"
	// SearchMaxSteps: MaxSteps steps ran first.
	SearchMaxSteps = "max-steps"
	// SearchMaxRate: MaxRate passed; the knee is above it.
	SearchMaxRate = "max-rate"
	// SearchMinRate: even MinRate failed; the knee is below it.
	SearchMinRate = "min-rate"
	// SearchInvalid: no level could be measured: every rate tried, down to
	// MinRate, stayed invalid after its reruns.
	SearchInvalid = "invalid"
	// SearchUnmeasurable: a level passed and was confirmed, but the level
	// above it stayed invalid after its reruns (the client could not drive
	// it on this host, or another validity flag): the knee is at least
	// the confirmed level (Knee.Bound says so), not located.
	SearchUnmeasurable = "unmeasurable"
	// SearchTooShort: a level stayed too short to decide after its longer
	// reruns.
	SearchTooShort = "too-short"
	// SearchError: the prober returned an error (e.g. SIGINT).
	SearchError = "error"
)

// SearchResult is the result of Search.
type SearchResult struct {
	Knee
	// Steps holds every outcome in the order run, reruns included, each
	// with the Verdict the search gave it.
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
// hi <= lo*(1+Tolerance); then it confirms lo with one more run at lo. Each
// narrowing step tries, in order of preference:
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
// A level passes when StepOutcome.Passes says so: valid, keep-up and served
// throughput at least Ratio times the rate, SLO p99s held on at least
// MinSLOSamples samples. Levels the search cannot decide are run again:
//
//   - an invalid level (client-saturated, client-read-lag, not-idle,
//     errors) says nothing about the server: it is rerun up to Retries more
//     times (a host's hiccup passes), and when it stays invalid the search
//     counts it as unmeasurable and steps down from it instead of narrowing
//     on it: below it the bracket's upper end is the lower of the lowest
//     failing and the lowest unmeasurable rate, and the search never tries
//     a rate at or above the latter again. Between a passing rate and an
//     unmeasurable one it narrows only to UnmeasurableTolerance. When the
//     search ends with the confirmed lo right below an unmeasurable rate
//     (End SearchUnmeasurable), the knee is a bound (Knee.Bound: at least
//     lo, and with the client's own flags, the shards that would reach
//     further); when even MinRate stays invalid and none failed, End is
//     SearchInvalid;
//   - a level too short to decide (its SLO p99 on fewer than MinSLOSamples
//     samples, or keep-up passed but its served throughput fell short, which
//     the drain of a short step alone can cause) is rerun with more
//     requests, up to Lengthen times (End SearchTooShort when it stays too
//     short); later levels then run at least as long (as many requests for
//     the samples, as long an arrival window for the drain).
//
// The confirmation runs lo again as long as its passing run; when it fails,
// lo counts as failed (hi = lo; its verdict VerdictUnconfirmed, the knee
// NonMonotonic) and the search narrows again below it; when it is invalid
// after its reruns, lo counts as unmeasurable and the search narrows below
// it, between the next lower passing rate and it. When the step budget
// is about to run out during the narrowing, the search confirms lo in the
// wider bracket it has (End SearchMaxSteps). The knee reported is lo, a
// rate that ran and passed twice; Knee.Found is false, with Low and Upper
// the bracket so far, when it was not confirmed. Search returns the
// outcomes gathered so far with the prober's error, if any.
func Search(opts SearchOptions, probe Prober) (SearchResult, error) {
	s := &searcher{o: opts.withDefaults(), probe: probe, length: map[float64]int{}}
	err := s.run()
	if err == nil && s.res.End == SearchBracketed {
		err = s.repeat()
	}
	s.res.Knee = s.knee()
	return s.res, err
}

// searcher is the state of one Search.
type searcher struct {
	o     SearchOptions
	probe Prober
	res   SearchResult

	lo, hi float64 // highest passing, lowest failing (0 = none yet)
	hiOut  StepOutcome
	// unmeas is the lowest rate that stayed invalid after its reruns (0 =
	// none), unmeasOut its last run: the search stays below it.
	unmeas    float64
	unmeasOut StepOutcome
	// unmeasDown counts the unmeasurable levels the search stepped down
	// from before any level was measured (maxUnmeasurableDown ends it).
	unmeasDown int
	// unconfirmedBound: the search ended below unmeas with lo passed once
	// and its confirmation invalid after its reruns.
	unconfirmedBound bool
	confirmed        float64 // lo once its confirmation passed
	passed           []float64
	// length is the minRequests of each rate's passing run (the
	// confirmation runs as long); minReq and minWindow are what later
	// levels need: requests for the samples, seconds of arrivals for the
	// drain.
	length    map[float64]int
	minReq    int
	minWindow float64
}

func (s *searcher) full() bool { return len(s.res.Steps) >= s.o.MaxSteps }

// stop ends the search early with why.
func (s *searcher) stop(end, why string) {
	s.res.End, s.res.Stop = end, why
}

func (s *searcher) stopMaxSteps() {
	s.stop(SearchMaxSteps, fmt.Sprintf("%d steps ran (--auto-max-steps) before the knee was bracketed within %s and confirmed", s.o.MaxSteps, pct100(s.o.Tolerance)))
}

// requestsFor is the fewest requests a step at rate must send (0: the
// configured length).
func (s *searcher) requestsFor(rate float64) int {
	return max(s.minReq, int(math.Ceil(rate*s.minWindow)))
}

// measure runs rate until it is decided: reruns while it is invalid or too
// short, as the options allow. v is VerdictPass, VerdictFail or, for a level
// that stayed invalid after its reruns, VerdictInvalid (the search then
// stays below it). ok is false when the search must stop (res.End and
// res.Stop are then set).
func (s *searcher) measure(rate float64, confirm bool) (out StepOutcome, v string, ok bool, err error) {
	n := s.requestsFor(rate)
	if confirm {
		n = max(n, s.length[rate])
	}
	retries, lengthen := s.o.Retries, s.o.Lengthen
	for {
		out, err = s.probe(rate, n)
		if err != nil {
			s.res.End = SearchError
			return out, "", false, err
		}
		if out.Level == 0 {
			out.Level = rate
		}
		if out.Offered == 0 {
			out.Offered = rate
		}
		var why string
		v, why = out.judge(s.o.Ratio)
		// keep-up passed but the served throughput fell short: the drain
		// of a short step or an overload; a longer step tells them apart.
		drain := v == VerdictFail && out.SLOHeld && out.servedShort(s.o.Ratio) && out.Goodput >= s.o.Ratio*out.Offered
		if drain && lengthen > 0 {
			v = VerdictTooShort
		}
		out.Verdict, out.Why = v, why
		s.res.Steps = append(s.res.Steps, out)
		last := &s.res.Steps[len(s.res.Steps)-1]
		if out.NeedSamples > 0 {
			// Every later level sends at least enough requests for
			// its SLO p99s (10 % to spare): a step too short to
			// decide is a step wasted, and the steps down from a
			// level the client could not drive are slow ones.
			s.minReq = max(s.minReq, int(math.Ceil(1.1*float64(out.NeedSamples))))
		}
		switch v {
		case VerdictInvalid:
			if retries == 0 {
				// It stayed invalid: the search steps down from it.
				return out, v, true, nil
			}
			retries--
			if s.full() {
				s.stop(SearchMaxSteps, fmt.Sprintf("the step budget (%d) ran out while rerunning the invalid rate %s req/s", s.o.MaxSteps, fmtLevel(rate)))
				return out, v, false, nil
			}
			continue
		case VerdictTooShort:
			if lengthen == 0 {
				s.stop(SearchTooShort, fmt.Sprintf("rate %s req/s stayed too short to decide after %s (%s); the search stopped there instead of deciding on too few samples",
					fmtLevel(rate), longerText(s.o.Lengthen), why))
				return out, v, false, nil
			}
			lengthen--
			next := s.longer(out, drain)
			n = max(n, next)
			last.Why += fmt.Sprintf("; rerun with %d requests", n)
			if s.full() {
				s.stop(SearchMaxSteps, fmt.Sprintf("the step budget (%d) ran out while rerunning the too-short rate %s req/s longer", s.o.MaxSteps, fmtLevel(rate)))
				return out, v, false, nil
			}
			continue
		}
		if confirm {
			last.Verdict = VerdictConfirmed
			if v != VerdictPass {
				last.Verdict = VerdictUnconfirmed
			}
		}
		if v == VerdictPass && !confirm {
			s.length[rate] = n
			s.passed = append(s.passed, rate)
		}
		return out, v, true, nil
	}
}

// longer returns the requests a rerun of out's level needs, and raises
// what later levels need: for the samples, enough requests that the fewest
// SLO samples reach NeedSamples (with 10 % to spare); for the drain, an
// arrival window over which one drain costs at most half the tolerance the
// ratio leaves ((1+Ratio)/2 of the rate served). At least twice, at most
// maxLengthenFactor times the requests of out.
func (s *searcher) longer(out StepOutcome, drain bool) int {
	n := max(out.Requests, 1)
	var want int
	if drain {
		// served/rate = W/(W+D) with W = n/rate: D = n/served - n/rate;
		// a window W' with W'/(W'+D) = t needs W' = D t/(1-t).
		t := (1 + s.o.Ratio) / 2
		d := float64(n)/out.Served - float64(n)/out.Offered
		w := d * t / (1 - t)
		want = int(math.Ceil(w * out.Offered))
		s.minWindow = max(s.minWindow, math.Min(w, float64(maxLengthenFactor*n)/out.Offered))
	} else {
		if out.Samples > 0 {
			want = int(math.Ceil(1.1 * float64(n) * float64(out.NeedSamples) / float64(out.Samples)))
		} else {
			want = 2 * max(n, out.NeedSamples)
		}
	}
	want = min(max(want, 2*n), maxLengthenFactor*n)
	if !drain {
		s.minReq = max(s.minReq, want)
	}
	return want
}

func longerText(n int) string {
	if n == 1 {
		return "one longer rerun"
	}
	return strconv.Itoa(n) + " longer reruns"
}

// run is the search; it returns the prober's error, if any.
func (s *searcher) run() error {
	o := s.o
	rate := o.Start
	for {
		// Bracket: a pass, and above it a failure or a level that cannot
		// be measured.
		for s.lo == 0 || s.upper() == 0 {
			if s.full() {
				s.stopMaxSteps()
				return nil
			}
			out, v, ok, err := s.measure(rate, false)
			if err != nil || !ok {
				return err
			}
			switch v {
			case VerdictPass:
				s.lo = rate
				if s.upper() != 0 {
					continue
				}
				if rate >= o.MaxRate {
					s.stop(SearchMaxRate, fmt.Sprintf("the highest rate allowed (%s req/s) passed", fmtLevel(o.MaxRate)))
					return nil
				}
				rate = math.Min(rate*o.Factor, o.MaxRate)
				continue
			case VerdictFail:
				s.hi, s.hiOut = rate, out
			default: // unmeasurable: step down
				s.unmeasurable(rate, out)
			}
			if s.lo != 0 {
				continue
			}
			if v == VerdictInvalid {
				s.unmeasDown++
				if s.hi == 0 && s.unmeasDown >= maxUnmeasurableDown {
					s.stop(SearchInvalid, fmt.Sprintf("no rate down to %s req/s could be measured (%d rates tried from %s req/s, each invalid in %s; the last: %s): "+
						"the client could not keep its own schedule on this host even far below where it started, so the host is too busy to measure; "+
						"the search stopped there instead of deciding on levels it could not measure",
						fmtLevel(rate), s.unmeasDown, fmtLevel(o.Start), attemptsText(o.Retries+1, o.Retries+1), strings.Join(out.Invalid, "; ")))
					return nil
				}
				// Below a level the client could not drive, step down
				// twice as far: each unmeasurable level costs its reruns,
				// and narrowing back up costs one step per factor.
				rate /= o.Factor
			}
			rate /= o.Factor
			if rate < o.MinRate {
				if s.hi == 0 {
					s.stop(SearchInvalid, fmt.Sprintf("no rate down to %s req/s could be measured (the last, %s req/s: %s); "+
						"the search stopped there instead of deciding on levels it could not measure",
						fmtLevel(s.unmeas), fmtLevel(s.unmeas), strings.Join(s.unmeasOut.Invalid, "; ")))
					return nil
				}
				s.stop(SearchMinRate, fmt.Sprintf("no rate passed down to %s req/s", fmtLevel(s.hi)))
				return nil
			}
		}
		// Narrow.
		hintUsed := 0.0 // the hi for which the throughput hint was tried
		lastWasHint, lastPassed := false, false
		for s.upper() > s.lo*(1+s.tolerance()) {
			if len(s.res.Steps) >= o.MaxSteps-1 {
				// One step left: confirm lo in the bracket there is.
				s.stop(SearchMaxSteps, fmt.Sprintf("%d steps ran (--auto-max-steps) before the bracket narrowed to %s; the knee was confirmed in the wider bracket",
					o.MaxSteps, pct100(o.Tolerance)))
				break
			}
			up := s.upper()
			var p float64
			h := s.hiOut.Throughput / o.Ratio
			switch {
			case up == s.hi && hintUsed != s.hi && s.hiOut.SLOHeld && h > s.lo*(1+o.Tolerance/2) && h < up/(1+o.Tolerance/2):
				p, hintUsed, lastWasHint = h, s.hi, true
			case lastWasHint:
				lastWasHint = false
				if lastPassed {
					p = s.lo * (1 + o.Tolerance) * (1 - 1e-9)
				} else {
					p = up / (1 + o.Tolerance) * (1 + 1e-9)
				}
				if p <= s.lo || p >= up {
					p = math.Sqrt(s.lo * up)
				}
			default:
				lastWasHint = false
				p = math.Sqrt(s.lo * up)
			}
			out, v, ok, err := s.measure(p, false)
			if err != nil || !ok {
				return err
			}
			lastPassed = v == VerdictPass
			switch v {
			case VerdictPass:
				s.lo = p
			case VerdictFail:
				s.hi, s.hiOut = p, out
			default:
				s.unmeasurable(p, out)
			}
		}
		// Confirm.
		if s.full() {
			s.stopMaxSteps()
			return nil
		}
		out, v, ok, err := s.measure(s.lo, true)
		if err != nil || !ok {
			return err
		}
		if v == VerdictPass {
			s.confirmed = s.lo
			switch {
			case s.unmeas != 0 && (s.hi == 0 || s.unmeas < s.hi):
				// The neighbour above lo could not be measured: lo is
				// a bound, not the knee.
				s.res.End, s.res.Stop = SearchUnmeasurable, s.unmeasStop()
			case s.res.End == "":
				s.res.End = SearchBracketed
			}
			return nil
		}
		if v == VerdictInvalid && s.unmeas != 0 && (s.hi == 0 || s.unmeas < s.hi) {
			// Below a level it could not measure, the client could not
			// measure lo again either: on a host this busy, searching
			// lower only spends the budget on more flagged steps. lo's
			// valid pass stands as an unconfirmed bound.
			s.unconfirmedBound = true
			s.res.End, s.res.Stop = SearchUnmeasurable, s.unmeasStop()
			return nil
		}
		s.res.End, s.res.Stop = "", ""
		failed := s.lo
		if v == VerdictFail {
			// lo failed its confirmation: it is a failure, and the knee
			// is below it.
			s.hi, s.hiOut = s.lo, out
		} else {
			// lo could not be measured again: the client's ceiling is
			// below it.
			s.unmeasurable(s.lo, out)
		}
		s.lo = 0
		for _, p := range s.passed {
			if p < failed && p > s.lo {
				s.lo = p
			}
		}
		if s.lo == 0 {
			rate = failed / o.Factor
			if rate < o.MinRate {
				s.stop(SearchMinRate, fmt.Sprintf("no rate passed down to %s req/s", fmtLevel(failed)))
				return nil
			}
		}
	}
}

// knee states the search's knee: Found when lo was confirmed below a
// failure; the bracket so far otherwise.
func (s *searcher) knee() Knee {
	k := Knee{Low: s.lo, Upper: s.hi}
	if s.confirmed > 0 {
		k.Low = s.confirmed
	}
	verdicts := map[float64]string{}
	valid := false
	for _, o := range s.res.Steps {
		if !o.Valid {
			continue
		}
		valid = true
		// A run too short to decide is no figure to quote (issue 22 V9).
		if g := o.reportedGoodput(); o.Verdict != VerdictTooShort && (g > k.MaxGoodput || k.MaxGoodputLevel == 0) {
			k.MaxGoodput, k.MaxGoodputLevel = g, o.Level
		}
		switch o.Verdict {
		case VerdictUnconfirmed:
			k.NonMonotonic = true
		case VerdictPass, VerdictFail:
			if prev, ok := verdicts[o.Level]; ok && prev != o.Verdict {
				k.NonMonotonic = true
			}
			verdicts[o.Level] = o.Verdict
		}
	}
	unconfirmed := ""
	if k.NonMonotonic {
		unconfirmed = "; a level that had passed failed its confirmation"
	}
	switch {
	case (s.confirmed > 0 || s.unconfirmedBound) && s.unmeas != 0 && (k.Upper == 0 || s.unmeas < k.Upper):
		k.Bound = s.bound()
		how := "passed again on confirmation"
		if !k.Bound.Confirmed {
			how = "passed once; its confirmation was invalid too"
		}
		k.Reason = fmt.Sprintf("highest passing level %s (%s); the next level, %s, could not be measured (%s), so the knee is at least %s, not located%s",
			fmtLevel(k.Low), how, fmtLevel(s.unmeas), strings.Join(k.Bound.Flags, ", "), fmtLevel(k.Low), unconfirmed)
	case s.confirmed > 0 && k.Upper > 0:
		k.Found, k.Level = true, k.Low
		k.Reason = fmt.Sprintf("highest passing level %s (passed again on confirmation), first failing level %s%s", fmtLevel(k.Low), fmtLevel(k.Upper), unconfirmed)
	case !valid:
		k.Reason = "no valid step: the knee cannot be decided"
	case k.Low > 0 && k.Upper > 0:
		k.Reason = fmt.Sprintf("%s passed and %s failed, but %s was not confirmed by a second step, so the knee is not stated%s", fmtLevel(k.Low), fmtLevel(k.Upper), fmtLevel(k.Low), unconfirmed)
	case k.Low > 0 && s.unmeas > k.Low:
		k.Reason = fmt.Sprintf("%s passed and %s could not be measured, but %s was not confirmed by a second step, so the knee is not stated", fmtLevel(k.Low), fmtLevel(s.unmeas), fmtLevel(k.Low))
	case k.Low > 0:
		k.Reason = fmt.Sprintf("every level tried passed; the knee is above %s", fmtLevel(k.Low))
	case k.Upper > 0:
		k.Reason = fmt.Sprintf("no level passed; the knee is below %s%s", fmtLevel(k.Upper), unconfirmed)
	default:
		k.Reason = "no level could be decided"
	}
	k.settle(s.res.Steps, s.o.Ratio)
	return k
}
