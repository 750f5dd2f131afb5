package compare

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/llmprobe/llmprobe/prober/stats"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// ruleEvidence is what the validity rules read: the levels both sides ran
// and the labels of one side only, the fingerprint fields, --vary and the
// compared figures.
type ruleEvidence struct {
	levels []level
	only   []string
	fields []FieldDiff
	vary   []string
	ths    []Threshold
	reruns []string
}

// finding is what a rule's check found; next, when set, is the evidence to
// add in place of the table's.
type finding struct {
	status       Status
	detail, next string
}

// validityRule is one row of the rules table.
type validityRule struct {
	name string
	// needs names the evidence the rule reads (docs/compare.md's source
	// column; "" when it reads only how many rounds ran).
	needs string
	check func(e *ruleEvidence) finding
	// failed and notRecorded are the evidence to add (Rule.Next) when the
	// rule failed or is not recorded ("": none, or the finding's own).
	failed, notRecorded string
}

// validityRules are compare's validity rules in report order (DESIGN.md
// §9 point 9, docs/compare.md "Verdict rules").
var validityRules = []validityRule{
	{name: RuleFingerprint, needs: "each round's manifest fingerprint", check: checkFingerprint},
	{name: RuleSuccess, needs: "result.json", check: checkSuccess,
		failed: "both sides at the same levels with comparable success counts (find why one side completed fewer requests)"},
	{name: RuleOutputTokens, needs: "records.jsonl", check: checkTokens,
		failed:      "the same actual output lengths on both sides (ignore_eos, or find why one side stops earlier)",
		notRecorded: "per-request output lengths of both sides (llmprobe records.jsonl, or vllm bench serve --save-detailed)"},
	{name: RuleFinish, needs: "result.json", check: checkFinish,
		failed:      "the same finish-reason mix on both sides",
		notRecorded: "finish reasons of both sides (an llmprobe run records them)"},
	{name: RuleErrors, needs: "result.json", check: checkErrors,
		failed:      "an explanation of the errors only one side has (errors-redacted.jsonl), then a rerun without them",
		notRecorded: "the error class of every failed request (llmprobe records.jsonl)"},
	{name: RuleClient, needs: "validity", check: checkClient,
		failed:      "rounds in which the client keeps its schedule (a less loaded client host, more client CPU, or a lower rate)",
		notRecorded: "proof that the client kept up (llmprobe records each round's send lag and CPU)"},
	{name: RuleIdle, needs: "validity", check: checkIdle,
		failed:      "rounds that start from an idle server (a longer --idle-timeout, or no other load on it)",
		notRecorded: "an idle proof before every round (the server's /metrics with its running and waiting gauges: vllm:num_requests_running and _waiting, or the engine's own, docs/engines.md)"},
	{name: RuleRounds, needs: "validity", check: checkRounds, failed: "complete rounds with an error rate under the limit"},
	{name: RuleSamples, needs: "records.jsonl", check: checkSamples},
	{name: RuleSummaries, needs: "vllm bench serve --save-detailed", check: checkSummaries,
		failed: "a result file whose summary percentiles agree with its own per-request arrays (rerun vllm bench serve, or find what edited the file)"},
	{name: RuleSpread, check: checkSpread, notRecorded: "at least 2 rounds per side, interleaved (--rounds 4: A/B/B/A)"},
}

// applyRules runs every rule of the table on e.
func applyRules(e *ruleEvidence) []Rule {
	out := make([]Rule, 0, len(validityRules))
	for _, vr := range validityRules {
		f := vr.check(e)
		r := Rule{Name: vr.name, Status: f.status, Detail: f.detail, Next: f.next}
		if r.Next == "" {
			switch f.status {
			case StatusFailed:
				r.Next = vr.failed
			case StatusNotRecorded:
				r.Next = vr.notRecorded
			}
		}
		out = append(out, r)
	}
	return out
}

// perLevel runs check on every level and joins what it says of each ("; ",
// without the level's label when there is one level). The status is the
// worst: not-recorded over failed over ok.
func perLevel(levels []level, check func(l level) (Status, string)) finding {
	f := finding{status: StatusOK}
	var parts []string
	for _, l := range levels {
		st, s := check(l)
		if st == StatusNotRecorded || st == StatusFailed && f.status == StatusOK {
			f.status = st
		}
		parts = append(parts, prefix(levels, l, s))
	}
	f.detail = strings.Join(parts, "; ")
	return f
}

