package compare

import (
	"math"
	"strings"

	"github.com/llmprobe/llmprobe/prober/answer"
	"github.com/llmprobe/llmprobe/prober/client"
)

// Agreement classifies the replies of one check (pure): equal hashes
// agree; otherwise the first differing *token* is found and the replies
// are low_margin only when the candidate's token there is among the
// baseline's top alternatives at that position (answer.Result.Logprobs:
// the top 2) and the baseline's log-probability margin between its own
// token and the candidate's is under lowMargin: greedy decoding near a tie,
// which batch variance flips. Anything else is a mismatch: an unrelated
// token (a different model), a confident position, or one past the tokens
// with logprobs. pos is that token's index (-1: unknown), m the margin.
//
// With logprobs on both sides the tokens are compared one by one. Where
// one side's reply ends first (a prefix extension, `…dog.` → `…dog..`),
// the other side's token there is judged by its own top-2 margin (the end
// it nearly chose is not among the logprobs). Without the candidate's
// logprobs, the baseline's tokens are matched against the candidate's
// reply text, and the candidate's token is an alternative of the
// baseline's when the reply continues with it there.
func Agreement(b, c *answer.Result, lowMargin float64) (agreement string, pos int, m float64) {
	if b.Outcome == answer.Error || c.Outcome == answer.Error {
		return AgreeError, -1, 0
	}
	if b.ReplyHash == c.ReplyHash {
		return AgreeEqual, -1, 0
	}
	if len(b.Logprobs) > 0 && len(c.Logprobs) > 0 {
		return tokenAgreement(b.Logprobs, c.Logprobs, lowMargin)
	}
	off := 0
	for i, t := range b.Logprobs {
		rest := c.Reply[min(off, len(c.Reply)):]
		if t.Token != "" && strings.HasPrefix(rest, t.Token) {
			off += len(t.Token)
			continue
		}
		for _, alt := range t.Top {
			if alt.Token != t.Token && alt.Token != "" && strings.HasPrefix(rest, alt.Token) {
				return altAgreement(t, alt, i, lowMargin)
			}
		}
		return AgreeMismatch, i, topMargin(t)
	}
	return AgreeMismatch, -1, 0
}

// tokenAgreement compares two replies' tokens (Agreement with logprobs on
// both sides).
func tokenAgreement(b, c []client.TokenLogprob, lowMargin float64) (string, int, float64) {
	i := 0
	for i < len(b) && i < len(c) && b[i].Token == c[i].Token {
		i++
	}
	switch {
	case i < len(b) && i < len(c):
		for _, alt := range b[i].Top {
			if alt.Token == c[i].Token {
				return altAgreement(b[i], alt, i, lowMargin)
			}
		}
		return AgreeMismatch, i, topMargin(b[i])
	case i < len(b) && len(c) < answer.LogprobTokens:
		// The candidate's reply ended here: the baseline's token was
		// near a tie with the end when its margin is small.
		return marginAgreement(b[i], i, lowMargin)
	case i < len(c) && len(b) < answer.LogprobTokens:
		// The candidate extends the baseline's reply: judged by the
		// margin of its extra token.
		return marginAgreement(c[i], i, lowMargin)
	}
	return AgreeMismatch, -1, 0 // past the tokens with logprobs
}

// altAgreement: the candidate chose alt, one of the baseline's top
// alternatives at position i to its token t.
func altAgreement(t client.TokenLogprob, alt client.TopLogprob, i int, lowMargin float64) (string, int, float64) {
	m := math.Abs(t.Logprob - alt.Logprob)
	if m < lowMargin {
		return AgreeLowMargin, i, m
	}
	return AgreeMismatch, i, m
}

// marginAgreement judges a token by its own top-2 margin.
func marginAgreement(t client.TokenLogprob, i int, lowMargin float64) (string, int, float64) {
	if len(t.Top) < 2 {
		return AgreeMismatch, i, 0
	}
	m := topMargin(t)
	if m < lowMargin {
		return AgreeLowMargin, i, m
	}
	return AgreeMismatch, i, m
}

// topMargin is t's top-2 margin (0: fewer than two known).
func topMargin(t client.TokenLogprob) float64 {
	if len(t.Top) < 2 {
		return 0
	}
	return t.Top[0].Logprob - t.Top[1].Logprob
}
