package workload

import (
	"context"
	"fmt"
	"hash/fnv"
	"strings"
	"testing"
)

// startCost returns a tokenizer whose count is overhead tokens plus one a
// word, plus one more when the text's first word is one of the words that
// hash to 0 modulo oneIn ("the" excepted): a BPE vocabulary without the
// word's space-less form, which costs a token more at the very start of
// the text (a completion prompt's start, or a chat message's, right after
// the template's role header: overhead 12 models that).
func startCost(overhead int, oneIn uint32) func(string) int {
	return func(s string) int {
		ws := strings.Fields(s)
		n := overhead + len(ws)
		if len(ws) > 0 && startsDear(ws[0], oneIn) {
			n++
		}
		return n
	}
}

func startsDear(w string, oneIn uint32) bool {
	h := fnv.New32a()
	h.Write([]byte(w))
	return w != "the" && h.Sum32()%oneIn == 0
}

// TestGeneratorStartWordCost: issue 22 V10, chat prompt sizing off by one
// token in 6 of 140 prompts. Without a shared prefix the nonce's first word
// starts the text; the alphabet was tested with one word a group there and
// items swapped their nonce in without a recount, so an item whose first
// nonce word costs more at the start was one token off. Every prompt as
// sent must count what the item says, with and without a prefix, for
// completion- and chat-shaped counts, without sizing items on their own.
func TestGeneratorStartWordCost(t *testing.T) {
	fixed := Spec{InputTokens: Fixed(64), OutputTokens: Fixed(4)}
	spread := Spec{InputTokens: LengthSpec{Dist: DistUniform, Min: 16, Max: 128}, OutputTokens: Fixed(4)}
	withPrefix := func(s Spec) Spec { s.PrefixTokens = 24; return s }
	tests := []struct {
		name     string
		spec     Spec
		overhead int
		maxCalls int64 // tokenizer calls a run, bound (0: not checked)
	}{
		// One length: the build's few calls, and without a prefix the
		// first digit's words tested one by one (firstCalls at most).
		{"completions", fixed, 1, 12 + firstCalls},
		{"chat", fixed, 12, 12 + firstCalls},
		{"completions, lengths spread", spread, 1, 0},
		{"chat, lengths spread", spread, 12, 0},
		{"completions with prefix", withPrefix(fixed), 1, 12},
		{"chat with prefix", withPrefix(spread), 12, 0},
	}
	const n = 140
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, oneIn := range []uint32{64, 16} {
				count := startCost(tc.overhead, oneIn)
				off, maxCalls := 0, int64(0)
				for seed := uint64(1); seed <= 6; seed++ {
					tok := &funcTok{count: count}
					g := newGen(t, tc.spec, seed)
					for _, it := range items(t, g, tok, n) {
						if got := count(it.Prompt); got != it.PromptTokens || !it.Exact() {
							off++
							t.Errorf("1 in %d, seed %d, item %d: prompt counts %d tokens, item says %d, target %d",
								oneIn, seed, it.Index, got, it.PromptTokens, it.PrefixTokens+it.InputTokens)
						}
					}
					info := g.Info()
					// Every length takes nonces without a recount, and the
					// nonce keeps its capacity: 64 words a digit, 8 words.
					if info.Resized != 0 || info.ResizedItems != 0 || !info.NonceTested ||
						info.NonceAlphabet != maxAlphabet || info.NonceWords != 8 {
						t.Errorf("1 in %d, seed %d: info %+v: want no item sized on its own, 8 nonce words of 64", oneIn, seed, info)
					}
					maxCalls = max(maxCalls, tok.calls.Load())
				}
				t.Logf("1 in %d: %d of %d prompts off; at most %d tokenizer calls a run", oneIn, off, 6*n, maxCalls)
				if tc.maxCalls > 0 && maxCalls > tc.maxCalls {
					t.Errorf("1 in %d: %d tokenizer calls a run, want at most %d", oneIn, maxCalls, tc.maxCalls)
				}
			}
		})
	}
}