// perStep runs check on every step of both sides: a rule fails when a step
// is bad, else is not recorded when a step is unknown (unknownText and the
// steps, ", "), else holds (okFormat with the count of steps and
// stepsWord).
func perStep(levels []level, check func(side string, s *Step) (bad, unknown []string), badText func([]string) string,
	unknownText, okFormat string) finding {
	var bad, unknown []string
	n := 0
	eachStep(levels, func(side string, s *Step) {
		n++
		b, u := check(side, s)
		bad, unknown = append(bad, b...), append(unknown, u...)
	})
	switch {
	case len(bad) > 0:
		return finding{status: StatusFailed, detail: badText(bad)}
	case len(unknown) > 0:
		return finding{status: StatusNotRecorded, detail: unknownText + strings.Join(unknown, ", ")}
	}
	return finding{status: StatusOK, detail: fmt.Sprintf(okFormat, n, stepsWord(levels))}
}

func checkFingerprint(e *ruleEvidence) finding {
	var diff, names, missing, varied []string
	for _, f := range e.fields {
		switch f.Status {
		case FieldDiffers:
			diff = append(diff, fmt.Sprintf("%s differs (baseline %s, candidate %s)", f.Field, f.Baseline, f.Candidate))
			names = append(names, f.Field)
		case FieldChanged:
			diff = append(diff, fmt.Sprintf("%s changed between rounds (baseline %s, candidate %s)", f.Field, f.Baseline, f.Candidate))
			names = append(names, f.Field)
		case FieldVaried:
			varied = append(varied, f.Field)
		case FieldNotRecorded:
			if slices.Contains(requiredFields, f.Field) {
				missing = append(missing, f.Field)
			}
		}
	}
	switch {
	case len(diff) > 0:
		return finding{status: StatusFailed, detail: strings.Join(diff, "; ") + " — not declared in --vary",
			next: "runs that differ only in the declared variable (or declare it: --vary " + strings.Join(append(slices.Clone(e.vary), names...), ",") + ")"}
	case len(missing) > 0:
		return finding{status: StatusNotRecorded, detail: "not recorded on both sides: " + strings.Join(missing, ", "),
			next: "the fingerprint fields " + strings.Join(missing, ", ") + " of both sides (an llmprobe run records them)"}
	}
	return finding{status: StatusOK, detail: "the sides differ only in: " + orNone(varied)}
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "nothing"
	}
	return strings.Join(s, ", ")
}

func checkSuccess(e *ruleEvidence) finding {
	f := perLevel(e.levels, func(l level) (Status, string) {
		cb, cc := completed(l.b), completed(l.c)
		d := 0.0
		if m := max(cb, cc); m > 0 {
			d = math.Abs(float64(cb-cc)) / float64(m)
		}
		p := fmt.Sprintf("%s: %d vs %d completed (of %d vs %d)", l.label, cb, cc, total(l.b), total(l.c))
		if d > MaxCountDiff || cb == 0 || cc == 0 {
			return StatusFailed, p + fmt.Sprintf(", %.1f %% apart > %.0f %%", 100*d, 100*MaxCountDiff)
		}
		return StatusOK, p
	})
	if len(e.only) > 0 {
		if f.detail != "" {
			f.detail += "; "
		}
		f.status, f.detail = StatusFailed, f.detail+"levels measured on one side only: "+strings.Join(e.only, ", ")
	}
	return f
}

func checkTokens(e *ruleEvidence) finding {
	return perLevel(e.levels, func(l level) (Status, string) {
		a, oka := outputTokens(l.b)
		b, okb := outputTokens(l.c)
		if !oka || !okb {
			return StatusNotRecorded, l.label + ": per-request output lengths not recorded"
		}
		d, p := ksTest(a, b)
		s := fmt.Sprintf("%s: Kolmogorov–Smirnov D=%.3f p=%.3g (n=%d vs %d; mean %.1f vs %.1f tokens)", l.label, d, p, len(a), len(b), stats.Mean(a), stats.Mean(b))
		if p < KSAlpha && d > KSMinD {
			return StatusFailed, s + fmt.Sprintf(": the distributions differ (p < %g, D > %g)", KSAlpha, KSMinD)
		}
		return StatusOK, s
	})
}

func checkFinish(e *ruleEvidence) finding {
	return perLevel(e.levels, func(l level) (Status, string) {
		a, oka := finishReasons(l.b)
		b, okb := finishReasons(l.c)
		if !oka || !okb {
			return StatusNotRecorded, l.label + ": finish reasons not recorded"
		}
		tvd := shareDistance(a, b)
		s := fmt.Sprintf("%s: baseline %s, candidate %s (distance %.3f)", l.label, countsText(a), countsText(b), tvd)
		if tvd > MaxFinishTVD {
			return StatusFailed, s + fmt.Sprintf(" > %g", MaxFinishTVD)
		}
		return StatusOK, s
	})
}

