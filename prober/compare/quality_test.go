package compare

import (
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/prober/answer"
	"github.com/llmprobe/llmprobe/prober/client"
)

// tok is a token with its top-2 log-probabilities: itself and alt, m
// nats below.
func tok(s, alt string, m float64) client.TokenLogprob {
	return client.TokenLogprob{Token: s, Logprob: -0.01, Top: []client.TopLogprob{{Token: s, Logprob: -0.01}, {Token: alt, Logprob: -0.01 - m}}}
}

func res(outcome answer.Outcome, reply string, lp ...client.TokenLogprob) answer.Result {
	return answer.Result{Check: "c", Outcome: outcome, Reply: reply, ReplyHash: "h:" + reply, Logprobs: lp}
}

// TestAgreement: the rule that tells batch variance from a mismatch: the
// first differing token, the candidate's token among the baseline's top
// alternatives there, and a small margin.
func TestAgreement(t *testing.T) {
	base := res(answer.Pass, "Paris", tok("Pa", "Lyo", 4), tok("ris", "Ris", 0.02))
	dog := res(answer.Pass, "dog.", tok("dog", "cat", 4), tok(".", "..", 0.02))
	for _, tc := range []struct {
		name string
		b, c answer.Result
		want string
		pos  int
	}{
		{"equal hashes", base, res(answer.Pass, "Paris"), AgreeEqual, -1},
		{"the baseline's alternative at a low-margin token", base, res(answer.Fail, "PaRis"), AgreeLowMargin, 1},
		{"an unrelated token at a low-margin position", base, res(answer.Fail, "Paxis"), AgreeMismatch, 1},
		{"the baseline's alternative at a confident token", base, res(answer.Fail, "Lyon"), AgreeMismatch, 0},
		{"the threshold is strict", res(answer.Pass, "ab", tok("a", "z", 4), tok("b", "B", 0.1)), res(answer.Fail, "aB"), AgreeMismatch, 1},
		{"differs past the baseline's tokens, no candidate logprobs", base, res(answer.Fail, "Paris!"), AgreeMismatch, -1},
		{"no logprobs on the baseline", res(answer.Pass, "Paris"), res(answer.Fail, "PaRis"), AgreeMismatch, -1},
		{"a position without a second candidate", res(answer.Pass, "ab", tok("a", "z", 4), client.TokenLogprob{Token: "b"}),
			res(answer.Fail, "aB"), AgreeMismatch, 1},
		{"a side erred", base, res(answer.Error, ""), AgreeError, -1},
		// Both sides with logprobs: token by token.
		{"a flip to the baseline's alternative (dog. → dog..)", dog,
			res(answer.Pass, "dog..", tok("dog", "cat", 4), tok("..", ".", 0.02)), AgreeLowMargin, 1},
		{"a prefix extension judged by the extra token's margin", dog,
			res(answer.Pass, "dog..", tok("dog", "cat", 4), tok(".", "..", 0.02), tok(".", "!", 0.03)), AgreeLowMargin, 2},
		{"a confident extension", dog,
			res(answer.Pass, "dog. Yes", tok("dog", "cat", 4), tok(".", "..", 0.02), tok(" Yes", "!", 3)), AgreeMismatch, 2},
		{"a reply cut at a near tie", dog, res(answer.Fail, "dog", tok("dog", "cat", 4)), AgreeLowMargin, 1},
		{"a reply cut where the baseline was sure of its token", res(answer.Pass, "dog!", tok("dog", "cat", 4), tok("!", "?", 3)),
			res(answer.Fail, "dog", tok("dog", "cat", 4)), AgreeMismatch, 1},
		{"another model: the first token differs, not among the top 2", res(answer.Pass, "42", tok("42", "43", 0.05)),
			res(answer.Pass, " 42", tok(" ", "\n", 0.01), tok("42", "43", 0.05)), AgreeMismatch, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, pos, _ := Agreement(&tc.b, &tc.c, DefaultLowMargin)
			if got != tc.want || pos != tc.pos {
				t.Errorf("Agreement = %s at %d, want %s at %d", got, pos, tc.want, tc.pos)
			}
		})
	}
}

// checks builds n checks on both sides: the first fail fail on the
// candidate only (a mismatch), the next flips low-margin flips that fail
// the candidate, the rest agree and pass.
func checks(n, fail, flips, repeats int) []QualityCheck {
	return checksWith(n, fail, flips, 0, repeats)
}

