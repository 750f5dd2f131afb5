package workload

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// funcTok is an in-process Tokenizer: count(text) plus a call counter and
// an optional failure switch.
type funcTok struct {
	count func(string) int
	calls atomic.Int64
	fail  atomic.Bool
}

func (f *funcTok) Count(ctx context.Context, text string) (int, error) {
	f.calls.Add(1)
	if f.fail.Load() {
		return 0, errors.New("tokenizer down")
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return f.count(text), nil
}

// wordCount: one token per word plus a BOS, like a llama tokenizer on
// common words.
func wordCount(s string) int { return 1 + len(strings.Fields(s)) }

// chunkCount: a BOS plus ceil(len/3) tokens per word, so long words are
// several tokens and a last word can overshoot the target.
func chunkCount(s string) int {
	n := 1
	for _, w := range strings.Fields(s) {
		n += (len(w) + 2) / 3
	}
	return n
}

// letterCount: one token per word plus one per letter 'e'; salting with
// other words of the same length usually changes the count.
func letterCount(s string) int {
	n := 0
	for _, w := range strings.Fields(s) {
		n += 1 + strings.Count(w, "e")
	}
	return n
}

// chatCount: a 12-token chat template around one token per word.
func chatCount(s string) int { return 12 + len(strings.Fields(s)) }

func newGen(t *testing.T, spec Spec, seed uint64) *Generator {
	t.Helper()
	g, err := NewGenerator(spec, seed)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func items(t *testing.T, g *Generator, tok Tokenizer, n int) []Item {
	t.Helper()
	out := make([]Item, n)
	for i := range out {
		it, err := g.At(context.Background(), tok, int64(i))
		if err != nil {
			t.Fatalf("At(%d): %v", i, err)
		}
		out[i] = it
	}
	return out
}

func TestGeneratorSizesPromptsExactly(t *testing.T) {
	spread := Spec{
		InputTokens:  LengthSpec{Dist: DistUniform, Value: 200, RangeRatio: 0.5},
		OutputTokens: LengthSpec{Dist: DistChoice, Choices: []Choice{{16, 1}, {256, 1}}},
	}
	withPrefix := spread
	withPrefix.PrefixTokens = 100
	tests := []struct {
		name      string
		spec      Spec
		count     func(string) int
		minExact  float64
		maxPrompt int // base prompts built, bound
	}{
		{name: "word tokenizer", spec: spread, count: wordCount, minExact: 1},
		{name: "word tokenizer with prefix", spec: withPrefix, count: wordCount, minExact: 1},
		{name: "multi-token words", spec: spread, count: chunkCount, minExact: 0.95},
		{name: "multi-token words with prefix", spec: withPrefix, count: chunkCount, minExact: 0.95},
		{name: "chat template", spec: spread, count: chatCount, minExact: 1},
		{name: "fixed lengths", spec: DefaultSpec(), count: chunkCount, minExact: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tok := &funcTok{count: tc.count}
			g := newGen(t, tc.spec, 7)
			its := items(t, g, tok, 300)
			exact := 0
			for _, it := range its {
				if it.PrefixTokens != tc.spec.PrefixTokens {
					t.Fatalf("item %d PrefixTokens %d", it.Index, it.PrefixTokens)
				}
				// The salted prompt as sent must count what the item says.
				if got := tc.count(it.Prompt); got != it.PromptTokens {
					t.Fatalf("item %d: prompt counts %d tokens, item says %d", it.Index, got, it.PromptTokens)
				}
				if it.Exact() {
					exact++
				} else if d := abs(it.PromptTokens - it.PrefixTokens - it.InputTokens); d > 1 {
					t.Fatalf("item %d: %d tokens for a target of %d (off by %d > 1)", it.Index, it.PromptTokens, it.PrefixTokens+it.InputTokens, d)
				}
				if it.OutputTokens < 1 {
					t.Fatalf("item %d: output %d", it.Index, it.OutputTokens)
				}
			}
			if f := float64(exact) / float64(len(its)); f < tc.minExact {
				t.Fatalf("%.2f of prompts exact, want >= %.2f", f, tc.minExact)
			}
			info := g.Info()
			if info.Method != MethodCustom || info.TokenizeCalls != tok.calls.Load() || info.Prompts == 0 {
				t.Fatalf("info %+v (tokenizer calls %d)", info, tok.calls.Load())
			}
			if tc.spec.PrefixTokens > 0 && abs(info.PrefixTokens-tc.spec.PrefixTokens) > 1 {
				t.Fatalf("prefix measured %d tokens, want %d", info.PrefixTokens, tc.spec.PrefixTokens)
			}
			t.Logf("info %+v, exact %d/%d", info, exact, len(its))
		})
	}
}

func TestGeneratorCachesTokenizerCalls(t *testing.T) {
	// A probe's steady state: one fixed length, many requests. The tokenizer
	// must be called only while building, never per request.
	tok := &funcTok{count: wordCount}
	g := newGen(t, Spec{InputTokens: Fixed(64), OutputTokens: Fixed(16), PrefixTokens: 32}, 1)
	items(t, g, tok, 10)
	built := tok.calls.Load()
	if built > 10 {
		t.Fatalf("%d tokenizer calls to build one length", built)
	}
	its := items(t, g, tok, 1000)
	if tok.calls.Load() != built {
		t.Fatalf("tokenizer called %d more times for 1000 cached items", tok.calls.Load()-built)
	}
	// Nonces: every prompt distinct, all share the prefix, all exact.
	seen := map[string]bool{}
	prefix := its[0].Prompt[:strings.Index(its[0].Prompt, " ")]
	for _, it := range its {
		if seen[it.Prompt] {
			t.Fatalf("item %d repeats an earlier prompt", it.Index)
		}
		seen[it.Prompt] = true
		if !strings.HasPrefix(it.Prompt, prefix) || !it.Exact() {
			t.Fatalf("item %d: prefix or count wrong: %d tokens", it.Index, it.PromptTokens)
		}
	}
	if info := g.Info(); info.Prompts != 1 || info.Resized != 0 || info.Inexact != 0 || info.DistinctPrompts != 1000 {
		t.Fatalf("info %+v, want one exact base prompt taking nonces, 1000 distinct prompts", info)
	}
}

func TestGeneratorSharedPrefix(t *testing.T) {
	tok := &funcTok{count: wordCount}
	spec := Spec{InputTokens: LengthSpec{Dist: DistUniform, Min: 20, Max: 40}, OutputTokens: Fixed(4), PrefixTokens: 50}
	g := newGen(t, spec, 3)
	its := items(t, g, tok, 50)
	// The prefix is the first 50 tokens = 49 words after the BOS... the
	// prefix text counts overhead + 50 = 51 with wordCount: 50 words.
	words0 := strings.Fields(its[0].Prompt)
	prefix := strings.Join(words0[:50], " ")
	for _, it := range its {
		if !strings.HasPrefix(it.Prompt, prefix+" ") {
			t.Fatalf("item %d does not start with the shared prefix", it.Index)
		}
		body := strings.Fields(it.Prompt)[50:]
		if len(body)+1 != it.InputTokens { // + BOS
			t.Fatalf("item %d: %d body words for %d input tokens", it.Index, len(body), it.InputTokens)
		}
	}
	// Bodies differ right after the prefix (salt on the first body words).
	firsts := map[string]bool{}
	for _, it := range its {
		firsts[strings.Join(strings.Fields(it.Prompt)[50:54], " ")] = true
	}
	if len(firsts) < 45 {
		t.Fatalf("only %d distinct body starts in 50 items", len(firsts))
	}
	// FreshPrefix: a new prefix, same lengths.
	g.FreshPrefix()
	again, err := g.At(context.Background(), tok, 0)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(again.Prompt, prefix) || again.InputTokens != its[0].InputTokens || !again.Exact() {
		t.Fatalf("after FreshPrefix: same prefix %v, input %d vs %d, exact %v",
			strings.HasPrefix(again.Prompt, prefix), again.InputTokens, its[0].InputTokens, again.Exact())
	}
	if info := g.Info(); info.PrefixGeneration != 1 || info.PrefixTokens != 50 {
		t.Fatalf("info after FreshPrefix %+v", info)
	}
}

func TestGeneratorDeterministic(t *testing.T) {
	spec := Spec{
		InputTokens:  LengthSpec{Dist: DistLognormal, Median: 100, Sigma: 0.5, Max: 400},
		OutputTokens: LengthSpec{Dist: DistUniform, Value: 50, RangeRatio: 0.5},
		PrefixTokens: 10,
	}
	a := items(t, newGen(t, spec, 11), &funcTok{count: chunkCount}, 40)
	// Same seed, another tokenizer instance, reverse order and concurrent.
	g := newGen(t, spec, 11)
	tok := &funcTok{count: chunkCount}
	b := make([]Item, 40)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 39 - w; i >= 0; i -= 4 {
				it, err := g.At(context.Background(), tok, int64(i))
				if err != nil {
					t.Error(err)
					return
				}
				b[i] = it
			}
		}()
	}
	wg.Wait()
	for i := range a {
		if !reflect.DeepEqual(a[i], b[i]) {
			t.Fatalf("item %d differs between runs:\n%+v\n%+v", i, a[i], b[i])
		}
	}
	c := items(t, newGen(t, spec, 12), &funcTok{count: chunkCount}, 40)
	same := 0
	for i := range a {
		if a[i].Prompt == c[i].Prompt {
			same++
		}
	}
	if same > 0 {
		t.Fatalf("seeds 11 and 12 share %d prompts", same)
	}
	// Lengths do not depend on the tokenizer, and Next follows At.
	g2 := newGen(t, spec, 11)
	for i := range 5 {
		in, out := g2.Lengths(int64(i))
		it, err := g2.Next(context.Background(), &funcTok{count: wordCount})
		if err != nil || it.Index != int64(i) || it.InputTokens != in || it.OutputTokens != out || in != a[i].InputTokens || out != a[i].OutputTokens {
			t.Fatalf("Next %d = %+v, %v; lengths (%d, %d)", i, it, err, in, out)
		}
	}
}

