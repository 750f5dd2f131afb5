package compare

import (
	"fmt"
	"github.com/llmprobe/llmprobe/prober/stats"
	"math"
	"slices"
	"strings"

	"github.com/llmprobe/llmprobe/prober/answer"
)

// The quality section (docs/compare.md "The quality section"): the answer
// checks of a set run once against each side after the rounds, each
// check's results paired, the replies' agreement classified and the
// candidate's pass rate compared with the baseline's.

// Agreements of one check's replies (QualityCheck.Agreement).
const (
	// AgreeEqual: equal reply hashes.
	AgreeEqual = "agree"
	// AgreeLowMargin: the replies differ, first at a token where the
	// candidate chose one of the baseline's top alternatives and the
	// baseline's log-probability margin between the two was under the
	// threshold (Quality.LowMargin): greedy decoding near a tie, which
	// batch variance flips; not a mismatch.
	AgreeLowMargin = "low_margin"
	// AgreeMismatch: the replies differ elsewhere, or where no margin is
	// known (no logprobs, or past the first answer.LogprobTokens tokens).
	AgreeMismatch = "mismatch"
	// AgreeError: a side's check had no reply to judge.
	AgreeError = "error"
)

// Defaults and bounds of the quality settings.
const (
	// DefaultLowMargin is the top-2 margin, in nats, under which a
	// divergence counts as low_margin: between the simulator's fragile
	// token (0.02) and its confident ones (4), and above the logit noise
	// of batch-variant bf16 kernels in vLLM (a few hundredths of a nat on
	// logits of magnitude 10–30: bf16 keeps 8 bits of mantissa).
	DefaultLowMargin = 0.1
	// MaxLowMargin bounds the low-margin threshold: a margin of 5 nats is
	// a token 150 times likelier than the next, no near tie.
	MaxLowMargin = 5.0
	// DefaultQualityTolerance is the largest pass-rate drop allowed (a
	// fraction: 5 points).
	DefaultQualityTolerance = 0.05
	// DefaultMaxDisagreement is the largest excess share of mismatched
	// replies allowed (a fraction: 20 points). Batch variance flips a
	// reply at a near tie (low_margin, not counted) and, on the simulator
	// and on two servers of the same weights, leaves a mismatch in at most
	// a few percent of the sends; a model swap mismatches nearly every
	// reply at its first token (docs/quality.md "Agreement").
	DefaultMaxDisagreement = 0.2
	// DefaultAnswerRepeats is how many times each check is sent to each
	// side: a fault that strikes a share of the replies (a flaky kernel, a
	// bad replica) shows in that share of each check's sends.
	DefaultAnswerRepeats = 3
	// MaxAnswerRepeats bounds the repeats.
	MaxAnswerRepeats = 20
	// MinQualityChecks is the fewest checks judged on both sides that
	// decide: under it the quality section is undecided whatever the
	// interval says (a bootstrap over fewer checks is too coarse to trust).
	MinQualityChecks = 10
	// MaxQualityReplyBytes bounds each reply the report quotes.
	MaxQualityReplyBytes = 200
)

// QualityCheck is one check on both sides.
type QualityCheck struct {
	// Check is the item's id; Repeat counts its sends from 1
	// (QualitySettings.Repeats).
	Check  string `json:"check"`
	Repeat int    `json:"repeat"`
	// Agreement is AgreeEqual, AgreeLowMargin, AgreeMismatch or
	// AgreeError; Position, for differing replies, is the first differing
	// token's index in the baseline's reply (-1: past its logprobs, or
	// none), and Margin the baseline's top-2 margin there (nats).
	Agreement string  `json:"agreement"`
	Position  int     `json:"position"`
	Margin    float64 `json:"margin,omitempty"`
	// Regressed: the baseline passed, the candidate failed, and the
	// replies are not low_margin (a regression this check counts).
	Regressed bool `json:"regressed,omitempty"`
	// Baseline and Candidate are each side's record (redacted replies).
	Baseline  answer.Result `json:"baseline"`
	Candidate answer.Result `json:"candidate"`
}