// checksWith is checks whose next other checks pass on both sides with
// replies that differ from the first token (another model).
func checksWith(n, fail, flips, other, repeats int) []QualityCheck {
	var b, c []answer.Result
	for r := 0; r < repeats; r++ {
		for i := range n {
			id := string(rune('A'+i%26)) + strings.Repeat("x", i/26)
			br := res(answer.Pass, "Paris", tok("Pa", "Lyo", 4), tok("ris", "Ris", 0.02))
			cr := br
			switch {
			case i < fail:
				cr = res(answer.Fail, "Lyon")
			case i < fail+flips:
				cr = res(answer.Fail, "PaRis")
			case i < fail+flips+other:
				cr = res(answer.Pass, " Paris")
			}
			br.Check, cr.Check = id, id
			b, c = append(b, br), append(c, cr)
		}
	}
	return PairChecks(b, c)
}

// TestJudgeQuality: the decision of the quality section.
func TestJudgeQuality(t *testing.T) {
	s := QualitySettings{Set: "builtin", LowMargin: DefaultLowMargin, Tolerance: DefaultQualityTolerance, Iters: 2000, Seed: 1}
	for _, tc := range []struct {
		name                  string
		n, fail, flips, reps  int
		want                  Status
		detail                string
		failing, lowMargin, N int
	}{
		{"identical", 21, 0, 0, 1, StatusOK, "within the tolerance", 0, 0, 21},
		{"low-margin flips only", 21, 0, 5, 3, StatusOK, "within the tolerance", 0, 15, 21},
		{"a third wrong", 21, 7, 0, 1, StatusFailed, "regressed", 21, 0, 21},
		{"a third wrong, repeated", 21, 7, 0, 3, StatusFailed, "regressed", 21, 0, 21},
		{"one flaky check in 30", 30, 1, 0, 1, StatusUndecided, "checks (now 30) would decide", 1, 0, 30},
		{"too few checks", 5, 0, 0, 1, StatusUndecided, "fewer than the 10", 0, 0, 5},
		{"another model, both passing", 21, 0, 0, 3, StatusFailed, "the replies disagree with the baseline's: replies mismatch the baseline's in 100 %", 0, 0, 21},
		{"a few replies of another kind", 21, 0, 0, 3, StatusUndecided, "agreement undecided", 0, 0, 21},
	} {
		t.Run(tc.name, func(t *testing.T) {
			other := 0
			switch tc.name {
			case "another model, both passing":
				other = tc.n
			case "a few replies of another kind":
				other = 3
			}
			q := JudgeQuality(s, checksWith(tc.n, tc.fail, tc.flips, other, tc.reps), nil)
			if q.Status != tc.want || !strings.Contains(q.Detail, tc.detail) || q.N != tc.N || q.Agreement[AgreeLowMargin] != tc.lowMargin {
				t.Errorf("%s: %s (N %d, %v)", q.Status, q.Detail, q.N, q.Agreement)
			}
			if tc.failing > 0 && len(q.Failing()) != tc.fail {
				t.Errorf("failing %v, want %d", q.Failing(), tc.fail)
			}
			if tc.want == StatusFailed && tc.fail > 0 && !strings.Contains(q.Detail, "failing: A") {
				t.Errorf("detail does not name the failing checks: %s", q.Detail)
			}
			if tc.want == StatusUndecided && q.NeedChecks == 0 {
				t.Errorf("undecided without the checks that would decide: %s", q.Detail)
			}
		})
	}
	// An error is no evidence: a check that erred on a side is left out.
	cs := checks(12, 0, 0, 1)
	cs[0].Candidate = res(answer.Error, "")
	if q := JudgeQuality(s, cs, nil); q.N != 11 || q.Agreement[AgreeError] != 1 || q.Status != StatusOK {
		t.Errorf("an erred check: N %d, %v, %s", q.N, q.Agreement, q.Detail)
	}
}

// TestApplyQuality: the quality section combines with the latency verdict
// as a figure does: a failed section fails the verdict, an undecided one
// makes a pass inconclusive, an ok one leaves it.
func TestApplyQuality(t *testing.T) {
	for _, tc := range []struct {
		outcome string
		q       Status
		want    string
	}{
		{OutcomePass, StatusOK, OutcomePass},
		{OutcomePass, StatusFailed, OutcomeFail},
		{OutcomeInconclusive, StatusFailed, OutcomeFail},
		{OutcomePass, StatusUndecided, OutcomeInconclusive},
		{OutcomeFail, StatusUndecided, OutcomeFail},
		{OutcomeFail, StatusOK, OutcomeFail},
		{OutcomeInconclusive, StatusOK, OutcomeInconclusive},
	} {
		v := &Verdict{Outcome: tc.outcome}
		ApplyQuality(v, &Quality{Status: tc.q, NeedChecks: 40, Detail: "d"})
		if v.Outcome != tc.want || v.Quality == nil || len(v.Reasons) != 1 {
			t.Errorf("%s + quality %s = %s (%q), want %s", tc.outcome, tc.q, v.Outcome, v.Reasons, tc.want)
		}
	}
}
