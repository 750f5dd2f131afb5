package compare

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/llmprobe/llmprobe/prober/slo"
	"github.com/llmprobe/llmprobe/prober/stats"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// Status is the state of one rule or figure.
type Status string

// Rule and figure statuses.
const (
	StatusOK          Status = "ok"
	StatusFailed      Status = "failed"
	StatusNotRecorded Status = "not-recorded"
)

// Outcomes of a comparison (Verdict.Outcome) and of a single-input check.
const (
	OutcomePass         = "pass"
	OutcomeFail         = "fail"
	OutcomeInconclusive = "inconclusive"
)

// Exit codes of compare and analyze.
const (
	ExitPass         = 0
	ExitFail         = 1
	ExitBadInput     = 2
	ExitInconclusive = 3
)

// Validity limits of the comparison rules.
const (
	// MaxCountDiff is the largest relative difference of the sides'
	// success counts at a level.
	MaxCountDiff = 0.05
	// KSAlpha and KSMinD: output-token distributions differ when the
	// Kolmogorov–Smirnov test rejects at KSAlpha and the distance exceeds
	// KSMinD (so that a trivial difference over huge samples is not
	// flagged).
	KSAlpha = 0.01
	KSMinD  = 0.05
	// MaxFinishTVD is the largest total-variation distance of the sides'
	// finish-reason shares.
	MaxFinishTVD = 0.05
)

// Rule names, in report order.
const (
	RuleFingerprint  = "fingerprint"
	RuleSuccess      = "success counts"
	RuleOutputTokens = "output tokens"
	RuleFinish       = "finish reasons"
	RuleErrors       = "error classes"
	RuleClient       = "client not saturated"
	RuleIdle         = "idle proof"
	RuleRounds       = "rounds valid"
	RuleSamples      = "samples per percentile"
	RuleSpread       = "spread between rounds"
)

// Rule is one validity rule's outcome.
type Rule struct {
	Name   string `json:"rule"`
	Status Status `json:"status"`
	// Detail says what was seen; Next, for a rule that is not ok, the
	// evidence to add.
	Detail string `json:"detail"`
	Next   string `json:"next,omitempty"`
}

// Figure is one compared figure at one level.
type Figure struct {
	// Name is the threshold's name ("tpot_p99"), Level the level label.
	Name  string `json:"figure"`
	Level string `json:"level"`
	// Status: ok (no significant regression beyond the limit), failed (a
	// regression beyond the limit), not-recorded (it could not be
	// computed).
	Status Status `json:"status"`
	// Unit is "ms" or "req/s".
	Unit string `json:"unit"`
	// Baseline and Candidate are the figure over each side's rounds pooled;
	// Change is (candidate - baseline) / baseline and CILo, CIHi its
	// interval (Conf, two-level bootstrap: rounds, then requests).
	Baseline  float64 `json:"baseline"`
	Candidate float64 `json:"candidate"`
	Change    float64 `json:"change"`
	CILo      float64 `json:"ci_lo"`
	CIHi      float64 `json:"ci_hi"`
	Conf      float64 `json:"conf"`
	// Limit is the largest regression allowed (a fraction).
	Limit float64 `json:"limit"`
	// BaselineRounds and CandidateRounds are the figure of each round.
	BaselineRounds  []float64 `json:"baseline_rounds"`
	CandidateRounds []float64 `json:"candidate_rounds"`
	// NBaseline and NCandidate are the samples (requests) behind it.
	NBaseline  int `json:"n_baseline"`
	NCandidate int `json:"n_candidate"`
	// Detail says it in words.
	Detail string `json:"detail"`
}

// Verdict is the outcome of a comparison.
type Verdict struct {
	// Outcome is OutcomePass, OutcomeFail or OutcomeInconclusive.
	Outcome string `json:"verdict"`
	// Rules are the validity rules, Fields the fingerprint fields, Figures
	// the compared figures.
	Rules   []Rule      `json:"rules"`
	Fields  []FieldDiff `json:"fingerprint"`
	Figures []Figure    `json:"figures"`
	// Reasons explain the outcome (each regression for a fail; each rule
	// not ok for an inconclusive verdict); Missing lists the evidence still
	// to add.
	Reasons []string `json:"reasons"`
	Missing []string `json:"missing"`
}