// QualitySettings are the quality section's settings.
type QualitySettings struct {
	// Set names the check set ("builtin" or the file).
	Set string `json:"set"`
	// LowMargin is the low_margin threshold in nats; Tolerance the largest
	// pass-rate drop allowed (a fraction).
	LowMargin float64 `json:"low_margin_nats"`
	Tolerance float64 `json:"tolerance"`
	// MaxDisagreement is the largest share of sends whose replies may
	// mismatch the baseline's beyond the baseline's own mismatches between
	// its repeats (batch variance) before the candidate fails
	// (DefaultMaxDisagreement when 0).
	MaxDisagreement float64 `json:"max_disagreement,omitempty"`
	// Repeats is how many times each check was sent to each side (the
	// sends of a check are averaged into one unit of the bootstrap).
	Repeats int `json:"repeats"`
	// Iters and Seed tune the bootstrap over checks; Conf is its level.
	Iters int     `json:"bootstrap_iters"`
	Seed  uint64  `json:"seed"`
	Conf  float64 `json:"conf"`
}

// Quality is the quality section of a verdict.
type Quality struct {
	QualitySettings
	// Notes say what ran otherwise than asked (a side that refused
	// logprobs ran without).
	Notes  []string       `json:"notes"`
	Checks []QualityCheck `json:"checks"`
	// Status is ok, failed or undecided (Figure Status); Detail says why.
	Status Status `json:"status"`
	Detail string `json:"detail"`
	// N counts the checks judged on both sides (neither an error);
	// BaselinePass and CandidatePass are their pass rates.
	N             int     `json:"n"`
	BaselinePass  float64 `json:"baseline_pass_rate"`
	CandidatePass float64 `json:"candidate_pass_rate"`
	// Drop is the pass-rate drop that counts: (regressed checks − checks
	// the candidate fixed, neither low_margin) / N; CILo and CIHi its
	// bootstrap interval over checks (paired).
	Drop float64 `json:"drop"`
	CILo float64 `json:"ci_lo"`
	CIHi float64 `json:"ci_hi"`
	// Agreement counts the checks by agreement.
	Agreement map[string]int `json:"agreement"`
	// NeedChecks, when undecided, estimates the checks that would decide
	// (0: none, or no amount would).
	NeedChecks int `json:"need_checks,omitempty"`
	// Disagreement is the second decision figure: the share of sends whose
	// replies mismatch the baseline's (AgreeMismatch; agree and low_margin
	// are agreement), averaged per check; BaselineDisagreement the share of
	// the baseline's own consecutive repeats of a check that mismatch each
	// other (the batch variance the baseline shows, 0 with one repeat);
	// Excess the mean over checks of the first minus the second, and
	// ExcessLo, ExcessHi its bootstrap interval over checks.
	// AgreementStatus decides it against MaxDisagreement (ok, failed,
	// undecided) and AgreementDetail says why. Status is the worse of
	// the two decisions (failed over undecided over ok).
	Disagreement         float64 `json:"disagreement"`
	BaselineDisagreement float64 `json:"baseline_disagreement"`
	Excess               float64 `json:"disagreement_excess"`
	ExcessLo             float64 `json:"disagreement_ci_lo"`
	ExcessHi             float64 `json:"disagreement_ci_hi"`
	AgreementStatus      Status  `json:"agreement_status"`
	AgreementDetail      string  `json:"agreement_detail"`
}

// PairChecks pairs the sides' results by check and repeat, in the
// baseline's order: the k-th send of a check on one side with its k-th on
// the other (a send only one side made counts as an error on the other).
func PairChecks(b, c []answer.Result) []QualityCheck {
	out := make([]QualityCheck, 0, len(b))
	seen := map[string]int{}
	for _, br := range b {
		seen[br.Check]++
		k := seen[br.Check]
		q := QualityCheck{Check: br.Check, Repeat: k, Baseline: br, Position: -1}
		i, n := -1, 0
		for j := range c {
			if c[j].Check == br.Check {
				if n++; n == k {
					i = j
					break
				}
			}
		}
		if i < 0 {
			q.Candidate = answer.Result{Check: br.Check, Kind: br.Kind, Outcome: answer.Error, Reason: "not run on the candidate"}
		} else {
			q.Candidate = c[i]
		}
		out = append(out, q)
	}
	return out
}