func TestGeneratorUnreachableTarget(t *testing.T) {
	// The chat template alone is 12 tokens: an input of 5 cannot be met.
	tok := &funcTok{count: chatCount}
	g := newGen(t, Spec{InputTokens: Fixed(5), OutputTokens: Fixed(1)}, 1)
	it, err := g.At(context.Background(), tok, 0)
	if err != nil {
		t.Fatal(err)
	}
	if it.Exact() || it.PromptTokens != 13 || chatCount(it.Prompt) != 13 {
		t.Fatalf("item %+v: want the closest count 13 (template + one word)", it)
	}
	if info := g.Info(); info.Inexact == 0 || info.Inexact != info.Prompts || info.OverheadTokens != 12 {
		t.Fatalf("info %+v", info)
	}
}

func TestGeneratorErrorsAreRetried(t *testing.T) {
	tok := &funcTok{count: wordCount}
	tok.fail.Store(true)
	g := newGen(t, DefaultSpec(), 1)
	if _, err := g.At(context.Background(), tok, 0); err == nil || !strings.Contains(err.Error(), "tokenizer down") {
		t.Fatalf("err = %v, want the tokenizer's error", err)
	}
	tok.fail.Store(false)
	it, err := g.At(context.Background(), tok, 0)
	if err != nil || !it.Exact() {
		t.Fatalf("after recovery: %+v, %v", it, err)
	}
	// Fail while building a new length: the prefix state stays, the entry
	// is retried.
	tok.fail.Store(true)
	g2 := newGen(t, Spec{InputTokens: LengthSpec{Dist: DistUniform, Min: 10, Max: 500}, OutputTokens: Fixed(1)}, 1)
	tok.fail.Store(false)
	if _, err := g2.At(context.Background(), tok, 0); err != nil {
		t.Fatal(err)
	}
	tok.fail.Store(true)
	var failed bool
	for i := int64(1); i < 20 && !failed; i++ {
		_, err := g2.At(context.Background(), tok, i)
		failed = err != nil
	}
	if !failed {
		t.Fatal("no new length needed the tokenizer in 20 items")
	}
	tok.fail.Store(false)
	for i := int64(1); i < 20; i++ {
		if _, err := g2.At(context.Background(), tok, i); err != nil {
			t.Fatalf("item %d after recovery: %v", i, err)
		}
	}
	if _, err := g.At(context.Background(), nil, 0); err == nil {
		t.Fatal("nil tokenizer accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := newGen(t, DefaultSpec(), 2).At(ctx, tok, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled ctx: %v", err)
	}
}

