package workload

import (
	"context"
	"hash/fnv"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// spCount models a SentencePiece vocabulary (Llama 2 style): a BOS, then
// one piece for each word the vocabulary holds whole ("the", every word of
// one or two letters and about 70 % of the others), and pieces of two bytes
// for the rest, so replacing a word by another of the same length often
// changes the count.
func spCount(s string) int {
	n := 1
	for _, w := range strings.Fields(s) {
		n += spPieces(w)
	}
	return n
}

func spPieces(w string) int {
	h := fnv.New32a()
	h.Write([]byte(w))
	if w == "the" || len(w) <= 2 || h.Sum32()%10 < 7 {
		return 1
	}
	return (len(w) + 1) / 2
}

// mergeCount is not additive: a BOS plus one token per word, less one for
// every two adjacent words with the same first letter (merged), so a
// word's cost depends on its neighbours.
func mergeCount(s string) int {
	ws := strings.Fields(s)
	n := 1 + len(ws)
	for i := 1; i < len(ws); i++ {
		if ws[i][0] == ws[i-1][0] {
			n--
		}
	}
	return n
}

// theCount makes "the" two tokens and every other word one: no word counts
// like "the", so the nonce alphabet is untested and every item is sized on
// its own.
func theCount(s string) int {
	n := 1
	for _, w := range strings.Fields(s) {
		n++
		if w == "the" {
			n++
		}
	}
	return n
}

// prefixText returns the shared prefix text of g's current state.
func prefixText(g *Generator) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.state.prefixText
}

// afterPrefix returns the prompt without the shared prefix, and whether
// the prompt began with it.
func afterPrefix(prompt, prefix string) (string, bool) {
	if prefix == "" {
		return prompt, true
	}
	rest, ok := strings.CutPrefix(prompt, prefix+" ")
	return rest, ok
}

func TestGeneratorPromptsDistinctWhateverTheTokenizer(t *testing.T) {
	// Before nonces, the SentencePiece-like, letter and merge tokenizers
	// got a pool of 8 prompts per length: 400 items carried a few dozen
	// distinct prompts.
	spread := Spec{InputTokens: LengthSpec{Dist: DistUniform, Min: 20, Max: 200}, OutputTokens: Fixed(4)}
	fixed := Spec{InputTokens: Fixed(64), OutputTokens: Fixed(4)}
	withPrefix := func(s Spec) Spec { s.PrefixTokens = 24; return s }
	tests := []struct {
		name  string
		count func(string) int
		spec  Spec
		// additive tokenizers keep the count for any alphabet nonce: no
		// item is sized on its own; with others every item is.
		additive bool
		// short: nonce words cost two tokens here ("the" does), so short
		// inputs cannot hold a full nonce.
		short bool
	}{
		{name: "word", count: wordCount, spec: spread, additive: true},
		{name: "word with prefix", count: wordCount, spec: withPrefix(spread), additive: true},
		{name: "multi-token words", count: chunkCount, spec: withPrefix(spread), additive: true},
		{name: "chat template", count: chatCount, spec: fixed, additive: true},
		{name: "sentencepiece-like", count: spCount, spec: spread, additive: true},
		{name: "sentencepiece-like with prefix", count: spCount, spec: withPrefix(fixed), additive: true},
		{name: "letter cost", count: letterCount, spec: withPrefix(fixed), additive: true},
		{name: "letter cost no prefix", count: letterCount, spec: spread, additive: true, short: true},
		{name: "merging neighbours", count: mergeCount, spec: spread},
		{name: "merging neighbours with prefix", count: mergeCount, spec: withPrefix(fixed)},
		{name: "no word counts like the", count: theCount, spec: spread},
	}
	const n = 400
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tok := &funcTok{count: tc.count}
			g := newGen(t, tc.spec, 21)
			its := items(t, g, tok, n)
			prefix := prefixText(g)
			info := g.Info()
			bodies := map[string]int64{}
			starts := map[string]int64{} // the first NonceWords words after the prefix
			for _, it := range its {
				if got := tc.count(it.Prompt); got != it.PromptTokens || !it.Exact() {
					t.Fatalf("item %d: prompt counts %d, item says %d, target %d", it.Index, got, it.PromptTokens, it.PrefixTokens+it.InputTokens)
				}
				rest, ok := afterPrefix(it.Prompt, prefix)
				if !ok {
					t.Fatalf("item %d does not begin with the shared prefix", it.Index)
				}
				if j, dup := bodies[rest]; dup {
					t.Fatalf("items %d and %d have the same prompt beyond the prefix", j, it.Index)
				}
				bodies[rest] = it.Index
				words := strings.Fields(rest)
				start := strings.Join(words[:min(info.NonceWords, len(words))], " ")
				if j, dup := starts[start]; dup {
					t.Fatalf("items %d and %d begin alike beyond the prefix: %q", j, it.Index, start)
				}
				starts[start] = it.Index
			}
			if info.DistinctPrompts != n || g.DistinctPrompts() != n || (info.ShortNonceItems != 0) != tc.short {
				t.Fatalf("info %+v: want %d distinct prompts, short nonces %v", info, n, tc.short)
			}
			if tc.additive && (info.ResizedItems != 0 || !info.NonceTested) {
				t.Fatalf("info %+v: an additive tokenizer needs no item sized on its own", info)
			}
			if !tc.additive && info.ResizedItems != n {
				t.Fatalf("info %+v: every item should be sized on its own", info)
			}
			if untested := tc.name == "no word counts like the"; info.NonceTested == untested {
				t.Fatalf("info %+v: NonceTested %v, want %v", info, info.NonceTested, !untested)
			}
			t.Logf("info %+v, tokenizer calls %d", info, tok.calls.Load())
		})
	}
}