// TestTracePromptsStartWordCost: a trace replay's prompts (cheap path:
// blocks of one-token words) start with the first block's first word, or
// the entry's own text without hash ids; a word that costs more at the
// start must not put the prompt off its count.
func TestTracePromptsStartWordCost(t *testing.T) {
	var lines []string
	for i := range 140 {
		ids := fmt.Sprintf("[%d, %d]", i%5, i)
		if i%4 == 0 {
			ids = "[]"
		}
		lines = append(lines, fmt.Sprintf(`{"offset_ms": %d, "input_tokens": 64, "output_tokens": 1, "hash_ids": %s}`, i, ids))
	}
	tr, err := ParseTrace("t", strings.NewReader(strings.Join(lines, "\n")), TraceOptions{BlockSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	for _, overhead := range []int{1, 12} {
		for _, oneIn := range []uint32{64, 16} {
			count := startCost(overhead, oneIn)
			off := 0
			for seed := uint64(1); seed <= 6; seed++ {
				p := NewTracePrompts(tr, 0)
				tok := &funcTok{count: count}
				for i := range tr.Entries {
					it, err := p.At(context.Background(), tok, seed, i)
					if err != nil {
						t.Fatal(err)
					}
					if got := count(it.Prompt); got != it.PromptTokens {
						off++
						t.Errorf("overhead %d, 1 in %d, seed %d, entry %d: prompt counts %d tokens, item says %d",
							overhead, oneIn, seed, i, got, it.PromptTokens)
					}
				}
				if info := p.Info(); info.Sized {
					t.Errorf("overhead %d, 1 in %d, seed %d: info %+v: want the cheap path", overhead, oneIn, seed, info)
				}
			}
			t.Logf("overhead %d, 1 in %d: %d of %d prompts off", overhead, oneIn, off, 6*len(tr.Entries))
		}
	}
}

// TestGeneratorEveryWordDearAtStart: when every word but "the" costs more
// at the text's start, no group of the alphabet test passes (a group's
// first word starts the text): the alphabet is untested and every item is
// sized on its own, so counts stay exact.
func TestGeneratorEveryWordDearAtStart(t *testing.T) {
	count := startCost(1, 1)
	tok := &funcTok{count: count}
	g := newGen(t, Spec{InputTokens: Fixed(32), OutputTokens: Fixed(1)}, 3)
	seen := map[string]bool{}
	for _, it := range items(t, g, tok, 100) {
		if got := count(it.Prompt); got != it.PromptTokens || !it.Exact() || seen[it.Prompt] {
			t.Fatalf("item %d: counts %d, says %d, exact %v, repeated %v", it.Index, got, it.PromptTokens, it.Exact(), seen[it.Prompt])
		}
		seen[it.Prompt] = true
	}
	if info := g.Info(); info.NonceTested || info.ResizedItems != 100 {
		t.Fatalf("info %+v: want an untested alphabet, every item sized on its own", info)
	}
}

// TestAlphabetOneFirstWord: a first digit of one word (only "the" passed at
// the start) leaves the other digits to carry the nonce, one word longer;
// nonces stay distinct and all start with it.
func TestAlphabetOneFirstWord(t *testing.T) {
	a := &alphabet{words: wordList[:maxAlphabet], first: []string{nonceWord}, tested: true}
	a.finish(5)
	if a.full != 9 || a.smallest() != 1 || a.capacity(a.full) < 1<<nonceBits {
		t.Fatalf("full %d words, smallest %d, capacity %d", a.full, a.smallest(), a.capacity(a.full))
	}
	seen := map[string]bool{}
	for i := range uint64(5000) {
		n := a.nonce(a.value(i, a.full), a.full)
		if seen[n] || !strings.HasPrefix(n, nonceWord+" ") || len(strings.Fields(n)) != 9 {
			t.Fatalf("index %d: nonce %q (repeated %v)", i, n, seen[n])
		}
		seen[n] = true
	}
	// Mixed radix: 16 first words and 64 others make 16 * 64^7 = 2^46
	// values in 8 words, below 2^48, so a full nonce is 9 words; two words
	// hold 1,024.
	b := &alphabet{words: wordList[:maxAlphabet], first: wordList[:16], tested: true}
	b.finish(5)
	if b.full != 9 || b.capacity(2) != 16*64 || b.smallest() != 16 {
		t.Fatalf("16 first words: full %d, capacity(2) %d, smallest %d", b.full, b.capacity(2), b.smallest())
	}
	short := map[string]bool{}
	for i := range uint64(16 * 64) {
		short[b.nonce(b.value(i, 2), 2)] = true
	}
	if len(short) != 16*64 {
		t.Fatalf("%d distinct two-word nonces, want %d", len(short), 16*64)
	}
}
