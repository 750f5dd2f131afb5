package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/llmprobe/llmprobe/prober/fingerprint"
	"github.com/llmprobe/llmprobe/prober/slo"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// kneeStep returns the index into res.Steps of the step at the knee level
// (the last valid one at that level), or -1 when no knee was found.
func kneeStep(res *sweep.Result) int {
	if !res.Knee.Found || res.Knee.Level <= 0 {
		return -1
	}
	idx := -1
	ks := res.KneeSteps()
	for i, st := range res.Steps {
		if slices.Contains(ks, st) {
			idx = i
		}
	}
	return idx
}

// whyFails lists why a step does not keep up (empty when it does).
func whyFails(st *sweep.Step) []string {
	var out []string
	x := &st.Stats
	if !st.InKnee() {
		inv := invalidReasons(st)
		if len(inv) == 0 {
			out = append(out, "invalid")
		}
		for _, r := range inv {
			out = append(out, "invalid: "+r)
		}
	}
	for _, c := range x.SLOChecks {
		if !c.Held {
			v, th := num(c.P99MS), num(c.ThresholdMS)
			if v == th { // never "35 ms > 35 ms": the digits that tell them apart
				v, th = cmpText(c.P99MS, c.ThresholdMS)
			}
			out = append(out, fmt.Sprintf("%s p99 %s ms > %s ms", strings.ToUpper(c.Metric), v, th))
		}
	}
	if !isBurst(st) && x.GoodputRatio < ratio {
		g := "goodput " + num(x.RequestGoodput)
		if len(x.SLOChecks) == 0 {
			g = "served " + num(x.RequestThroughput)
		}
		out = append(out, fmt.Sprintf("keep-up %s (needs %s; %s req/s)", pct(math.Min(x.GoodputRatio, 1)), pct(ratio), g))
	} else if !isBurst(st) && st.Mode != sweep.ModeClosed && x.RequestThroughput > 0 && x.RequestThroughput < ratio*st.Level {
		out = append(out, fmt.Sprintf("served %s req/s, below %s of the rate", num(x.RequestThroughput), pct(ratio)))
	}
	return out
}

// invalidLevels returns the distinct levels above min (all levels when min
// is 0) at which no step was valid, sorted; burst steps are left out (they
// are never in the knee).
func invalidAbove(res *sweep.Result, min float64) []float64 {
	valid := map[float64]bool{}
	var out []float64
	for _, st := range res.Steps {
		if st.InKnee() {
			valid[st.Level] = true
		}
	}
	for _, st := range res.Steps {
		l := st.Level
		if st.InKnee() || valid[l] || l <= min || math.IsInf(l, 1) || slices.Contains(out, l) {
			continue
		}
		out = append(out, l)
	}
	slices.Sort(out)
	return out
}