// ExitCode is the process exit code of the verdict: pass 0, fail 1,
// inconclusive 3.
func (v *Verdict) ExitCode() int {
	switch v.Outcome {
	case OutcomePass:
		return ExitPass
	case OutcomeFail:
		return ExitFail
	}
	return ExitInconclusive
}

// Options configure Compare.
type Options struct {
	// Thresholds are the compared figures (ParseThresholds). A goodput
	// figure needs SLO.
	Thresholds []Threshold
	// Vary names the fingerprint fields allowed to differ (DefaultVary when
	// nil).
	Vary []string
	// SLO decides which requests are good (goodput).
	SLO slo.SLO
	// Iters, Conf and Seed tune the bootstrap (DefaultIters, DefaultConf,
	// 0).
	Iters int
	Conf  float64
	Seed  uint64
}

// level is one level's steps of both sides.
type level struct {
	label string
	b, c  []*Step
}

// Compare applies every validity rule to the evidence of baseline and
// candidate and compares each threshold's figure at every level both sides
// ran. The verdict is inconclusive when a rule failed or is not recorded
// (listing what to add), fail when a figure regressed beyond its limit with
// an interval that excludes no change, and pass otherwise ("no significant
// difference" passes).
func Compare(baseline, candidate *Evidence, o Options) *Verdict {
	if o.Vary == nil {
		o.Vary = DefaultVary
	}
	if o.Iters <= 0 {
		o.Iters = DefaultIters
	}
	if !(o.Conf > 0 && o.Conf < 1) {
		o.Conf = DefaultConf
	}
	v := &Verdict{Rules: []Rule{}, Figures: []Figure{}, Reasons: []string{}, Missing: []string{}}
	levels, only := pairLevels(baseline, candidate)

	v.Fields = DiffFields(baseline.Fields, candidate.Fields, o.Vary)
	v.Rules = append(v.Rules, fingerprintRule(v.Fields, o.Vary))
	v.Rules = append(v.Rules, successRule(levels, only))
	v.Rules = append(v.Rules, tokensRule(levels))
	v.Rules = append(v.Rules, finishRule(levels))
	v.Rules = append(v.Rules, errorsRule(levels))
	v.Rules = append(v.Rules, clientRule(levels))
	v.Rules = append(v.Rules, idleRule(levels))
	v.Rules = append(v.Rules, roundsRule(levels))
	v.Rules = append(v.Rules, samplesRule(levels, o.Thresholds))
	v.Rules = append(v.Rules, spreadRule(levels))

	for i, l := range levels {
		for j, t := range o.Thresholds {
			v.Figures = append(v.Figures, compareFigure(l, t, o, o.Seed+uint64(i*len(o.Thresholds)+j)))
		}
	}

	inconclusive := false
	for _, r := range v.Rules {
		if r.Status == StatusOK {
			continue
		}
		inconclusive = true
		v.Reasons = append(v.Reasons, r.Name+" "+string(r.Status)+": "+r.Detail)
		if r.Next != "" && !slices.Contains(v.Missing, r.Next) {
			v.Missing = append(v.Missing, r.Next)
		}
	}
	var regressed []string
	for _, f := range v.Figures {
		switch f.Status {
		case StatusNotRecorded:
			inconclusive = true
			v.Reasons = append(v.Reasons, f.Name+" @ "+f.Level+" not-recorded: "+f.Detail)
			next := "per-request samples of both sides (llmprobe records.jsonl, or vllm bench serve --save-detailed)"
			if f.Name == FigureGoodput && o.SLO.IsZero() {
				next = "an SLO (--goodput) to count good requests"
			}
			if !slices.Contains(v.Missing, next) {
				v.Missing = append(v.Missing, next)
			}
		case StatusFailed:
			regressed = append(regressed, f.Name+" @ "+f.Level+": "+f.Detail)
		}
	}
	if len(levels) == 0 {
		inconclusive = true
		v.Reasons = append(v.Reasons, "no level was measured on both sides")
	}
	switch {
	case inconclusive:
		v.Outcome = OutcomeInconclusive
		// Regressions seen on invalid evidence are still worth reading.
		for _, r := range regressed {
			v.Reasons = append(v.Reasons, "regression on evidence that is not valid: "+r)
		}
	case len(regressed) > 0:
		v.Outcome = OutcomeFail
		v.Reasons = append(v.Reasons, regressed...)
	default:
		v.Outcome = OutcomePass
		v.Reasons = append(v.Reasons, "every rule holds and no figure regressed beyond its limit")
	}
	return v
}