func TestGeneratorNewTokenizerResetsCache(t *testing.T) {
	g := newGen(t, DefaultSpec(), 1)
	a := &funcTok{count: wordCount}
	b := &funcTok{count: chatCount}
	itA, _ := g.At(context.Background(), a, 0)
	itB, err := g.At(context.Background(), b, 0)
	if err != nil {
		t.Fatal(err)
	}
	if chatCount(itB.Prompt) != itB.PromptTokens || !itB.Exact() || len(itB.Prompt) >= len(itA.Prompt) {
		t.Fatalf("prompt not rebuilt for the new tokenizer: %d tokens by it, item says %d", chatCount(itB.Prompt), itB.PromptTokens)
	}
}

func TestNewGeneratorInvalid(t *testing.T) {
	tests := []struct {
		name    string
		spec    Spec
		wantErr string
	}{
		{name: "zero input", spec: Spec{InputTokens: Fixed(0), OutputTokens: Fixed(1)},
			wantErr: "input_tokens: value must be >= 1 for dist fixed, got 0"},
		{name: "lognormal without max", spec: Spec{InputTokens: LengthSpec{Dist: DistLognormal, Median: 300, Sigma: 2.5}, OutputTokens: Fixed(1)},
			wantErr: "input_tokens: max is required for dist lognormal (an unbounded draw can exceed any context length; use the model's max_model_len)"},
		{name: "output lognormal without max", spec: Spec{InputTokens: Fixed(1), OutputTokens: LengthSpec{Dist: DistLognormal, Median: 300, Sigma: 2.5}},
			wantErr: "output_tokens: max is required for dist lognormal (an unbounded draw can exceed any context length; use the model's max_model_len)"},
		{name: "prefix over the cap", spec: Spec{InputTokens: Fixed(1), OutputTokens: Fixed(1), PrefixTokens: MaxLength + 1},
			wantErr: "prefix_tokens must be <= 1048576 (the largest length llmprobe draws), got 1048577"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewGenerator(tc.spec, 1)
			if err == nil || err.Error() != tc.wantErr {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestItemMessages(t *testing.T) {
	it := Item{Prompt: "hello there"}
	m := it.ChatMessages()
	if len(m) != 1 || m[0].Role != "user" || m[0].Content != "hello there" {
		t.Fatalf("Messages = %+v", m)
	}
}

func BenchmarkGeneratorCached(b *testing.B) {
	g, _ := NewGenerator(Spec{InputTokens: Fixed(1024), OutputTokens: Fixed(16), PrefixTokens: 64}, 1)
	tok := &funcTok{count: wordCount}
	ctx := context.Background()
	if _, err := g.At(ctx, tok, 0); err != nil {
		b.Fatal(err)
	}
	var i int64
	for b.Loop() {
		i++
		if _, err := g.At(ctx, tok, i); err != nil {
			b.Fatal(err)
		}
	}
}

func TestGeneratorTokenizerPanic(t *testing.T) {
	var n atomic.Int64
	tok := &funcTok{count: func(s string) int {
		if n.Add(1) == 3 {
			panic("tokenizer bug")
		}
		return wordCount(s)
	}}
	g := newGen(t, DefaultSpec(), 1)
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the tokenizer's panic did not reach the caller")
			}
		}()
		g.At(context.Background(), tok, 0)
	}()
	// Nothing half-built is served: the next call builds again.
	it, err := g.At(context.Background(), tok, 0)
	if err != nil || !it.Exact() || it.Prompt == "" {
		t.Fatalf("after a panic: %+v, %v", it, err)
	}
}

// blockTok blocks its first call until that call's ctx ends.
type blockTok struct {
	entered chan struct{}
	once    sync.Once
}

func (b *blockTok) Count(ctx context.Context, text string) (int, error) {
	first := false
	b.once.Do(func() { first = true; close(b.entered) })
	if first {
		<-ctx.Done()
		return 0, ctx.Err()
	}
	return wordCount(text), nil
}

func TestGeneratorWaiterRebuildsAfterBuilderCanceled(t *testing.T) {
	tok := &blockTok{entered: make(chan struct{})}
	g := newGen(t, DefaultSpec(), 1)
	ctxA, cancelA := context.WithCancel(context.Background())
	errA := make(chan error, 1)
	go func() { _, err := g.At(ctxA, tok, 0); errA <- err }()
	<-tok.entered // A is building and blocked in the tokenizer
	resB := make(chan error, 1)
	go func() {
		it, err := g.At(context.Background(), tok, 1)
		if err == nil && !it.Exact() {
			err = errors.New("inexact")
		}
		resB <- err
	}()
	cancelA()
	if err := <-errA; !errors.Is(err, context.Canceled) {
		t.Fatalf("A: %v, want context.Canceled", err)
	}
	if err := <-resB; err != nil {
		t.Fatalf("B, whose context is fine, failed: %v", err)
	}
}

// spaceCount is wordCount for single-spaced text, fast enough for the
// cache tests' thousands of long prompts: a BOS plus one token per word.
func spaceCount(s string) int { return 2 + strings.Count(s, " ") }

// cachedTextBytes sums the text of the base prompts g's cache holds now.
func cachedTextBytes(g *Generator) (n int64) {
	g.mu.Lock()
	st := g.state
	g.mu.Unlock()
	st.mu.Lock()
	defer st.mu.Unlock()
	for el := st.lru.Front(); el != nil; el = el.Next() {
		n += int64(len(el.Value.(*entry).text))
	}
	return n
}

func TestGeneratorCacheWithinBudget(t *testing.T) {
	// The audit's workload (median 300, sigma 2.5), with the max it now
	// needs: about 1,500 distinct lengths in 5,000 draws, 15 % at the max.
	spec := Spec{
		InputTokens:  LengthSpec{Dist: DistLognormal, Median: 300, Sigma: 2.5, Max: 4096},
		OutputTokens: Fixed(1),
		PrefixTokens: 16,
	}
	const draws = 5000
	const budget = 1 << 20
	tok := &funcTok{count: spaceCount}
	g := newGen(t, spec, 9)
	g.SetCacheBudget(budget)
	var peak int64
	for i := range int64(draws) {
		it, err := g.At(context.Background(), tok, i)
		if err != nil {
			t.Fatal(err)
		}
		// An input of 1 is the BOS alone, which no body word can meet.
		if !it.Exact() && it.InputTokens > 1 || spaceCount(it.Prompt) != it.PromptTokens {
			t.Fatalf("item %d: %d tokens, item says %d, target %d", i, spaceCount(it.Prompt), it.PromptTokens, it.PrefixTokens+it.InputTokens)
		}
		info := g.Info()
		if info.CacheBytes > budget {
			t.Fatalf("after item %d the cache holds %d bytes, budget %d", i, info.CacheBytes, budget)
		}
		if text := cachedTextBytes(g); info.CacheBytes < text {
			t.Fatalf("after item %d: accounted %d bytes < %d bytes of cached text", i, info.CacheBytes, text)
		}
		peak = max(peak, info.CacheBytes)
	}
	info := g.Info()
	if info.Evictions == 0 || info.CacheBudget != budget || info.Prompts == 0 {
		t.Fatalf("info %+v: want evictions within a %d-byte budget", info, budget)
	}
	// Evictions happen only over the budget: without the bound the cache
	// would have held every evicted prompt too (several MiB).
	t.Logf("info %+v, peak %d bytes", info, peak)
}

func TestGeneratorEvictionRebuildsIdentically(t *testing.T) {
	spec := Spec{
		InputTokens:  LengthSpec{Dist: DistChoice, Choices: []Choice{{100, 1}, {700, 1}, {2000, 1}, {3001, 1}}},
		OutputTokens: Fixed(1),
		PrefixTokens: 8,
	}
	const n = 60
	for _, tc := range []struct {
		name   string
		count  func(string) int
		budget int
	}{
		// 1 byte: nothing is kept, every item is built from scratch (and
		// the body streams are reset after each build).
		{name: "nothing fits", count: chunkCount, budget: 1},
		// About one base prompt of 2000 words.
		{name: "one prompt fits", count: chunkCount, budget: 16 << 10},
		{name: "one prompt fits word tokenizer", count: wordCount, budget: 16 << 10},
		{name: "unsaltable one prompt fits", count: letterCount, budget: 16 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref := items(t, newGen(t, spec, 4), &funcTok{count: tc.count}, n)
			tok := &funcTok{count: tc.count}
			g := newGen(t, spec, 4)
			g.SetCacheBudget(tc.budget)
			first := items(t, g, tok, n)
			calls := tok.calls.Load()
			again := items(t, g, tok, n) // same indices: evicted lengths are rebuilt
			for i := range n {
				if !reflect.DeepEqual(first[i], ref[i]) || !reflect.DeepEqual(again[i], ref[i]) {
					t.Fatalf("item %d differs from the unevicted generator's:\nref   %+v\nfirst %+v\nagain %+v", i, ref[i], first[i], again[i])
				}
				if got := tc.count(again[i].Prompt); got != again[i].PromptTokens {
					t.Fatalf("item %d: prompt counts %d, item says %d", i, got, again[i].PromptTokens)
				}
			}
			info := g.Info()
			if info.Evictions == 0 || tok.calls.Load() == calls || info.CacheBytes > int64(tc.budget) {
				t.Fatalf("info %+v, tokenizer calls %d then %d: want evictions, rebuild calls, bytes within %d", info, calls, tok.calls.Load(), tc.budget)
			}
		})
	}
}

