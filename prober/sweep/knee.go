package sweep

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// DefaultGoodputRatio is the fraction of the offered rate that goodput must
// reach for a step to count as keeping up (DESIGN.md §9 point 7).
const DefaultGoodputRatio = 0.9

// SLOPercentile is the percentile at which a level's SLOs are checked: a
// level holds its SLOs when each SLO metric's p99 over the step is within
// its threshold (Stats.SLOChecks).
const SLOPercentile = 99

// MinSLOSamples is the fewest samples per step on which the knee decides an
// SLO percentile: stats.MinSamples(SLOPercentile), 100 for the p99 (a p90
// would need 10). A level whose SLO p99 rests on fewer is not decided by it:
// the adaptive search reruns the level with more requests, and a ladder
// level that short is neither the knee nor its upper bracket.
const MinSLOSamples = 100

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
	// Served is the request throughput the level achieved: completed
	// requests per second of the step's duration, drain included (vLLM's
	// request_throughput, the mean over the valid rounds). A level whose
	// Served is below the ratio times Offered did not keep up, whatever its
	// keep-up says. 0 = not measured: the rule is skipped (a level that
	// completed nothing fails on goodput anyway).
	Served float64
	// Requests is the number of requests of the level's shortest round (0 =
	// unknown); the search sizes a longer rerun from it.
	Requests int
	// Samples is the fewest samples any SLO percentile of the level rests
	// on (the smallest N of the SLO metrics over its rounds), NeedSamples
	// how many such a percentile needs: MinSLOSamples with an SLO, 0 without
	// (the knee then decides on no percentile).
	Samples     int
	NeedSamples int
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
	// Verdict (a Verdict* constant) and Why (in words) are what Search made
	// of the outcome; empty for outcomes a prober returns.
	Verdict string
	Why     string
}

// Verdicts of a level run (StepOutcome.Verdict; Step.Search in result.json).
const (
	// VerdictPass: the level kept up.
	VerdictPass = "pass"
	// VerdictFail: it did not (keep-up, served throughput or an SLO p99).
	VerdictFail = "fail"
	// VerdictInvalid: a validity flag; it says nothing about the server.
	VerdictInvalid = "invalid"
	// VerdictTooShort: the step was too short to decide (an SLO p99 on fewer
	// than MinSLOSamples samples, or a served throughput short of the rate
	// by what may be the drain of a short step); the search reran it longer.
	VerdictTooShort = "too-short"
	// VerdictConfirmed: the second pass at the knee level (the confirmation).
	VerdictConfirmed = "confirmed"
	// VerdictRepeat: a run of a level that brackets the found knee, after
	// the search ended (SearchOptions.Repeats): its outcome backs the
	// knee's interval and does not move the knee; Why opens with
	// "repeat: pass" or "repeat: fail".
	VerdictRepeat = "repeat"
	// VerdictUnconfirmed: a level that had passed failed its confirmation;
	// it counts as a failure.
	VerdictUnconfirmed = "unconfirmed"
)

// reportedGoodput is the goodput shown for the level: MeasuredGoodput when
// set, else Goodput.
func (o StepOutcome) reportedGoodput() float64 {
	if o.MeasuredGoodput > 0 {
		return o.MeasuredGoodput
	}
	return o.Goodput
}

// TooShort reports whether the level's SLO percentiles rest on fewer samples
// than they need (Samples < NeedSamples).
func (o StepOutcome) TooShort() bool { return o.NeedSamples > 0 && o.Samples < o.NeedSamples }

// servedShort reports whether the level served less than ratio times its
// offered rate (false when Served is not measured).
func (o StepOutcome) servedShort(ratio float64) bool {
	return o.Served > 0 && o.Offered > 0 && o.Served < ratio*o.Offered
}

// judge decides the level under ratio, in this order: invalid; a failure
// on keep-up (goodput below ratio times the offered rate: no percentile
// involved, so however short the step); too short for its SLO percentiles
// (undecided); a failure of an SLO p99 or of the served throughput; else a
// pass. why says it in words.
func (o StepOutcome) judge(ratio float64) (verdict, why string) {
	switch {
	case !o.Valid:
		why := strings.Join(o.Invalid, "; ")
		if why == "" {
			why = "no reason given"
		}
		return VerdictInvalid, why
	case o.Offered <= 0:
		return VerdictFail, "no offered rate"
	case o.Goodput < ratio*o.Offered:
		return VerdictFail, fmt.Sprintf("keep-up %s < %s", pct100(o.Goodput/o.Offered), pct100(ratio))
	case o.TooShort():
		return VerdictTooShort, fmt.Sprintf("its SLO p99 rests on %d samples, fewer than the %d a p99 needs", o.Samples, o.NeedSamples)
	case !o.SLOHeld:
		return VerdictFail, "an SLO p99 did not hold"
	case o.servedShort(ratio):
		return VerdictFail, fmt.Sprintf("served %s req/s, below %s of the offered %s req/s", fmtLevel(o.Served), pct100(ratio), fmtLevel(o.Offered))
	}
	return VerdictPass, ""
}