// pairLevels groups both sides' steps by level label, in the baseline's
// order; only lists the labels of one side. When each side ran exactly one
// level under different labels, those are paired (the fingerprint rule then
// names the rate).
func pairLevels(b, c *Evidence) (levels []level, only []string) {
	bl, cl := labels(b), labels(c)
	if len(bl) == 1 && len(cl) == 1 && bl[0] != cl[0] {
		l := level{label: bl[0] + " vs " + cl[0]}
		for i := range b.Steps {
			l.b = append(l.b, &b.Steps[i])
		}
		for i := range c.Steps {
			l.c = append(l.c, &c.Steps[i])
		}
		return []level{l}, nil
	}
	for _, lab := range bl {
		if !slices.Contains(cl, lab) {
			only = append(only, lab+" (baseline only)")
			continue
		}
		l := level{label: lab}
		for i := range b.Steps {
			if b.Steps[i].Label == lab {
				l.b = append(l.b, &b.Steps[i])
			}
		}
		for i := range c.Steps {
			if c.Steps[i].Label == lab {
				l.c = append(l.c, &c.Steps[i])
			}
		}
		levels = append(levels, l)
	}
	for _, lab := range cl {
		if !slices.Contains(bl, lab) {
			only = append(only, lab+" (candidate only)")
		}
	}
	return levels, only
}

func labels(e *Evidence) []string {
	var out []string
	for _, s := range e.Steps {
		if !slices.Contains(out, s.Label) {
			out = append(out, s.Label)
		}
	}
	return out
}

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

// perLevel joins per-level details ("rate=4: ...") into one.
func perLevel(levels []level, parts []string) string {
	if len(levels) == 1 && len(parts) == 1 {
		return parts[0]
	}
	return strings.Join(parts, "; ")
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
		r.Detail = fmt.Sprintf("send lag within the limit in all %d rounds", n)
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
		r.Detail = fmt.Sprintf("running and waiting read 0 before all %d rounds", n)
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
	r.Detail = fmt.Sprintf("all %d rounds complete, error rates under the limit", n)
	return r
}

// latencySamples pools the values of metric m of the successful requests
// of steps, by round; ok is false when a step has no per-request samples.
func latencySamples(steps []*Step, m string) (byRound [][]float64, ok bool) {
	rounds := map[int][]float64{}
	var order []int
	for _, s := range steps {
		if s.Requests == nil {
			return nil, false
		}
		if _, seen := rounds[s.Round]; !seen {
			order = append(order, s.Round)
			rounds[s.Round] = []float64{}
		}
		for _, q := range s.Requests {
			if v, has := q.value(m); has {
				rounds[s.Round] = append(rounds[s.Round], v)
			}
		}
	}
	for _, r := range order {
		byRound = append(byRound, rounds[r])
	}
	return byRound, true
}