// levelList names levels with the validity flags of their last step:
// "8 req/s (client-saturated: send-lag p99 12 ms > 10 ms)".
func levelList(res *sweep.Result, levels []float64) string {
	parts := make([]string, 0, len(levels))
	for _, l := range levels {
		var last *sweep.Step
		for _, st := range res.Steps {
			if st.Level == l {
				last = st
			}
		}
		why := "invalid"
		if last != nil {
			if inv := invalidReasons(last); len(inv) > 0 {
				why = strings.Join(inv, "; ")
			}
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", levelText(res, l), why))
	}
	return strings.Join(parts, ", ")
}

// sloText describes the SLO thresholds: "TTFT p99 <= 800 ms, TPOT p99 <= 50 ms".
func sloText(res *sweep.Result) string {
	ttft, tpot, e2el := res.SLOThresholds()
	var parts []string
	for _, t := range []struct {
		name string
		v    float64
	}{{"TTFT", ttft}, {"TPOT", tpot}, {"E2EL", e2el}, {"answer TTFT", res.SLO[slo.NameTTFA]}} {
		if t.v > 0 {
			parts = append(parts, fmt.Sprintf("%s <= %s ms", t.name, num(t.v)))
		}
	}
	if len(parts) == 0 {
		return "none set (every successful request counts as good)"
	}
	return strings.Join(parts, ", ")
}

// verdict returns the verdict paragraphs in plain words.
func verdict(res *sweep.Result) []string {
	var out []string
	if !res.Complete {
		reason := res.InterruptedReason
		if reason == "" {
			reason = fingerprint.NotRecorded
		}
		out = append(out, fmt.Sprintf("**This sweep did not complete** (%s). Only the steps that ran are reported; "+
			"the conclusions below rest on them alone.", reason))
	}
	if len(res.Steps) == 0 {
		return append(out, "No step ran, so there is nothing to conclude.")
	}
	invalid := 0
	for _, st := range res.Steps {
		if !st.InKnee() {
			invalid++
		}
	}
	rule := passRule(res)
	k := res.Knee
	short := tooShortAbove(res, k.Low)
	if k.Upper > 0 { // only those below the first failure can hold the knee
		short = slices.DeleteFunc(short, func(l float64) bool { return l > k.Upper })
	}
	switch {
	case k.Found:
		v := fmt.Sprintf("**Capacity knee: %s** (%s). Under this workload the endpoint keeps up to %s: %s.",
			levelText(res, k.Level), bracketText(k), levelText(res, k.Level), rule)
		if t := k.Interval.Text(kneeUnit(res)); t != "" {
			v += " The knee's uncertainty: " + t + "."
		}
		if !closed(res) {
			v += " " + KeepUpSentence
		}
		if up := firstAt(res, k.Upper); up >= 0 {
			if why := whyFails(res.Steps[up]); len(why) > 0 {
				v += fmt.Sprintf(" At %s it no longer does: %s.", levelText(res, k.Upper), strings.Join(why, "; "))
			}
			v += " " + boundText(res.Steps[up])
		}
		out = append(out, v)
	default:
		out = append(out, noKneeText(res, short, invalid))
	}
	if k.Stop != "" {
		out = append(out, "The adaptive search stopped early: "+k.Stop+".")
	}
	if c := res.ReferenceCapacity; c > 0 && k.Low > 0 && !closed(res) {
		if k.Found {
			out = append(out, fmt.Sprintf("The built-in simulator's capacity for this workload, from its parameters, is %s req/s: the knee is %s of it.",
				num(c), pct(k.Low/c)))
		} else {
			out = append(out, fmt.Sprintf("The built-in simulator's capacity for this workload, from its parameters, is %s req/s; no knee was found: "+
				"the highest level that passed is %s of it.", num(c), pct(k.Low/c)))
		}
	}
	if hasValid(res) && k.MaxGoodputLevel != 0 {
		if sloSet(res) {
			out = append(out, fmt.Sprintf("The highest goodput measured (vLLM's request_goodput) was **%s req/s**, at %s.", num(k.MaxGoodput), levelText(res, k.MaxGoodputLevel)))
		} else {
			out = append(out, fmt.Sprintf("No SLO was set (--goodput), so there is no goodput; the highest throughput of successful requests was **%s req/s**, at %s.",
				num(k.MaxGoodput), levelText(res, k.MaxGoodputLevel)))
		}
	}
	if k.NonMonotonic {
		out = append(out, "A level above the first failing one passed again: the curve is noisy. Repeat with more rounds (--rounds) before trusting the knee.")
	}
	if invalid > 0 && invalid < len(res.Steps) {
		v := fmt.Sprintf("%d of %d steps are invalid and were left out of the knee (see Validity checks)", invalid, len(res.Steps))
		if inv := invalidAbove(res, 0); len(inv) > 0 && k.Found {
			v += ": " + levelList(res, inv)
		}
		out = append(out, v+".")
	}
	if k.Reason != "" {
		out = append(out, "Knee rule: "+k.Reason+".")
	}
	return out
}

// longerSteps is the advice for levels too short to decide.
const longerSteps = "Run longer steps (more --num-prompts, or --duration) so that each SLO p99 rests on at least 100 samples."

// tooShortAbove returns the levels above min (every level when min is 0)
// that were too short to decide: valid, not failing on keep-up, but with an
// SLO p99 on fewer samples than it needs (sweep.VerdictTooShort). For an
// adaptive search, a level whose every valid run was too short. Sorted.
func tooShortAbove(res *sweep.Result, min float64) []float64 {
	var out []float64
	if res.SearchEnd != "" {
		decided := map[float64]bool{}
		short := map[float64]bool{}
		for _, st := range res.Steps {
			switch {
			case !st.InKnee() || st.Search == nil:
			case st.Search.Verdict == sweep.VerdictTooShort:
				short[st.Level] = true
			default:
				decided[st.Level] = true
			}
		}
		for l := range short {
			if !decided[l] && l > min {
				out = append(out, l)
			}
		}
	} else {
		for _, l := range res.Levels {
			if l.Level > min && l.Outcome.Decide(ratio) == sweep.VerdictTooShort {
				out = append(out, l.Level)
			}
		}
	}
	slices.Sort(out)
	return out
}

// shortPhrase is "level L was too short to decide" or "levels L1, L2 were
// too short to decide", with why.
func shortPhrase(res *sweep.Result, levels []float64) string {
	parts := make([]string, len(levels))
	for i, l := range levels {
		parts[i] = levelText(res, l)
	}
	if len(levels) == 1 {
		return "level " + parts[0] + " was too short to decide (an SLO p99 on fewer than 100 samples)"
	}
	return "levels " + strings.Join(parts, ", ") + " were too short to decide (SLO p99s on fewer than 100 samples)"
}

// keepUpList lists the keep-up of each level (the mean over its rounds).
func keepUpList(res *sweep.Result, levels []float64) string {
	parts := make([]string, 0, len(levels))
	for _, l := range levels {
		for _, lv := range res.Levels {
			if lv.Level == l {
				parts = append(parts, pct(math.Min(lv.GoodputRatio.Mean, 1)))
				break
			}
		}
	}
	return strings.Join(parts, ", ")
}

// boundText says what limits the knee, from the first failing step: an SLO
// p99 (latency-bound) or keep-up alone (throughput-bound).
func boundText(up *sweep.Step) string {
	var broke []string
	for _, c := range up.Stats.SLOChecks {
		if !c.Held {
			broke = append(broke, strings.ToUpper(c.Metric))
		}
	}
	if len(broke) > 0 {
		return fmt.Sprintf("The knee is **latency-bound** (%s p99): the first failing level broke its SLO.", strings.Join(broke, ", "))
	}
	return "The knee is **throughput-bound**: the first failing level held its SLO p99s but did not keep up with the offered rate."
}

// invalidPhrase is "level L (why) was invalid" or "levels L1 (why), L2
// (why) were invalid".
func invalidPhrase(res *sweep.Result, levels []float64) string {
	if len(levels) == 1 {
		return "level " + levelList(res, levels) + " was invalid"
	}
	return "levels " + levelList(res, levels) + " were invalid"
}

// firstAt returns the index of the first valid step at level v, else the
// first step at v, else -1.
func firstAt(res *sweep.Result, v float64) int {
	fallback := -1
	for i, st := range res.Steps {
		if st.Level != v {
			continue
		}
		if st.InKnee() {
			return i
		}
		if fallback < 0 {
			fallback = i
		}
	}
	return fallback
}

// passRule says what a level needs to pass, in words.
func passRule(res *sweep.Result) string {
	rule := fmt.Sprintf("keep-up of at least %s", pct(ratio))
	if closed(res) {
		rule = fmt.Sprintf("at least %s of the completed requests good", pct(ratio))
	}
	if sloSet(res) {
		rule += " and every SLO p99 within its threshold (" + sloText(res) + ")"
	}
	return rule
}

// noKneeText is the verdict's paragraph when no knee was found: a bracket
// not stated, levels too short to decide, every level passing, every step
// invalid, or no level keeping up. short are the levels too short to
// decide that could hold the knee; invalid counts the invalid steps.
func noKneeText(res *sweep.Result, short []float64, invalid int) string {
	k := res.Knee
	switch {
	case k.Bound != nil:
		how := "passed and passed again on confirmation"
		if !k.Bound.Confirmed {
			how = "passed once, and its confirmation was invalid too (the host is too busy to measure it twice)"
		}
		v := fmt.Sprintf("**Capacity: %s.** %s req/s %s; the next level, %s req/s, "+
			"could not be measured (%s), so the knee is at least %s but was not located.",
			k.Bound.Text(kneeUnit(res)), num(k.Bound.AtLeast), how, num(k.Bound.Unmeasurable), strings.Join(k.Bound.Flags, ", "), levelText(res, k.Low))
		if k.Bound.Client {
			v += fmt.Sprintf(" The client, not the server, is the limit: run %d shards, each sending 1/%d of every rate, "+
				"with `--rates LIST` and `llmprobe merge` (docs/scaling.md); against the built-in simulator, which shares the client's process "+
				"and CPU, run `llmprobe simulate` on another host and sweep it with `--target`.", k.Bound.Shards, k.Bound.Shards)
		}
		return v
	case k.Low > 0 && k.Upper > 0:
		return fmt.Sprintf("**No knee stated** (%s): %s. The knee is somewhere in that bracket; "+
			"run the sweep again with a larger step budget or longer steps to state it.", bracketText(k), k.Reason)
	case k.Low > 0 && len(short) > 0:
		return fmt.Sprintf("**No knee found.** Every level that could be decided kept up, up to %s; the higher %s, "+
			"so the knee is at least %s but was not located. %s", levelText(res, k.Low), shortPhrase(res, short), levelText(res, k.Low), longerSteps)
	case k.Low > 0:
		if inv := invalidAbove(res, k.Low); len(inv) > 0 {
			return fmt.Sprintf("**No knee found.** Every valid level kept up, up to %s; the higher %s, "+
				"which says nothing about the server, so the knee is at least %s but was not located.",
				levelText(res, k.Low), invalidPhrase(res, inv), levelText(res, k.Low))
		}
		return fmt.Sprintf("**No knee found: the endpoint kept up at every level tried, up to %s.** "+
			"The knee is above that; run higher levels to find it.", levelText(res, k.Low))
	case invalid == len(res.Steps):
		return "**No knee can be decided: every step is invalid** (see Validity checks). Fix the cause and run again."
	case k.Upper == 0 && len(short) > 0:
		return fmt.Sprintf("**No knee found: no level could be decided.** The %s, though they kept up (keep-up %s). %s",
			shortPhrase(res, short), keepUpList(res, short), longerSteps)
	}
	v := "**No knee found: no level tried kept up**"
	if len(short) > 0 {
		v = "**No knee found: no level that could be decided kept up**"
	}
	if k.Upper > 0 {
		v += fmt.Sprintf(", not even %s", levelText(res, k.Upper))
		if i := firstAt(res, k.Upper); i >= 0 {
			if why := whyFails(res.Steps[i]); len(why) > 0 {
				v += " (" + strings.Join(why, "; ") + ")"
			}
		}
	}
	if len(short) > 0 {
		return v + fmt.Sprintf(". The lower %s, though they kept up (keep-up %s): the knee may lie there. %s",
			shortPhrase(res, short), keepUpList(res, short), longerSteps)
	}
	return v + ". The knee is below the lowest level; run lower levels or check the SLO."
}
