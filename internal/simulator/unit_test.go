package simulator

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func TestTokenizer(t *testing.T) {
	tests := []struct {
		name string
		text string
		want int
	}{
		{"empty", "", 0},
		{"spaces", "  \t\n ", 0},
		{"words", "hello there, world!", 3},
		{"unicode", "héllo 世界 🙂", 3},
		{"template", "<|user|> hi\n<|assistant|>\n", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ids := tokenize(tt.text)
			if len(ids) != tt.want {
				t.Fatalf("tokenize(%q) = %v, want %d tokens", tt.text, ids, tt.want)
			}
			for _, id := range ids {
				if id < 0 || id >= VocabSize {
					t.Errorf("id %d out of vocabulary", id)
				}
			}
			text, err := detokenize(ids)
			if err != nil {
				t.Fatal(err)
			}
			if again := tokenize(text); !slices.Equal(again, ids) {
				t.Errorf("tokenize(detokenize(%v)) = %v", ids, again)
			}
		})
	}
	for _, id := range []int{0, 1, 79, 80, 6399, 6400, VocabSize - 1} {
		if got := wordID(vocabWord(id)); got != id {
			t.Errorf("wordID(vocabWord(%d)=%q) = %d", id, vocabWord(id), got)
		}
	}
	if _, err := detokenize([]int{VocabSize}); err == nil {
		t.Error("detokenize accepted an id outside the vocabulary")
	}
}

func TestRenderChat(t *testing.T) {
	text, err := renderChat([]chatMessage{{Role: "system", Content: []byte(`"be brief"`)},
		{Role: "user", Content: []byte(`[{"type":"text","text":"a b"},{"type":"text","text":"c"}]`)},
		{Role: "assistant", Content: []byte(`null`)}}, true)
	if err != nil {
		t.Fatal(err)
	}
	want := "<|system|> be brief\n<|user|> a b c\n<|assistant|> \n<|assistant|>\n"
	if text != want {
		t.Errorf("renderChat = %q, want %q", text, want)
	}
	if n := len(tokenize(text)); n != 9 {
		t.Errorf("%d tokens, want 9", n)
	}
}

func TestBuckets125(t *testing.T) {
	if got, want := buckets125(1000), []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}; !slices.Equal(got, want) {
		t.Errorf("buckets125(1000) = %v", got)
	}
	if got := buckets125(8192); got[len(got)-1] != 5000 {
		t.Errorf("buckets125(8192) ends at %v", got[len(got)-1])
	}
}

func TestGeometric(t *testing.T) {
	if geometric(0, 0.5) != math.MaxInt || geometric(1, 0.99) != 1 {
		t.Error("degenerate probabilities")
	}
	const p, n = 0.1, 20000
	sum := 0
	for i := range n {
		k := geometric(p, uniform(hash2(42, uint64(i))))
		if k < 1 {
			t.Fatalf("geometric drew %d", k)
		}
		sum += k
	}
	if mean := float64(sum) / n; math.Abs(mean-1/p) > 0.05/p {
		t.Errorf("mean %v, want ~%v", mean, 1/p)
	}
}

func TestKVCache(t *testing.T) {
	const bs = 4
	k := newKVCache(6, bs, true)
	seq := func(prompt string) *sequence {
		ids := tokenize(prompt)
		return &sequence{prompt: ids, hashes: promptBlockHashes(ids, bs, 0)}
	}
	a := seq(strings.Repeat("a ", 8)) // 2 full blocks
	if hits := k.lookup(a); len(hits) != 0 {
		t.Fatalf("hits on an empty cache: %d", len(hits))
	}
	if !k.admit(a, nil, 8) || len(a.blocks) != 2 || k.numFree != 4 {
		t.Fatalf("admit: blocks %d free %d", len(a.blocks), k.numFree)
	}
	a.numComputed = 8
	k.register(a)
	if len(k.cached) != 2 {
		t.Fatalf("%d cached blocks, want 2", len(k.cached))
	}
	if !k.grow(a, 9) || len(a.blocks) != 3 || k.usage() != 0.5 {
		t.Fatalf("grow: blocks %d usage %v", len(a.blocks), k.usage())
	}
	if k.grow(a, 9+4*bs) {
		t.Fatal("grew beyond the pool")
	}
	if len(a.blocks) != 3 {
		t.Fatal("failed grow changed the sequence")
	}
	// A sequence with the same prompt shares a's cached blocks (only 1: the
	// last token must be computed, (8-1)/4 = 1).
	b := seq(strings.Repeat("a ", 8))
	hits := k.lookup(b)
	if len(hits) != 1 || hits[0] != a.blocks[0] {
		t.Fatalf("lookup: %d hits", len(hits))
	}
	if !k.admit(b, hits, 8) || a.blocks[0].ref != 2 || k.numFree != 2 {
		t.Fatalf("admit with hits: ref %d free %d", a.blocks[0].ref, k.numFree)
	}
	k.free(a)
	k.free(b)
	if k.numFree != 6 || k.usage() != 0 {
		t.Fatalf("after free: %d free, usage %v", k.numFree, k.usage())
	}
	// Freed blocks stay cached until evicted by new allocations.
	c := seq(strings.Repeat("a ", 9))
	if len(k.lookup(c)) != 2 {
		t.Fatal("freed blocks no longer hit")
	}
	d := seq("x")
	if !k.admit(d, nil, 6*bs) {
		t.Fatal("could not take the whole pool")
	}
	if len(k.cached) != 0 || len(k.lookup(c)) != 0 {
		t.Fatal("evicted blocks still hit")
	}
	if k.admit(seq("y"), nil, 1) {
		t.Fatal("admitted with an empty pool")
	}
}