// JudgeQuality classifies every send's agreement and decides the section
// (pure, reproducible from the checks and s: analyze re-derives it). A
// pair of sends counts +1 when the baseline passed and the candidate
// failed, −1 the other way, 0 otherwise, and 0 when low_margin (a near tie
// that batch variance flips is not a regression); a check's value is the
// mean over its pairs judged on both sides (an error is no evidence), and
// the drop the mean over the N checks with one. Its interval is a
// percentile bootstrap over checks at s.Conf: the check is the unit, so
// repeats of one deterministic failure are not counted as independent. Then, with t = s.Tolerance:
//   - undecided under MinQualityChecks checks;
//   - failed when the interval's low end exceeds t (and the drop > 0);
//   - ok when its high end lies below t;
//   - undecided otherwise, with the checks that would decide if the drop
//     held (the interval narrows as 1/√N).
func JudgeQuality(s QualitySettings, checks []QualityCheck, notes []string) *Quality {
	if s.Iters <= 0 {
		s.Iters = DefaultIters
	}
	if !(s.Conf > 0 && s.Conf < 1) {
		s.Conf = DefaultConf
	}
	q := &Quality{QualitySettings: s, Notes: notes, Checks: checks, Agreement: map[string]int{}}
	if q.Notes == nil {
		q.Notes = []string{}
	}
	if q.Checks == nil {
		q.Checks = []QualityCheck{}
	}
	sum, cnt := map[string]float64{}, map[string]int{}
	var order []string
	bp, cp, sends := 0, 0, 0
	for i := range q.Checks {
		c := &q.Checks[i]
		c.Agreement, c.Position, c.Margin = Agreement(&c.Baseline, &c.Candidate, s.LowMargin)
		c.Regressed = false
		q.Agreement[c.Agreement]++
		if c.Agreement == AgreeError {
			continue // an error is not evidence about the answers
		}
		bPass, cPass := c.Baseline.Outcome == answer.Pass, c.Candidate.Outcome == answer.Pass
		if bPass {
			bp++
		}
		if cPass {
			cp++
		}
		x := 0.0
		switch {
		case c.Agreement == AgreeLowMargin:
		case bPass && !cPass:
			x, c.Regressed = 1, true
		case cPass && !bPass:
			x = -1
		}
		if cnt[c.Check] == 0 {
			order = append(order, c.Check)
		}
		sum[c.Check] += x
		cnt[c.Check]++
		sends++
	}
	d := make([]float64, 0, len(order))
	for _, id := range order {
		d = append(d, sum[id]/float64(cnt[id]))
	}
	q.N = len(d)
	if q.N > 0 {
		q.BaselinePass, q.CandidatePass = float64(bp)/float64(sends), float64(cp)/float64(sends)
		q.Drop = mean(d)
		q.CILo, q.CIHi = bootstrapMean(d, s.Iters, s.Conf, s.Seed)
	}
	rates := fmt.Sprintf("pass rate %.0f %% → %.0f %% over %d checks × %d; drop that counts %+.1f points (%.0f %% interval %+.1f … %+.1f), "+
		"agreement: %s", 100*q.BaselinePass, 100*q.CandidatePass, q.N, max(1, s.Repeats), 100*q.Drop, 100*s.Conf, 100*q.CILo, 100*q.CIHi, q.agreementText())
	switch {
	case q.N < MinQualityChecks:
		q.Status = StatusUndecided
		q.NeedChecks = MinQualityChecks
		q.Detail = fmt.Sprintf("undecided: %d checks judged on both sides, fewer than the %d that decide (%s)", q.N, MinQualityChecks, rates)
	case q.CILo > s.Tolerance && q.Drop > 0:
		q.Status = StatusFailed
		q.Detail = fmt.Sprintf("regressed: %s, beyond the %.0f-point tolerance; failing: %s", rates, 100*s.Tolerance, strings.Join(q.Failing(), ", "))
	case q.CIHi < s.Tolerance:
		q.Status = StatusOK
		q.Detail = "within the tolerance: " + rates
	default:
		q.Status = StatusUndecided
		need, how := checksToDecide(decision{worse: q.Drop, lo: q.CILo, hi: q.CIHi, limit: s.Tolerance}, q.N)
		q.NeedChecks = need
		q.Detail = fmt.Sprintf("undecided: %s; the interval reaches the %.0f-point tolerance; %s", rates, 100*s.Tolerance, how)
	}
	q.judgeAgreement(s)
	return q
}