func TestGeneratorSetCacheBudget(t *testing.T) {
	spec := Spec{InputTokens: LengthSpec{Dist: DistUniform, Min: 100, Max: 1000}, OutputTokens: Fixed(1)}
	g := newGen(t, spec, 2)
	if g.CacheBudget() != DefaultCacheBudget || g.Info().CacheBudget != DefaultCacheBudget {
		t.Fatalf("default budget %d, info %+v", g.CacheBudget(), g.Info())
	}
	tok := &funcTok{count: spaceCount}
	items(t, g, tok, 200)
	before := g.Info()
	if before.Evictions != 0 || before.CacheBytes < 100<<10 {
		t.Fatalf("info %+v: want about 200 prompts cached", before)
	}
	g.SetCacheBudget(32 << 10) // shrinking evicts at once
	after := g.Info()
	if after.CacheBytes > 32<<10 || after.Evictions == 0 || after.Prompts >= before.Prompts || after.CacheBudget != 32<<10 {
		t.Fatalf("after shrinking: %+v (before %+v)", after, before)
	}
	// The most recently used prompts stay: item 199's costs no call.
	calls := tok.calls.Load()
	if _, err := g.At(context.Background(), tok, 199); err != nil || tok.calls.Load() != calls {
		t.Fatalf("item 199 after shrinking: %v, %d tokenizer calls", err, tok.calls.Load()-calls)
	}
	g.SetCacheBudget(0)
	if g.CacheBudget() != DefaultCacheBudget {
		t.Fatalf("SetCacheBudget(0): budget %d, want the default", g.CacheBudget())
	}
}