func checkErrors(e *ruleEvidence) finding {
	return perLevel(e.levels, func(l level) (Status, string) {
		a, oka := errorClasses(l.b)
		b, okb := errorClasses(l.c)
		if !oka || !okb {
			return StatusNotRecorded, l.label + ": requests failed but their error classes are not recorded"
		}
		var one []string
		for _, k := range slices.Sorted(maps.Keys(a)) {
			if b[k] == 0 {
				one = append(one, fmt.Sprintf("%s (%d, baseline only)", k, a[k]))
			}
		}
		for _, k := range slices.Sorted(maps.Keys(b)) {
			if a[k] == 0 {
				one = append(one, fmt.Sprintf("%s (%d, candidate only)", k, b[k]))
			}
		}
		if len(one) > 0 {
			return StatusFailed, fmt.Sprintf("%s: error classes on one side only: %s", l.label, strings.Join(one, ", "))
		}
		return StatusOK, fmt.Sprintf("%s: baseline %s, candidate %s", l.label, countsText(a), countsText(b))
	})
}

func checkClient(e *ruleEvidence) finding {
	f := perStep(e.levels, func(side string, s *Step) (bad, unknown []string) {
		if s.Validity == nil {
			return nil, []string{stepName(side, s)}
		}
		for i, fl := range s.Validity.Flags {
			if IsClientFlag(fl) && i < len(s.Validity.Reasons) {
				bad = append(bad, stepName(side, s)+" ("+s.Validity.Reasons[i]+")")
			}
		}
		return bad, nil
	}, func(bad []string) string { return "client saturated in " + strings.Join(bad, "; ") },
		"client send lag not recorded for ", "send lag within the limit in all %d %s")
	if len(e.reruns) > 0 {
		f.detail += "; " + strings.Join(e.reruns, "; ")
		if f.status == StatusFailed {
			f.detail += fmt.Sprintf(" (still flagged after the reruns allowed: %d per round, %d in all)", MaxRoundReruns, len(e.reruns))
		}
	}
	return f
}

func checkIdle(e *ruleEvidence) finding {
	return perStep(e.levels, func(side string, s *Step) (bad, unknown []string) {
		switch {
		case s.Validity == nil:
			return nil, []string{stepName(side, s)}
		case s.Validity.Idle.Status == sweep.IdleNotIdle:
			return []string{stepName(side, s)}, nil
		case s.Validity.Idle.Status != sweep.IdleProven:
			reason := s.Validity.Idle.Reason
			if reason == "" {
				reason = "not recorded"
			}
			return nil, []string{stepName(side, s) + " (" + reason + ")"}
		}
		return nil, nil
	}, func(bad []string) string { return "server not idle before " + strings.Join(bad, ", ") },
		"no idle proof for ", "running and waiting read 0 before all %d %s")
}

func checkRounds(e *ruleEvidence) finding {
	return perStep(e.levels, func(side string, s *Step) (bad, _ []string) {
		if s.Validity == nil {
			if t := s.Total(); t > 0 && float64(s.Failed)/float64(t) > sweep.DefaultMaxErrorRate {
				bad = append(bad, fmt.Sprintf("%s (error rate %.1f %%)", stepName(side, s), 100*float64(s.Failed)/float64(t)))
			}
			return bad, nil
		}
		for i, f := range s.Validity.Flags {
			if f == sweep.FlagErrors || f == sweep.FlagInterrupted {
				bad = append(bad, stepName(side, s)+" ("+f+": "+s.Validity.Reasons[i]+")")
			}
		}
		return bad, nil
	}, func(bad []string) string { return strings.Join(bad, "; ") }, "", "all %d %s complete, error rates under the limit")
}

func checkSamples(e *ruleEvidence) finding {
	var short, fine []string
	more := 0
	for _, l := range e.levels {
		for _, t := range e.ths {
			if !t.Latency() {
				continue
			}
			need := stats.MinSamples(t.P)
			nb, nc := sampleCount(l.b, t.Metric), sampleCount(l.c, t.Metric)
			name := t.Name()
			if len(e.levels) > 1 {
				name += " @ " + l.label
			}
			if nb < need || nc < need {
				m := need - min(nb, nc)
				more = max(more, m)
				short = append(short, fmt.Sprintf("%s rests on %d baseline and %d candidate samples, p%s needs %d per side: %d more requests per side",
					name, nb, nc, stats.PercentileKey(t.P), need, m))
				continue
			}
			fine = append(fine, fmt.Sprintf("%s %d/%d", name, nb, nc))
		}
	}
	if len(short) > 0 {
		return finding{status: StatusFailed, detail: strings.Join(short, "; "),
			next: fmt.Sprintf("%d more requests per side (raise --num-prompts or --rounds)", more)}
	}
	return finding{status: StatusOK, detail: "samples per side: " + orNone(fine)}
}

