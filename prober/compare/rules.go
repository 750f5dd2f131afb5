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

func fingerprintRule(fields []FieldDiff, vary []string) Rule {
	r := Rule{Name: RuleFingerprint, Status: StatusOK}
	var diff, names, missing, varied []string
	for _, f := range fields {
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
		r.Status = StatusFailed
		r.Detail = strings.Join(diff, "; ") + " — not declared in --vary"
		r.Next = "runs that differ only in the declared variable (or declare it: --vary " + strings.Join(append(slices.Clone(vary), names...), ",") + ")"
	case len(missing) > 0:
		r.Status = StatusNotRecorded
		r.Detail = "not recorded on both sides: " + strings.Join(missing, ", ")
		r.Next = "the fingerprint fields " + strings.Join(missing, ", ") + " of both sides (an llmprobe run records them)"
	default:
		r.Detail = "the sides differ only in: " + orNone(varied)
	}
	return r
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "nothing"
	}
	return strings.Join(s, ", ")
}

func successRule(levels []level, only []string) Rule {
	r := Rule{Name: RuleSuccess, Status: StatusOK}
	var parts []string
	for _, l := range levels {
		cb, cc := completed(l.b), completed(l.c)
		d := 0.0
		if m := max(cb, cc); m > 0 {
			d = math.Abs(float64(cb-cc)) / float64(m)
		}
		p := fmt.Sprintf("%s: %d vs %d completed (of %d vs %d)", l.label, cb, cc, total(l.b), total(l.c))
		if d > MaxCountDiff || cb == 0 || cc == 0 {
			r.Status = StatusFailed
			p += fmt.Sprintf(", %.1f %% apart > %.0f %%", 100*d, 100*MaxCountDiff)
		}
		parts = append(parts, prefix(levels, l, p))
	}
	if len(only) > 0 {
		r.Status = StatusFailed
		parts = append(parts, "levels measured on one side only: "+strings.Join(only, ", "))
	}
	r.Detail = strings.Join(parts, "; ")
	if r.Status != StatusOK {
		r.Next = "both sides at the same levels with comparable success counts (find why one side completed fewer requests)"
	}
	return r
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

func tokensRule(levels []level) Rule {
	r := Rule{Name: RuleOutputTokens, Status: StatusOK}
	var parts []string
	for _, l := range levels {
		a, oka := outputTokens(l.b)
		b, okb := outputTokens(l.c)
		if !oka || !okb {
			r.Status = StatusNotRecorded
			parts = append(parts, prefix(levels, l, l.label+": per-request output lengths not recorded"))
			continue
		}
		d, p := ksTest(a, b)
		s := fmt.Sprintf("%s: Kolmogorov–Smirnov D=%.3f p=%.3g (n=%d vs %d; mean %.1f vs %.1f tokens)", l.label, d, p, len(a), len(b), stats.Mean(a), stats.Mean(b))
		if p < KSAlpha && d > KSMinD {
			if r.Status == StatusOK {
				r.Status = StatusFailed
			}
			s += fmt.Sprintf(": the distributions differ (p < %g, D > %g)", KSAlpha, KSMinD)
		}
		parts = append(parts, prefix(levels, l, s))
	}
	r.Detail = strings.Join(parts, "; ")
	switch r.Status {
	case StatusFailed:
		r.Next = "the same actual output lengths on both sides (ignore_eos, or find why one side stops earlier)"
	case StatusNotRecorded:
		r.Next = "per-request output lengths of both sides (llmprobe records.jsonl, or vllm bench serve --save-detailed)"
	}
	return r
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

func finishRule(levels []level) Rule {
	r := Rule{Name: RuleFinish, Status: StatusOK}
	var parts []string
	for _, l := range levels {
		a, oka := finishReasons(l.b)
		b, okb := finishReasons(l.c)
		if !oka || !okb {
			r.Status = StatusNotRecorded
			parts = append(parts, prefix(levels, l, l.label+": finish reasons not recorded"))
			continue
		}
		tvd := shareDistance(a, b)
		s := fmt.Sprintf("%s: baseline %s, candidate %s (distance %.3f)", l.label, countsText(a), countsText(b), tvd)
		if tvd > MaxFinishTVD {
			if r.Status == StatusOK {
				r.Status = StatusFailed
			}
			s += fmt.Sprintf(" > %g", MaxFinishTVD)
		}
		parts = append(parts, prefix(levels, l, s))
	}
	r.Detail = strings.Join(parts, "; ")
	switch r.Status {
	case StatusFailed:
		r.Next = "the same finish-reason mix on both sides"
	case StatusNotRecorded:
		r.Next = "finish reasons of both sides (an llmprobe run records them)"
	}
	return r
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

func errorsRule(levels []level) Rule {
	r := Rule{Name: RuleErrors, Status: StatusOK}
	var parts []string
	for _, l := range levels {
		a, oka := errorClasses(l.b)
		b, okb := errorClasses(l.c)
		if !oka || !okb {
			r.Status = StatusNotRecorded
			parts = append(parts, prefix(levels, l, l.label+": requests failed but their error classes are not recorded"))
			continue
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
		s := fmt.Sprintf("%s: baseline %s, candidate %s", l.label, countsText(a), countsText(b))
		if len(one) > 0 {
			if r.Status == StatusOK {
				r.Status = StatusFailed
			}
			s = fmt.Sprintf("%s: error classes on one side only: %s", l.label, strings.Join(one, ", "))
		}
		parts = append(parts, prefix(levels, l, s))
	}
	r.Detail = strings.Join(parts, "; ")
	switch r.Status {
	case StatusFailed:
		r.Next = "an explanation of the errors only one side has (errors-redacted.jsonl), then a rerun without them"
	case StatusNotRecorded:
		r.Next = "the error class of every failed request (llmprobe records.jsonl)"
	}
	return r
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

func clientRule(levels []level) Rule {
	r := Rule{Name: RuleClient, Status: StatusOK}
	var bad, unknown []string
	n := 0
	eachStep(levels, func(side string, s *Step) {
		n++
		if s.Validity == nil {
			unknown = append(unknown, stepName(side, s))
			return
		}
		if i := slices.Index(s.Validity.Flags, sweep.FlagClientSaturated); i >= 0 {
			bad = append(bad, stepName(side, s)+" ("+s.Validity.Reasons[i]+")")
		}
	})
	switch {
	case len(bad) > 0:
		r.Status = StatusFailed
		r.Detail = "client saturated in " + strings.Join(bad, "; ")
		r.Next = "rounds in which the client keeps its schedule (a less loaded client host, more client CPU, or a lower rate)"
	case len(unknown) > 0:
		r.Status = StatusNotRecorded
		r.Detail = "client send lag not recorded for " + strings.Join(unknown, ", ")
		r.Next = "proof that the client kept up (llmprobe records each round's send lag and CPU)"
	default:
		r.Detail = fmt.Sprintf("send lag within the limit in all %d %s", n, stepsWord(levels))
	}
	return r
}

func idleRule(levels []level) Rule {
	r := Rule{Name: RuleIdle, Status: StatusOK}
	var bad, unknown []string
	n := 0
	eachStep(levels, func(side string, s *Step) {
		n++
		switch {
		case s.Validity == nil:
			unknown = append(unknown, stepName(side, s))
		case s.Validity.Idle.Status == sweep.IdleNotIdle:
			bad = append(bad, stepName(side, s))
		case s.Validity.Idle.Status != sweep.IdleProven:
			reason := s.Validity.Idle.Reason
			if reason == "" {
				reason = "not recorded"
			}
			unknown = append(unknown, stepName(side, s)+" ("+reason+")")
		}
	})
	switch {
	case len(bad) > 0:
		r.Status = StatusFailed
		r.Detail = "server not idle before " + strings.Join(bad, ", ")
		r.Next = "rounds that start from an idle server (a longer --idle-timeout, or no other load on it)"
	case len(unknown) > 0:
		r.Status = StatusNotRecorded
		r.Detail = "no idle proof for " + strings.Join(unknown, ", ")
		r.Next = "an idle proof before every round (the server's /metrics with vllm:num_requests_running and _waiting)"
	default:
		r.Detail = fmt.Sprintf("running and waiting read 0 before all %d %s", n, stepsWord(levels))
	}
	return r
}

func roundsRule(levels []level) Rule {
	r := Rule{Name: RuleRounds, Status: StatusOK}
	var bad []string
	n := 0
	eachStep(levels, func(side string, s *Step) {
		n++
		if s.Validity == nil {
			if t := s.Total(); t > 0 && float64(s.Failed)/float64(t) > sweep.DefaultMaxErrorRate {
				bad = append(bad, fmt.Sprintf("%s (error rate %.1f %%)", stepName(side, s), 100*float64(s.Failed)/float64(t)))
			}
			return
		}
		for i, f := range s.Validity.Flags {
			if f == sweep.FlagErrors || f == sweep.FlagInterrupted {
				bad = append(bad, stepName(side, s)+" ("+f+": "+s.Validity.Reasons[i]+")")
			}
		}
	})
	if len(bad) > 0 {
		r.Status = StatusFailed
		r.Detail = strings.Join(bad, "; ")
		r.Next = "complete rounds with an error rate under the limit"
		return r
	}
	r.Detail = fmt.Sprintf("all %d %s complete, error rates under the limit", n, stepsWord(levels))
	return r
}

func samplesRule(levels []level, ths []Threshold) Rule {
	r := Rule{Name: RuleSamples, Status: StatusOK}
	var short, fine []string
	more := 0
	for _, l := range levels {
		for _, t := range ths {
			if !t.Latency() {
				continue
			}
			need := stats.MinSamples(t.P)
			nb, nc := sampleCount(l.b, t.Metric), sampleCount(l.c, t.Metric)
			name := t.Name()
			if len(levels) > 1 {
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
		r.Status = StatusFailed
		r.Detail = strings.Join(short, "; ")
		r.Next = fmt.Sprintf("%d more requests per side (raise --num-prompts or --rounds)", more)
		return r
	}
	r.Detail = "samples per side: " + orNone(fine)
	return r
}

func spreadRule(levels []level) Rule {
	r := Rule{Name: RuleSpread, Status: StatusOK}
	minB, minC := math.MaxInt, math.MaxInt
	for _, l := range levels {
		minB, minC = min(minB, rounds(l.b)), min(minC, rounds(l.c))
	}
	if len(levels) == 0 {
		minB, minC = 0, 0
	}
	r.Detail = fmt.Sprintf("%d baseline and %d candidate rounds", minB, minC)
	if minB < 2 || minC < 2 {
		r.Status = StatusNotRecorded
		r.Detail += ": the spread between rounds of a side is not measured with fewer than 2"
		r.Next = "at least 2 rounds per side, interleaved (--rounds 4: A/B/B/A)"
	} else if minB < 3 || minC < 3 {
		r.Detail += " (the methodology asks for 3 or more per configuration)"
	}
	return r
}

func rounds(steps []*Step) int {
	seen := map[int]bool{}
	for _, s := range steps {
		seen[s.Round] = true
	}
	return len(seen)
}