func TestGeneratorEvictsLeastRecentlyUsed(t *testing.T) {
	spec := Spec{InputTokens: LengthSpec{Dist: DistChoice, Choices: []Choice{{1000, 1}, {1001, 1}, {1002, 1}}}, OutputTokens: Fixed(1)}
	g := newGen(t, spec, 3)
	idx := map[int]int64{} // an item index of each length
	for i := int64(0); len(idx) < 3; i++ {
		if in, _ := g.Lengths(i); idx[in] == 0 && i > 0 {
			idx[in] = i
		}
	}
	tok := &funcTok{count: spaceCount}
	at := func(length int) (calls int64) {
		t.Helper()
		before := tok.calls.Load()
		if _, err := g.At(context.Background(), tok, idx[length]); err != nil {
			t.Fatal(err)
		}
		return tok.calls.Load() - before
	}
	at(1000)
	at(1001)
	// Room for the two prompts and the body stream, not for a third prompt.
	g.SetCacheBudget(int(g.Info().CacheBytes) + 1024)
	if at(1000) != 0 { // a hit: 1000 becomes the most recently used
		t.Fatal("cached length 1000 called the tokenizer")
	}
	if at(1002) == 0 { // evicts 1001, the least recently used
		t.Fatal("new length 1002 built without the tokenizer")
	}
	if info := g.Info(); info.Evictions != 1 || info.Prompts != 2 {
		t.Fatalf("info %+v, want one eviction and two prompts", info)
	}
	if at(1000) != 0 {
		t.Fatal("length 1000, used after 1001, was evicted instead of it")
	}
	if at(1001) == 0 {
		t.Fatal("length 1001 was not evicted")
	}
}