// sampleCount is the number of samples of metric m behind a side's
// percentile: the per-request samples, or the completed count when only
// summaries are recorded.
func sampleCount(steps []*Step, m string) int {
	if rs, ok := latencySamples(steps, m); ok {
		n := 0
		for _, r := range rs {
			n += len(r)
		}
		return n
	}
	return completed(steps)
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

// rateSamples returns per round the per-request flags of a rate figure (1
// for a good or completed request) and the rounds' durations; ok is false
// when a step lacks per-request samples or a duration.
func rateSamples(steps []*Step, t Threshold, s slo.SLO) (byRound [][]float64, durs []float64, ok bool) {
	idx := map[int]int{}
	for _, st := range steps {
		d := st.RateDuration
		if !(d > 0) {
			d = st.Duration
		}
		if st.Requests == nil || !(d > 0) {
			return nil, nil, false
		}
		i, seen := idx[st.Round]
		if !seen {
			i = len(byRound)
			idx[st.Round] = i
			byRound = append(byRound, nil)
			durs = append(durs, 0)
		}
		durs[i] += d
		for _, q := range st.Requests {
			x := 0.0
			if (t.Metric == FigureGoodput && q.Good(s)) || (t.Metric == FigureThroughput && q.OK) {
				x = 1
			}
			byRound[i] = append(byRound[i], x)
		}
	}
	return byRound, durs, true
}

func compareFigure(l level, t Threshold, o Options, seed uint64) Figure {
	f := Figure{Name: t.Name(), Level: l.label, Limit: t.Max, Conf: o.Conf, Unit: "ms",
		BaselineRounds: []float64{}, CandidateRounds: []float64{}}
	var fb, fc *figure
	if t.Latency() {
		rb, okb := latencySamples(l.b, t.Metric)
		rc, okc := latencySamples(l.c, t.Metric)
		if !okb || !okc {
			f.Status = StatusNotRecorded
			f.Detail = "per-request samples not recorded: no interval on the difference"
			f.BaselineRounds, f.CandidateRounds = recordedRounds(l.b, t), recordedRounds(l.c, t)
			f.Baseline, f.Candidate = stats.Mean(f.BaselineRounds), stats.Mean(f.CandidateRounds)
			return f
		}
		fb, fc = newFigure(rb, nil, t.P), newFigure(rc, nil, t.P)
	} else {
		f.Unit = "req/s"
		if t.Metric == FigureGoodput && o.SLO.IsZero() {
			f.Status = StatusNotRecorded
			f.Detail = "no SLO: goodput needs --goodput"
			return f
		}
		rb, db, okb := rateSamples(l.b, t, o.SLO)
		rc, dc, okc := rateSamples(l.c, t, o.SLO)
		if !okb || !okc {
			f.Status = StatusNotRecorded
			f.Detail = "per-request samples or step durations not recorded: no interval on the difference"
			return f
		}
		fb, fc = newFigure(rb, db, 0), newFigure(rc, dc, 0)
	}
	f.NBaseline, f.NCandidate = fb.n(), fc.n()
	f.Baseline, f.Candidate = fb.value(), fc.value()
	f.BaselineRounds, f.CandidateRounds = fb.perRound(), fc.perRound()
	if f.NBaseline == 0 || f.NCandidate == 0 || math.IsNaN(f.Baseline) || math.IsNaN(f.Candidate) || f.Baseline == 0 {
		f.Status = StatusNotRecorded
		f.Detail = "no sample on one side"
		f.Baseline, f.Candidate = finiteOr0(f.Baseline), finiteOr0(f.Candidate)
		return f
	}
	f.Change = (f.Candidate - f.Baseline) / f.Baseline
	lo, hi, ok := diffCI(fb, fc, o.Iters, o.Conf, seed)
	if !ok {
		f.Status = StatusNotRecorded
		f.Detail = "the bootstrap could not bound the difference (the baseline resamples to 0)"
		return f
	}
	f.CILo, f.CIHi = lo, hi
	// worse > 0 is a regression: a latency up, a rate down.
	worse, worseLo := f.Change, lo
	if !t.Latency() {
		worse, worseLo = -f.Change, -hi
	}
	interval := fmt.Sprintf("%s → %s %s, %+.1f %% (%.0f %% interval %+.1f %% … %+.1f %%)",
		num(f.Baseline), num(f.Candidate), f.Unit, 100*f.Change, 100*o.Conf, 100*lo, 100*hi)
	significant := lo > 0 || hi < 0
	switch {
	case worseLo > 0 && worse > t.Max:
		f.Status = StatusFailed
		f.Detail = fmt.Sprintf("regressed: %s, beyond the %.0f %% limit", interval, 100*t.Max)
	case !significant:
		f.Status = StatusOK
		f.Detail = "no significant difference: " + interval
	case worse > 0:
		f.Status = StatusOK
		f.Detail = fmt.Sprintf("worse within the %.0f %% limit: %s", 100*t.Max, interval)
	default:
		f.Status = StatusOK
		f.Detail = "improved: " + interval
	}
	return f
}

// recordedRounds is each step's recorded percentile of t (summaries only).
func recordedRounds(steps []*Step, t Threshold) []float64 {
	out := []float64{}
	for _, s := range steps {
		if v, ok := s.Percentiles[t.Metric][t.P]; ok {
			out = append(out, v)
		}
	}
	return out
}

func finiteOr0(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// num formats a figure with 3 significant digits at least.
func num(v float64) string {
	switch a := math.Abs(v); {
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3g", v)
}