// Decide returns the level's verdict under ratio: VerdictInvalid,
// VerdictFail, VerdictTooShort or VerdictPass (see judge).
func (o StepOutcome) Decide(ratio float64) string {
	v, _ := o.judge(ratio)
	return v
}

// Passes reports whether the level keeps up: it is valid, its goodput is at
// least ratio times the offered rate, its SLO p99s hold on enough samples
// (MinSLOSamples) and it served at least ratio times the offered rate.
func (o StepOutcome) Passes(ratio float64) bool {
	v, _ := o.judge(ratio)
	return v == VerdictPass
}

// Knee is the knee found in a set of step outcomes (result.json: "knee",
// kneeKeys in resultjson.go).
type Knee struct {
	// Found is true when the knee is bracketed: a level passed (twice in an
	// adaptive search: its confirmation too) and the next valid level above
	// it failed. Level is then the knee: the highest passing level, Low.
	Found bool
	// Level is the knee when Found, else 0 (result.json writes no
	// knee.level then).
	Level float64
	// Low is the highest passing level below the first failing one
	// (result.json knee.bracket_low; 0 when none passed). Without Found it
	// is a lower bound of the knee (every level passed, or the search
	// stopped before it confirmed Low).
	Low float64
	// Upper is the lowest failing valid level above Low (result.json
	// knee.bracket_high and, as before, knee.upper; 0 when none failed).
	Upper float64
	// MaxGoodput is the highest goodput (StepOutcome.MeasuredGoodput, vLLM's
	// request_goodput, when set) of any valid level that was decided (a
	// level too short to decide is left out: issue 22 V9), in req/s, and
	// MaxGoodputLevel the level that reached it; both 0 without one.
	MaxGoodput      float64
	MaxGoodputLevel float64
	// NonMonotonic is true when a valid level above the first failing one
	// passed again, or a level passed once and failed its confirmation
	// (noise, or a system that recovers); the knee is still the level below
	// the first failure.
	NonMonotonic bool
	// Reason says in words how the knee was decided.
	Reason string
	// State is what the sweep's evidence says of the knee (result.json
	// knee.state): KneeDecided, KneeBound or KneeUndecided; set by
	// LadderKnee and the adaptive search (settle). Empty in results
	// written before it existed: StateOf derives it then.
	State string
	// Undecided, for State KneeUndecided, says why in one word of
	// UndecidedReasons (result.json knee.undecided; the reason label of
	// llmprobe_sweep_knee_undecided_info); empty otherwise.
	Undecided string
	// Stop says why an adaptive search ended early (SearchResult.Stop):
	// a level that stayed invalid, the step budget; empty otherwise.
	Stop string
	// Bound is set when an adaptive search confirmed a level but could not
	// measure the next one above it (SearchUnmeasurable): the knee is at
	// least Bound.AtLeast (= Low), not located; Found is false and Decided
	// true. nil otherwise (result.json knee.bound).
	Bound *KneeBoundDetail
	// Interval is the knee's uncertainty (nil when no knee was found or it
	// could not be computed): over the rounds, or from a bootstrap of the
	// requests of the steps around the knee (kneeci.go).
	Interval *KneeInterval
}

// States of a knee (Knee.State): one vocabulary for result.json's
// knee.state, the state label of llmprobe_sweep_knee_state, the landing
// page and docs/sweep-api.md.
const (
	// KneeDecided: the knee is located: bracketed (a level passed and the
	// next valid level above it failed), or below the lowest level the
	// sweep ran (that level failed on valid evidence and no level ran
	// under it: a knee of 0).
	KneeDecided = "decided"
	// KneeBound: a lower bound only: a level passed, and nothing above it
	// failed on valid evidence (every level passed, the levels above were
	// invalid, e.g. the client saturated, or too short, or the search did
	// not confirm it). The knee is at least Low.
	KneeBound = "bound"
	// KneeUndecided: the evidence decides nothing: no valid level, only
	// levels too short to decide, or no level passed while the levels
	// under the lowest failing one were invalid or too short (the knee may
	// be among them). A knee of 0 is never read from such a sweep.
	KneeUndecided = "undecided"
)

// KneeStates lists the knee states in a stable order.
var KneeStates = []string{KneeDecided, KneeBound, KneeUndecided}