func TestGeneratorConcurrentEviction(t *testing.T) {
	// The daemon's prefetcher and request goroutines call At concurrently;
	// with a budget of a few prompts, builds, hits, evictions and stream
	// resets interleave. Items must still equal the sequential ones.
	spec := Spec{
		InputTokens:  LengthSpec{Dist: DistLognormal, Median: 200, Sigma: 1.5, Max: 3000},
		OutputTokens: Fixed(1),
		PrefixTokens: 4,
	}
	const n = 400
	ref := items(t, newGen(t, spec, 6), &funcTok{count: chunkCount}, n)
	g := newGen(t, spec, 6)
	g.SetCacheBudget(24 << 10)
	tok := &funcTok{count: chunkCount}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 4 {
				it, err := g.At(context.Background(), tok, int64(i))
				if err != nil {
					t.Error(err)
					return
				}
				if !reflect.DeepEqual(it, ref[i]) {
					t.Errorf("item %d differs from the sequential one", i)
					return
				}
				if i%16 == 0 {
					_ = g.Info()
				}
			}
		}()
	}
	wg.Wait()
	if info := g.Info(); info.Evictions == 0 || info.CacheBytes > 24<<10 {
		t.Fatalf("info %+v", info)
	}
}

func BenchmarkGeneratorEvicting(b *testing.B) {
	// Every item a new length over a budget of a few prompts: the cost of a
	// build (tokenizer calls are in-process here) plus an eviction.
	g, _ := NewGenerator(Spec{InputTokens: LengthSpec{Dist: DistUniform, Min: 500, Max: 1500}, OutputTokens: Fixed(16)}, 1)
	g.SetCacheBudget(32 << 10)
	tok := &funcTok{count: spaceCount}
	ctx := context.Background()
	var i int64
	for b.Loop() {
		i++
		if _, err := g.At(ctx, tok, i); err != nil {
			b.Fatal(err)
		}
	}
}