// judgeAgreement decides the second figure, the replies' agreement with
// the baseline's, and folds it into Status and Detail: per check, the
// share of its sends that mismatch the baseline's less the share of the
// baseline's consecutive repeats that mismatch each other (what batch
// variance explains), averaged over the checks with a bootstrap interval
// over checks, against s.MaxDisagreement as the pass-rate drop is against
// s.Tolerance. A candidate whose replies disagree so fails whatever both
// pass rates are.
func (q *Quality) judgeAgreement(s QualitySettings) {
	limit := s.MaxDisagreement
	if !(limit > 0) {
		limit = DefaultMaxDisagreement
	}
	q.MaxDisagreement = limit
	type tally struct{ cross, crossN, self, selfN int }
	per := map[string]*tally{}
	var order []string
	prev := map[string]*answer.Result{}
	for i := range q.Checks {
		c := &q.Checks[i]
		t := per[c.Check]
		if t == nil {
			t = &tally{}
			per[c.Check] = t
		}
		if p := prev[c.Check]; p != nil {
			if a, _, _ := Agreement(p, &c.Baseline, s.LowMargin); a != AgreeError {
				t.selfN++
				if a == AgreeMismatch {
					t.self++
				}
			}
		}
		if c.Baseline.Outcome != answer.Error {
			prev[c.Check] = &c.Baseline
		}
		if c.Agreement == AgreeError {
			continue
		}
		if t.crossN == 0 {
			order = append(order, c.Check)
		}
		t.crossN++
		if c.Agreement == AgreeMismatch {
			t.cross++
		}
	}
	d := make([]float64, 0, len(order))
	var cross, self []float64
	for _, id := range order {
		t := per[id]
		x := float64(t.cross) / float64(t.crossN)
		cross = append(cross, x)
		if t.selfN > 0 {
			v := float64(t.self) / float64(t.selfN)
			self = append(self, v)
			x -= v
		}
		d = append(d, x)
	}
	n := len(d)
	if n > 0 {
		q.Disagreement, q.Excess = mean(cross), mean(d)
		q.ExcessLo, q.ExcessHi = bootstrapMean(d, s.Iters, s.Conf, s.Seed^0x61677265) // "agre"
	}
	if len(self) > 0 {
		q.BaselineDisagreement = mean(self)
	}
	figs := fmt.Sprintf("replies mismatch the baseline's in %.0f %% of the sends (the baseline's own repeats mismatch each other in %.0f %%); "+
		"excess %+.1f points (%.0f %% interval %+.1f … %+.1f) over %d checks", 100*q.Disagreement, 100*q.BaselineDisagreement,
		100*q.Excess, 100*s.Conf, 100*q.ExcessLo, 100*q.ExcessHi, n)
	need := 0
	switch {
	case n < MinQualityChecks:
		q.AgreementStatus = StatusUndecided
		need = MinQualityChecks
		q.AgreementDetail = fmt.Sprintf("undecided: %s, fewer than the %d that decide", figs, MinQualityChecks)
	case q.ExcessLo > limit:
		q.AgreementStatus = StatusFailed
		q.AgreementDetail = fmt.Sprintf("%s, beyond the %.0f-point limit that batch variance stays under: "+
			"another model, weights, tokenizer or template answers", figs, 100*limit)
	case q.ExcessHi < limit:
		q.AgreementStatus = StatusOK
		q.AgreementDetail = fmt.Sprintf("%s, under the %.0f-point limit", figs, 100*limit)
	default:
		q.AgreementStatus = StatusUndecided
		need, _ = checksToDecide(decision{worse: q.Excess, lo: q.ExcessLo, hi: q.ExcessHi, limit: limit}, n)
		how := "the excess is too close to the limit for more checks of the same kind to decide it"
		if need > 0 {
			how = fmt.Sprintf("about %d checks (now %d) would decide it, if the excess holds: a larger check set (--answer-checks FILE)", need, n)
		}
		q.AgreementDetail = fmt.Sprintf("undecided: %s; the interval reaches the %.0f-point limit; %s", figs, 100*limit, how)
	}
	switch {
	case q.AgreementStatus == StatusFailed && q.Status != StatusFailed:
		q.Status = StatusFailed
		q.Detail = "the replies disagree with the baseline's: " + q.AgreementDetail + "; pass rates " + q.Detail
	case q.AgreementStatus == StatusUndecided && q.Status == StatusOK:
		q.Status = StatusUndecided
		q.NeedChecks = need
		q.Detail = "agreement " + q.AgreementDetail + "; pass rates " + q.Detail
	default:
		if q.Status == StatusUndecided {
			q.NeedChecks = max(q.NeedChecks, need)
		}
		q.Detail += "; agreement: " + q.AgreementDetail
	}
}