// Why a knee is undecided (Knee.Undecided): a bounded set, the reason
// label of llmprobe_sweep_knee_undecided_info.
const (
	// UndecidedNoValidLevel: every level was invalid (client-saturated,
	// not idle, errors, ...).
	UndecidedNoValidLevel = "no_valid_level"
	// UndecidedTooShort: the valid levels were all too short to decide
	// (an SLO p99 on fewer than MinSLOSamples samples).
	UndecidedTooShort = "too_short"
	// UndecidedNoEvidenceBelow: no level passed, and the levels under the
	// lowest failing one were invalid or too short: "below X" with no
	// valid evidence under X.
	UndecidedNoEvidenceBelow = "no_evidence_below"
)

// UndecidedReasons lists the reasons of an undecided knee in a stable
// order.
var UndecidedReasons = []string{UndecidedNoValidLevel, UndecidedTooShort, UndecidedNoEvidenceBelow}

// settle sets k.State and k.Undecided from its bracket and the level
// outcomes it was decided from (an invalid or too-short level is no
// evidence), and words an undecided knee of 0 in k.Reason.
func (k *Knee) settle(outcomes []StepOutcome, ratio float64) {
	k.Undecided = ""
	switch {
	case k.Found:
		k.State = KneeDecided
	case k.Low > 0:
		k.State = KneeBound
	case k.Upper > 0:
		var below []float64
		for _, o := range outcomes {
			v := o.Verdict
			if v == "" {
				v = o.Decide(ratio)
			}
			if o.Level < k.Upper && (v == VerdictInvalid || v == VerdictTooShort) && !slices.Contains(below, o.Level) {
				below = append(below, o.Level)
			}
		}
		if len(below) == 0 {
			k.State = KneeDecided
			k.Reason += ", the lowest level run: a knee of 0"
			return
		}
		slices.Sort(below)
		k.State, k.Undecided = KneeUndecided, UndecidedNoEvidenceBelow
		k.Reason = fmt.Sprintf("no level passed; the lowest failing level is %s, but %s invalid or too short to decide, "+
			"so the knee is undecided (no valid evidence under %s)", fmtLevel(k.Upper), levelsText(below), fmtLevel(k.Upper))
	default:
		k.State, k.Undecided = KneeUndecided, UndecidedTooShort
		valid := false
		for _, o := range outcomes {
			valid = valid || o.Valid
		}
		if !valid {
			k.Undecided = UndecidedNoValidLevel
		}
	}
}

// StateOf is the knee's state: State, or for a result written before it
// existed, the state its bracket gives (bracketed: decided; a lower bound:
// bound; a failing level without a pass, read as before: decided; nothing:
// undecided).
func (k Knee) StateOf() string {
	switch {
	case k.State != "":
		return k.State
	case k.Found:
		return KneeDecided
	case k.Low > 0:
		return KneeBound
	case k.Upper > 0:
		return KneeDecided
	}
	return KneeUndecided
}

// KneeBoundDetail is a lower bound of the knee: the highest level an adaptive
// search confirmed, below a level that stayed invalid after its reruns.
// When every flag of that level is the client's own (client-saturated,
// client-read-lag), the client is the limit: this client keeps up to
// AtLeast on this host, and Shards processes, each sending 1/Shards of
// every rate (docs/scaling.md), would reach ShardsFor.
type KneeBoundDetail struct {
	// AtLeast is the highest passing level, req/s: the knee is at least
	// this. Confirmed is true when it passed again on its confirmation;
	// false when that run was invalid too (a host so busy that the client
	// could not measure it twice): one valid pass backs the bound.
	AtLeast   float64 `json:"at_least"`
	Confirmed bool    `json:"confirmed"`
	// Unmeasurable is the lowest level that stayed invalid, Flags its
	// validity flags (client-saturated, ...).
	Unmeasurable float64  `json:"unmeasurable"`
	Flags        []string `json:"flags"`
	// Client is true when the client was the limit (every flag is
	// client-saturated or client-read-lag).
	Client bool `json:"client"`
	// Shards is how many shards reach ShardsFor (req/s) with each at most
	// AtLeast; both 0 unless Client. ShardsFor is the lowest failing level
	// when one failed, else the higher of the throughput probe's
	// estimate / 0.9 and one bracketing step above Unmeasurable.
	Shards    int     `json:"shards,omitempty"`
	ShardsFor float64 `json:"shards_for,omitempty"`
}

// Text states the bound in one line: "knee ≥ 171 req/s: this client keeps
// up to 171 req/s on this host; shard the sweep (3 shards)"; "" for nil.
func (b *KneeBoundDetail) Text(unit string) string {
	if b == nil {
		return ""
	}
	once := ""
	if !b.Confirmed {
		once = fmt.Sprintf(" (%s passed once; its confirmation was flagged too)", fmtLevel(b.AtLeast))
	}
	if b.Client {
		return fmt.Sprintf("knee ≥ %s %s: this client keeps up to %s %s on this host%s; shard the sweep (%d shards) to measure up to %s %s",
			fmtLevel(b.AtLeast), unit, fmtLevel(b.AtLeast), unit, once, b.Shards, fmtLevel(b.ShardsFor), unit)
	}
	return fmt.Sprintf("knee ≥ %s %s: %s %s could not be measured (%s)%s", fmtLevel(b.AtLeast), unit, fmtLevel(b.Unmeasurable), unit, strings.Join(b.Flags, ", "), once)
}

