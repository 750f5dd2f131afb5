package workload

import (
	"context"
	"strings"
	"testing"
)

// commonPrefixWords is the number of leading words a and b share.
func commonPrefixWords(a, b string) int {
	wa, wb := strings.Fields(a), strings.Fields(b)
	n := 0
	for n < len(wa) && n < len(wb) && wa[n] == wb[n] {
		n++
	}
	return n
}

// TestPromptNonceKeepsLengthsChangesTexts: two runs with the same seed and
// different prompt nonces draw the same lengths and send prompts of the same
// token counts that share no leading word (with or without a shared prefix),
// while within a run the shared prefix is still shared; the same nonce
// gives the same prompts again, and nonce 0 the texts of no nonce at all.
func TestPromptNonceKeepsLengthsChangesTexts(t *testing.T) {
	for _, prefix := range []int{0, 40} {
		spec := Spec{InputTokens: LengthSpec{Dist: DistUniform, Min: 20, Max: 60}, OutputTokens: Fixed(4), PrefixTokens: prefix}
		run := func(nonce uint64) []Item {
			g := newGen(t, spec, 7)
			g.SetPromptNonce(nonce)
			if got := g.PromptNonce(); got != nonce {
				t.Fatalf("PromptNonce() = %d, want %d", got, nonce)
			}
			return items(t, g, &funcTok{count: chunkCount}, 60)
		}
		plain, a, a2, b := run(0), run(11), run(11), run(12)
		if got := items(t, newGen(t, spec, 7), &funcTok{count: chunkCount}, 60); got[5].Prompt != plain[5].Prompt {
			t.Fatalf("prefix %d: nonce 0 changed the texts", prefix)
		}
		shared := 0
		for i := range a {
			if a[i].InputTokens != b[i].InputTokens || a[i].OutputTokens != b[i].OutputTokens || a[i].PromptTokens != b[i].PromptTokens ||
				a[i].InputTokens != plain[i].InputTokens {
				t.Fatalf("prefix %d item %d: lengths differ across nonces: %+v vs %+v", prefix, i, a[i], b[i])
			}
			if a[i].Prompt != a2[i].Prompt {
				t.Fatalf("prefix %d item %d: the same nonce gave another prompt", prefix, i)
			}
			for j := range b {
				for _, other := range [][]Item{b, plain} {
					// Two runs' prompts share at most what two items' nonces
					// of one run may: a common start of their digits (one
					// word in 64 pairs, two in 4096).
					n := commonPrefixWords(a[i].Prompt, other[j].Prompt)
					if n > 3 {
						t.Fatalf("prefix %d: item %d of nonce 11 and item %d of another run share %d leading words", prefix, i, j, n)
					}
					if n > 1 {
						shared++
					}
				}
			}
		}
		if pairs := 2 * len(a) * len(b); shared*100 > pairs {
			t.Fatalf("prefix %d: %d of %d cross-run pairs share more than one leading word", prefix, shared, pairs)
		}
		if prefix > 0 {
			// Within the run the prefix is shared: every item starts with
			// item 0's first words.
			for i := range a {
				if n := commonPrefixWords(a[0].Prompt, a[i].Prompt); n < 10 {
					t.Fatalf("item %d shares only %d leading words with item 0 within the run", i, n)
				}
			}
		}
	}
}

// TestPromptNonceSessionsAndTraces: the later turns of a session and a
// trace's block seed change with the nonce too.
func TestPromptNonceSessionsAndTraces(t *testing.T) {
	spec := Spec{InputTokens: Fixed(30), OutputTokens: Fixed(4),
		MultiTurn: &MultiTurn{Turns: TurnsSpec{LengthSpec: Fixed(3)}}}
	turn := func(nonce uint64) Item {
		s, err := NewSessions(spec, 5)
		if err != nil {
			t.Fatal(err)
		}
		s.SetPromptNonce(nonce)
		it, err := s.FollowUp(context.Background(), &funcTok{count: wordCount}, 0, 2)
		if err != nil {
			t.Fatal(err)
		}
		return it
	}
	a, b := turn(1), turn(2)
	if a.InputTokens != b.InputTokens || commonPrefixWords(a.Prompt, b.Prompt) > 1 {
		t.Fatalf("follow-ups of nonces 1 and 2: %q vs %q", a.Prompt, b.Prompt)
	}
	if MixNonce(9, 0) != 9 || MixNonce(9, 1) == 9 || MixNonce(9, 1) == MixNonce(9, 2) {
		t.Fatalf("MixNonce: %d %d %d", MixNonce(9, 0), MixNonce(9, 1), MixNonce(9, 2))
	}
}