// Failing names the checks that regressed (in any send), once each.
func (q *Quality) Failing() []string {
	var out []string
	for _, c := range q.FailingSends() {
		out = append(out, c.Check)
	}
	return out
}

// FailingSends is the first regressed send of each check that regressed,
// in order, with how many of its sends regressed.
func (q *Quality) FailingSends() []FailingSend {
	var out []FailingSend
	for _, c := range q.Checks {
		if !c.Regressed {
			continue
		}
		if i := slices.IndexFunc(out, func(f FailingSend) bool { return f.Check == c.Check }); i >= 0 {
			out[i].Regressed++
			continue
		}
		out = append(out, FailingSend{QualityCheck: c, Regressed: 1})
	}
	return out
}

// FailingSend is a check's first regressed send and the count of its
// sends that regressed.
type FailingSend struct {
	QualityCheck
	Regressed int
}

func (q *Quality) agreementText() string {
	var parts []string
	for _, a := range []string{AgreeEqual, AgreeLowMargin, AgreeMismatch, AgreeError} {
		parts = append(parts, fmt.Sprintf("%d %s", q.Agreement[a], a))
	}
	return strings.Join(parts, ", ")
}

// checksToDecide is evidenceToDecide in checks.
func checksToDecide(d decision, n int) (int, string) {
	var factor float64
	switch {
	case d.worse < d.limit:
		factor = math.Pow((d.hi-d.worse)/(d.limit-d.worse), 2)
	case d.worse > 0:
		factor = math.Pow((d.worse-d.lo)/d.worse, 2)
	default:
		factor = math.Inf(1)
	}
	if n <= 0 || math.IsNaN(factor) || factor > MaxEvidenceFactor {
		return 0, "the drop is too close to the tolerance for more checks of the same kind to decide it"
	}
	need := int(math.Ceil(float64(n) * math.Max(factor, 1)))
	return need, fmt.Sprintf("about %d checks (now %d) would decide it, if the drop holds: a larger check set (--answer-checks FILE)", need, n)
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// bootstrapMean is the percentile bootstrap interval at conf of the mean
// of xs (iters resamples, seeded).
func bootstrapMean(xs []float64, iters int, conf float64, seed uint64) (lo, hi float64) {
	rng := stats.NewRand(seed, bootstrapStream^0x7175616c) // "qual"
	ms := make([]float64, iters)
	for i := range ms {
		s := 0.0
		for range xs {
			s += xs[rng.IntN(len(xs))]
		}
		ms[i] = s / float64(len(xs))
	}
	return stats.PercentileInterval(ms, conf)
}

// ApplyQuality folds the quality section q into v as the figures combine:
// a failed quality section fails the verdict (whatever else it says); an
// undecided one makes a passing verdict inconclusive, naming the checks
// that would decide; an ok one leaves the outcome. nil does nothing.
func ApplyQuality(v *Verdict, q *Quality) {
	if q == nil {
		return
	}
	v.Quality = q
	switch q.Status {
	case StatusFailed:
		v.Outcome = OutcomeFail
		v.Reasons = append(v.Reasons, "quality: "+q.Detail)
	case StatusUndecided:
		if v.Outcome == OutcomePass {
			v.Outcome = OutcomeInconclusive
		}
		v.Reasons = append(v.Reasons, "quality "+q.Detail)
		if q.NeedChecks > 0 {
			addMissing(v, fmt.Sprintf("about %d answer checks judged on both sides to decide the quality section "+
				"(a larger check set: --answer-checks FILE)", q.NeedChecks))
		}
	default:
		v.Reasons = append(v.Reasons, "quality: "+q.Detail)
	}
}