// Estimate is the knee when Found, else its lower bound Low (0 when no
// level passed): the figure a gauge of the knee carries, with Found saying
// whether it is bracketed.
func (k Knee) Estimate() float64 {
	if k.Found {
		return k.Level
	}
	return k.Low
}

// LadderKnee decides the knee of a rate (or concurrency) ladder: the highest
// level that passes (StepOutcome.Passes: keep-up, served throughput and
// SLO p99s on enough samples) below the first valid level that fails.
// Invalid levels are skipped, and so are levels too short for their SLO
// p99 (TooShort): they decide nothing, so they are neither the knee nor its
// upper bracket. Outcomes may come in any order.
func LadderKnee(outcomes []StepOutcome, ratio float64) Knee {
	os := slices.Clone(outcomes)
	slices.SortStableFunc(os, func(a, b StepOutcome) int { return cmp.Compare(a.Level, b.Level) })
	var k Knee
	failed := false
	valid := 0
	var short []float64
	for _, o := range os {
		if !o.Valid {
			continue
		}
		valid++
		v, _ := o.judge(ratio)
		if g := o.reportedGoodput(); v != VerdictTooShort && (g > k.MaxGoodput || k.MaxGoodputLevel == 0) {
			k.MaxGoodput, k.MaxGoodputLevel = g, o.Level
		}
		if v == VerdictTooShort {
			if !failed && !slices.Contains(short, o.Level) {
				short = append(short, o.Level)
			}
			continue
		}
		pass := v == VerdictPass
		switch {
		case pass && !failed:
			k.Low = o.Level
		case pass && failed:
			k.NonMonotonic = true
		case !pass && !failed:
			failed = true
			k.Upper = o.Level
		}
	}
	// Only the too-short levels above the knee's lower end matter: one of
	// them may be where the knee is.
	short = slices.DeleteFunc(short, func(l float64) bool { return l < k.Low })
	shortText := ""
	if len(short) > 0 {
		shortText = fmt.Sprintf("; %s too short to decide (an SLO p99 on fewer than %d samples)", levelsText(short), MinSLOSamples)
	}
	switch {
	case valid == 0:
		k.Reason = "no valid step: the knee cannot be decided"
	case k.Low == 0 && k.Upper == 0:
		k.Reason = "no level could be decided" + shortText
	case k.Low == 0:
		k.Reason = fmt.Sprintf("no level passed; the knee is below %s%s", fmtLevel(k.Upper), shortText)
	case len(short) > 0:
		k.Reason = fmt.Sprintf("highest passing level %s%s, so the knee is at least %s but not located", fmtLevel(k.Low), shortText, fmtLevel(k.Low))
	case !failed && invalidAbove(os, k.Low):
		k.Reason = fmt.Sprintf("every valid level passed; higher levels were invalid and excluded, so the knee is at least %s", fmtLevel(k.Low))
	case !failed:
		k.Reason = fmt.Sprintf("every valid level passed; the knee is above %s", fmtLevel(k.Low))
	default:
		k.Found, k.Level = true, k.Low
		k.Reason = fmt.Sprintf("highest passing level %s, first failing level %s", fmtLevel(k.Low), fmtLevel(k.Upper))
	}
	k.settle(os, ratio)
	return k
}

// levelsText lists levels: "level 2" or "levels 1, 2".
func levelsText(ls []float64) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = fmtLevel(l)
	}
	if len(ls) == 1 {
		return "level " + parts[0] + " was"
	}
	return "levels " + strings.Join(parts, ", ") + " were"
}

func invalidAbove(os []StepOutcome, level float64) bool {
	for _, o := range os {
		if !o.Valid && o.Level > level {
			return true
		}
	}
	return false
}

// attemptsText says in how many of a level's attempts it was invalid: "its
// only attempt", "all 3 attempts", or "2 of its 4 attempts" when some
// attempts were valid but too short and lengthened.
func attemptsText(invalid, attempts int) string {
	switch {
	case attempts == 1:
		return "its only attempt"
	case invalid == attempts:
		return "all " + strconv.Itoa(attempts) + " attempts"
	}
	return strconv.Itoa(invalid) + " of its " + strconv.Itoa(attempts) + " attempts"
}

// pct100 formats a fraction as a percentage ("10 %").
func pct100(f float64) string { return strconv.FormatFloat(100*f, 'g', 4, 64) + " %" }

func fmtLevel(v float64) string {
	if math.IsInf(v, 1) {
		return "inf"
	}
	return fmt.Sprintf("%.4g", v)
}