func checkSummaries(e *ruleEvidence) finding {
	var bad []string
	eachStep(e.levels, func(side string, s *Step) {
		if len(s.Contradictions) > 0 {
			bad = append(bad, stepName(side, s)+": "+strings.Join(s.Contradictions, "; "))
		}
	})
	if len(bad) > 0 {
		return finding{status: StatusFailed, detail: "the file's summary contradicts its own per-request arrays in " + strings.Join(bad, "; ")}
	}
	return finding{status: StatusOK, detail: "no recorded percentile contradicts the per-request samples"}
}

func checkSpread(e *ruleEvidence) finding {
	minB, minC := math.MaxInt, math.MaxInt
	for _, l := range e.levels {
		minB, minC = min(minB, rounds(l.b)), min(minC, rounds(l.c))
	}
	if len(e.levels) == 0 {
		minB, minC = 0, 0
	}
	f := finding{status: StatusOK, detail: fmt.Sprintf("%d baseline and %d candidate rounds", minB, minC)}
	if minB < 2 || minC < 2 {
		f.status = StatusNotRecorded
		f.detail += ": the spread between rounds of a side is not measured with fewer than 2"
	} else if minB < 3 || minC < 3 {
		f.detail += " (the methodology asks for 3 or more per configuration)"
	}
	return f
}

// prefix drops the level label of a lone level's detail.
func prefix(levels []level, l level, s string) string {
	if len(levels) == 1 {
		return strings.TrimPrefix(s, l.label+": ")
	}
	return s
}

func completed(steps []*Step) int {
	n := 0
	for _, s := range steps {
		n += s.Completed
	}
	return n
}

func total(steps []*Step) int {
	n := 0
	for _, s := range steps {
		n += s.Total()
	}
	return n
}

// outputTokens pools the actual output lengths of the successful requests
// of steps; ok is false when a step has no per-request output lengths.
func outputTokens(steps []*Step) (xs []float64, ok bool) {
	for _, s := range steps {
		if s.Requests == nil {
			return nil, false
		}
		for _, q := range s.Requests {
			if !q.OK {
				continue
			}
			if q.OutputTokens < 0 {
				return nil, false
			}
			xs = append(xs, float64(q.OutputTokens))
		}
	}
	return xs, true
}

func finishReasons(steps []*Step) (map[string]int, bool) {
	out := map[string]int{}
	for _, s := range steps {
		if s.FinishReasons == nil {
			return nil, false
		}
		for k, n := range s.FinishReasons {
			out[k] += n
		}
	}
	return out, true
}

// shareDistance is the total-variation distance of two count maps' shares.
func shareDistance(a, b map[string]int) float64 {
	na, nb := sum(a), sum(b)
	if na == 0 || nb == 0 {
		if na == nb {
			return 0
		}
		return 1
	}
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	d := 0.0
	for k := range keys {
		d += math.Abs(float64(a[k])/float64(na) - float64(b[k])/float64(nb))
	}
	return d / 2
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func countsText(m map[string]int) string {
	keys := slices.Sorted(maps.Keys(m))
	var parts []string
	for _, k := range keys {
		if m[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func errorClasses(steps []*Step) (map[string]int, bool) {
	out := map[string]int{}
	for _, s := range steps {
		if s.ErrorClasses == nil {
			if s.Failed > 0 {
				return nil, false
			}
			continue
		}
		for k, n := range s.ErrorClasses {
			if n > 0 {
				out[k] += n
			}
		}
	}
	return out, true
}

// eachStep walks every step of both sides with its side's name.
func eachStep(levels []level, fn func(side string, s *Step)) {
	for _, l := range levels {
		for _, s := range l.b {
			fn("baseline", s)
		}
		for _, s := range l.c {
			fn("candidate", s)
		}
	}
}

// stepsWord names what eachStep counts: rounds when there is one level,
// steps (rounds times levels) otherwise.
func stepsWord(levels []level) string {
	if len(levels) == 1 {
		return "rounds"
	}
	return "steps"
}

func stepName(side string, s *Step) string {
	return fmt.Sprintf("%s round %d %s", side, s.Round, s.Label)
}

func rounds(steps []*Step) int {
	seen := map[int]bool{}
	for _, s := range steps {
		seen[s.Round] = true
	}
	return len(seen)
}