func TestGeneratorShortNonce(t *testing.T) {
	tests := []struct {
		name                 string
		input                int
		items                int64
		distinct, shortItems int64
		exact                bool
	}{
		// BOS + 2 words: a two-word nonce, 64^2 values, all used once.
		{name: "two words", input: 3, items: 1000, distinct: 1000, shortItems: 1000, exact: true},
		// BOS + 1 word: 64 nonces, then they repeat.
		{name: "one word", input: 2, items: 100, distinct: 64, shortItems: 100, exact: true},
		// The BOS alone: no nonce fits, every item the same (closest) prompt.
		{name: "no room", input: 1, items: 10, distinct: 1, shortItems: 10},
		// Eight tokens after the BOS: a full nonce, no body word.
		{name: "nonce only", input: 9, items: 500, distinct: 500, exact: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tok := &funcTok{count: wordCount}
			g := newGen(t, Spec{InputTokens: Fixed(tc.input), OutputTokens: Fixed(1)}, 8)
			its := items(t, g, tok, int(tc.items))
			seen := map[string]bool{}
			for _, it := range its {
				if wordCount(it.Prompt) != it.PromptTokens || it.Exact() != tc.exact {
					t.Fatalf("item %d: counts %d, says %d, exact %v", it.Index, wordCount(it.Prompt), it.PromptTokens, it.Exact())
				}
				seen[it.Prompt] = true
			}
			info := g.Info()
			if int64(len(seen)) != tc.distinct || info.DistinctPrompts != tc.distinct || info.ShortNonceItems != tc.shortItems {
				t.Fatalf("%d distinct prompts, info %+v: want %d distinct, %d short", len(seen), info, tc.distinct, tc.shortItems)
			}
		})
	}
}

func TestGeneratorDistinctPromptsCountsItemsOnce(t *testing.T) {
	tok := &funcTok{count: wordCount}
	g := newGen(t, Spec{InputTokens: Fixed(32), OutputTokens: Fixed(1), PrefixTokens: 8}, 2)
	at := func(i int64) Item {
		t.Helper()
		it, err := g.At(context.Background(), tok, i)
		if err != nil {
			t.Fatal(err)
		}
		return it
	}
	a := at(5)
	if b := at(5); !reflect.DeepEqual(b, a) || g.DistinctPrompts() != 1 {
		t.Fatalf("item 5 twice: same %v, %d distinct prompts, want 1", reflect.DeepEqual(b, a), g.DistinctPrompts())
	}
	at(6)
	at(4)
	at(1 << 41) // a sweep's index range
	if g.DistinctPrompts() != 4 {
		t.Fatalf("%d distinct prompts, want 4", g.DistinctPrompts())
	}
	g.FreshPrefix() // a new prefix: item 5 is a new prompt
	if c := at(5); c.Prompt == a.Prompt || g.DistinctPrompts() != 5 {
		t.Fatalf("after FreshPrefix: same prompt %v, %d distinct, want 5", c.Prompt == a.Prompt, g.DistinctPrompts())
	}
}

func TestServedSet(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var s servedSet
	ref := map[int64]bool{}
	for range 20000 {
		i := r.Int64N(3000) - 1500
		if got := s.add(i); got == ref[i] {
			t.Fatalf("add(%d) = %v, already served %v", i, got, ref[i])
		}
		ref[i] = true
	}
	for k, sp := range s.spans {
		if sp.lo > sp.hi || k > 0 && s.spans[k-1].hi+1 >= sp.lo {
			t.Fatalf("spans %d and %d overlap, touch or are reversed: %v %v", k-1, k, s.spans[k-1], sp)
		}
	}
	// At the bound, new isolated indices are new every time (not recorded).
	var b servedSet
	for i := range int64(maxServedSpans) {
		b.add(2 * i)
	}
	far := int64(10 * maxServedSpans)
	if !b.add(far) || !b.add(far) || b.add(0) || len(b.spans) != maxServedSpans {
		t.Fatalf("at the bound: %d spans", len(b.spans))
	}
	if !b.add(1) || b.add(2) || len(b.spans) != maxServedSpans-1 { // 1 joins [0,0] and [2,2]
		t.Fatalf("joining two spans: %d spans", len(b.spans))
	}
}

func TestNoncePermutation(t *testing.T) {
	a := &alphabet{keys: [3]uint64{derive(3, 1), derive(3, 2), derive(3, 3)}}
	for _, c := range []uint64{2, 3, 5, 63, 64, 65, 1000, 4096, 5000} {
		seen := make([]bool, c)
		for x := range c {
			v := a.permute(x, c)
			if v >= c || seen[v] {
				t.Fatalf("c=%d: permute(%d) = %d, out of range or repeated", c, x, v)
			}
			seen[v] = true
		}
	}
}
