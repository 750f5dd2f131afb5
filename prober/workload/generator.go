package workload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
)

// Item is one request of a workload.
type Item struct {
	// Index is the item's sequence number (At's i).
	Index int64
	// InputTokens is the drawn input length: the prompt beyond the shared
	// prefix. OutputTokens is the drawn output length (max_tokens).
	InputTokens  int
	OutputTokens int
	// PrefixTokens is the shared prefix length of the workload (0: none).
	PrefixTokens int
	// Prompt is the text to send (completions: "prompt"; chat: the content
	// of a single user message, see Messages).
	Prompt string
	// PromptTokens is the tokenizer's count of Prompt as the server will
	// count it. It equals PrefixTokens + InputTokens unless that count
	// cannot be reached exactly (e.g. an input shorter than the chat
	// template); then it is the closest count found.
	PromptTokens int
	// Messages, when not nil, is the chat conversation to send instead of
	// one user message holding Prompt: a dataset's messages entry (Prompt
	// then holds the messages' contents joined by newlines, for scrubbing
	// and --save-prompts), or a multi-turn session's context (see
	// Conversation; Prompt is then the last user message's text). It needs
	// the chat API.
	Messages []Message
}

// Exact reports whether the prompt has exactly the drawn token count.
func (it Item) Exact() bool { return it.PromptTokens == it.PrefixTokens+it.InputTokens }

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// ChatMessages returns the item as a chat conversation: Messages when set,
// else one user message holding Prompt.
func (it Item) ChatMessages() []Message {
	if it.Messages != nil {
		return it.Messages
	}
	return []Message{{Role: "user", Content: it.Prompt}}
}

// Info describes the prompts a Generator has built with its current
// tokenizer and prefix.
type Info struct {
	// Method is the tokenizer's sizing method (MethodServerTokenize,
	// MethodCalibrated or MethodCustom); empty before the first item.
	Method string `json:"method"`
	// TokenizeCalls counts Tokenizer.Count calls (each a /tokenize request
	// for a ServerTokenizer).
	TokenizeCalls int64 `json:"tokenize_calls"`
	// Prompts is the number of base prompts in the cache now (one per
	// distinct input length; lengths evicted to stay within the budget are
	// not counted); Inexact of them could not reach their token count
	// exactly; Resized of them change their token count when the nonce
	// changes, so every item of those lengths is sized on its own, with
	// tokenizer calls per item (ResizedItems counts those items).
	Prompts      int   `json:"prompts"`
	Inexact      int   `json:"inexact"`
	Resized      int   `json:"resized"`
	ResizedItems int64 `json:"resized_items"`
	// NonceWords is the length in words of a full nonce, NonceAlphabet
	// the number of words its digits are drawn from (words the tokenizer
	// counts like "the"; 0 before the first item): without a shared
	// prefix the first digit's words are those that count like "the" at
	// the very start of the text too, and NonceAlphabet is the smaller of
	// the two sets. NonceTested is false when fewer than two words passed
	// that test: the nonce is then drawn from untested words and every
	// length is resized.
	NonceWords    int  `json:"nonce_words"`
	NonceAlphabet int  `json:"nonce_alphabet"`
	NonceTested   bool `json:"nonce_tested"`
	// DistinctPrompts is the number of distinct prompts served over the
	// generator's life (DistinctPrompts has the details); ShortNonceItems
	// counts the items served with a nonce shorter than NonceWords, because
	// their input is too short for a full one.
	DistinctPrompts int64 `json:"distinct_prompts"`
	ShortNonceItems int64 `json:"short_nonce_items"`
	// CacheBytes is the prompt cache's accounted size: the cached base
	// prompts' text (each including the shared prefix) with a fixed
	// per-entry overhead, plus the word streams and counts kept to size new
	// lengths. It is an estimate of the heap the cache holds, not of the
	// process's RSS; the one copy of the shared prefix text is not in it
	// (it is at most MaxLength tokens). CacheBudget is its limit
	// (SetCacheBudget). Evictions counts base prompts dropped to stay
	// within the budget; an evicted length is rebuilt, with tokenizer
	// calls, on its next use.
	CacheBytes  int64 `json:"cache_bytes"`
	CacheBudget int64 `json:"cache_budget"`
	Evictions   int64 `json:"evictions"`
	// OverheadTokens is what the tokenizer adds to any text (BOS, chat
	// template), measured as Count("the") - 1.
	OverheadTokens int `json:"overhead_tokens"`
	// PrefixTokens is the shared prefix's measured length (its count minus
	// the overhead; the target is Spec.PrefixTokens). PrefixGeneration
	// counts FreshPrefix calls.
	PrefixTokens     int    `json:"prefix_tokens"`
	PrefixGeneration uint64 `json:"prefix_generation"`
}

// Generator yields the items of a workload deterministically: item i is a
// function of the seed, i, the spec, the prefix generation, the prompt
// nonce (SetPromptNonce: the texts only, never the lengths) and the
// tokenizer's counts, whatever the order or concurrency of the calls.
//
// A prompt is the shared prefix, then the item's nonce, then body words.
// Body words are drawn from a fixed word list (random words from the seed,
// like vLLM's random dataset draws random token ids) and the prompt is
// sized with the Tokenizer to exactly PrefixTokens + InputTokens tokens.
// The nonce is item i's number under a seeded permutation, written as
// NonceWords words from an alphabet of words that the tokenizer counts as
// "the" (tested once per tokenizer and prefix; without a prefix the
// first word starts the text, where a word may cost a token more, so the
// first digit's words are tested there, one by one), so items whose indices
// differ by less than 2^48 never share more than the prefix and a common
// start of their nonces, whatever the tokenizer. Base prompts, sized once
// with a placeholder nonce, are cached per input length; an item swaps in
// its own nonce without a tokenizer call. A length whose count changes
// when the nonce does (checked on two nonces when it is built) is resized
// for every item instead: the same prompt layout, sized with a few
// tokenizer calls per item (Info.Resized). An input too short for a full
// nonce gets as many nonce words as it has tokens (Info.ShortNonceItems;
// such items can repeat once the shorter nonce's values run out).
//
// The cache is bounded: it holds at most CacheBudget bytes (accounted as
// Info.CacheBytes describes; DefaultCacheBudget unless SetCacheBudget says
// otherwise), evicting the least recently used base prompts first. An
// evicted length is rebuilt, identically, on its next use. A single prompt
// larger than the whole budget is served to the calls waiting for it and
// not kept.
//
// A Generator is safe for concurrent use. Its cache belongs to one
// Tokenizer value: pass the same value (a pointer) on every call; a
// different value drops the cache and starts over.
type Generator struct {
	spec    Spec
	seed    uint64
	in, out *LengthSampler
	next    atomic.Int64
	budget  atomic.Int64 // <= 0: DefaultCacheBudget

	mu    sync.Mutex
	gen   uint64
	nonce uint64 // SetPromptNonce; 0: none
	state *cacheState

	distinct   atomic.Int64 // DistinctPrompts
	shortItems atomic.Int64
	resized    atomic.Int64 // items sized on their own
}

// DefaultCacheBudget is the prompt cache budget of a Generator whose
// SetCacheBudget was never called: 64 MiB, room for about 11 million
// prompt tokens (a word of the list and its space average 5.8 bytes).
const DefaultCacheBudget = 64 << 20

// Accounting of the prompt cache (estimates of Go's heap, see
// Info.CacheBytes).
const (
	entryOverhead  = 256 // an entry, its channel, map slot and LRU element
	slotWordBytes  = 2   // one word of a body stream (an index into wordList)
	memoEntryBytes = 40  // one measured count of a body stream (map entry)
)

// NewGenerator validates spec and returns its generator, seeded by seed. It
// sends nothing: prompts are built on first use.
func NewGenerator(spec Spec, seed uint64) (*Generator, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	in, err := NewLengthSampler(spec.InputTokens)
	if err != nil {
		return nil, fmt.Errorf("input_tokens: %w", err)
	}
	out, err := NewLengthSampler(spec.OutputTokens)
	if err != nil {
		return nil, fmt.Errorf("output_tokens: %w", err)
	}
	return &Generator{spec: spec, seed: seed, in: in, out: out}, nil
}

// Spec returns the workload spec.
func (g *Generator) Spec() Spec { return g.spec }

// Seed returns the seed.
func (g *Generator) Seed() uint64 { return g.seed }

// SetPromptNonce mixes a run's prompt nonce into the prompt texts: the
// shared prefix, the body words and the items' nonces are drawn from the
// seed and n together, while the lengths (and so the token counts) stay a
// function of the seed alone. Two runs with the same seed and different
// nonces send prompts of the same lengths that share no text beyond what
// the tokenizer adds (and a chance common first word); the same seed and
// nonce send the same prompts again. 0 (the default) is no nonce: texts
// are a function of the seed, as lengths are. Cached prompts are dropped;
// it is safe to call concurrently with At (items built before and after it
// differ).
func (g *Generator) SetPromptNonce(n uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.nonce != n {
		g.nonce = n
		g.state = nil
	}
}

// PromptNonce returns the nonce SetPromptNonce set (0: none).
func (g *Generator) PromptNonce() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.nonce
}

// MixNonce returns the seed of the prompt texts of a run with seed seed
// and prompt nonce nonce: seed itself when nonce is 0, else a seed derived
// from both (what SetPromptNonce uses; a trace replay's block texts take
// it in place of the step seed).
func MixNonce(seed, nonce uint64) uint64 {
	if nonce == 0 {
		return seed
	}
	return derive(seed, tagRunNonce, nonce)
}

// SetCacheBudget sets the prompt cache's budget in bytes (accounted as
// Info.CacheBytes describes); bytes <= 0 restores DefaultCacheBudget. A
// smaller budget evicts at once. It is safe to call concurrently with At.
func (g *Generator) SetCacheBudget(bytes int) {
	g.budget.Store(int64(bytes))
	g.mu.Lock()
	st := g.state
	g.mu.Unlock()
	if st != nil {
		st.mu.Lock()
		st.trimLocked()
		st.mu.Unlock()
	}
}

// CacheBudget returns the prompt cache's budget in bytes.
func (g *Generator) CacheBudget() int {
	if b := g.budget.Load(); b > 0 {
		return int(b)
	}
	return DefaultCacheBudget
}

// Next returns the next item in sequence (At with a counter starting at 0).
func (g *Generator) Next(ctx context.Context, tok Tokenizer) (Item, error) {
	return g.At(ctx, tok, g.next.Add(1)-1)
}

// Lengths returns item i's drawn input and output lengths without building
// its prompt (no tokenizer needed).
func (g *Generator) Lengths(i int64) (input, output int) {
	return g.in.Draw(newRand(derive(g.seed, tagInput, uint64(i)))),
		g.out.Draw(newRand(derive(g.seed, tagOutput, uint64(i))))
}

// At returns item i. It calls tok only to build base prompts it has not
// cached (and, for a resized length, to size the item); errors come from
// tok (or ctx) and leave nothing cached, so a later call retries.
func (g *Generator) At(ctx context.Context, tok Tokenizer, i int64) (Item, error) {
	if tok == nil {
		return Item{}, errors.New("workload: no tokenizer")
	}
	st, err := g.ready(ctx, tok)
	if err != nil {
		return Item{}, err
	}
	inLen, outLen := g.Lengths(i)
	it := Item{Index: i, InputTokens: inLen, OutputTokens: outLen, PrefixTokens: g.spec.PrefixTokens}
	e, err := st.entry(ctx, g.spec.PrefixTokens+inLen)
	if err != nil {
		return Item{}, err
	}
	v := st.alpha.value(uint64(i), e.width)
	switch {
	case e.width == 0:
		it.Prompt, it.PromptTokens = e.text, e.count
	case e.stable:
		it.Prompt, it.PromptTokens = e.withNonce(st.alpha, v), e.count
	default:
		p, err := st.sizeItem(ctx, e, st.alpha.nonce(v, e.width))
		if err != nil {
			return Item{}, err
		}
		it.Prompt, it.PromptTokens = p.text, p.count
		g.resized.Add(1)
	}
	st.served(i, e, v)
	return it, nil
}

// DistinctPrompts returns the number of distinct prompts served so far
// (for a run's record): items served with a full nonce count once per
// index (items whose indices differ by less than 2^48 have distinct
// nonces), items with a shortened nonce once per distinct (length, nonce)
// pair, tracked up to 65,536 pairs per prefix (beyond that they are not
// counted), and a new prefix (FreshPrefix) makes every prompt new. An index
// served twice (the same item) counts once, tracked as up to 4,096 ranges
// of consecutive indices per prefix; beyond that a repeated index may
// count twice. Safe for concurrent use.
func (g *Generator) DistinctPrompts() int64 { return g.distinct.Load() }

// FreshPrefix draws a new shared prefix (the sweep's --fresh-prefix, so that
// steps do not warm each other's prefix cache). Cached prompts are dropped;
// items are rebuilt with the new prefix on their next use.
func (g *Generator) FreshPrefix() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gen++
	g.state = nil
}

// Info returns what the generator has built so far with its current
// tokenizer and prefix.
func (g *Generator) Info() Info {
	g.mu.Lock()
	st, gen := g.state, g.gen
	g.mu.Unlock()
	info := Info{PrefixGeneration: gen, CacheBudget: int64(g.CacheBudget()),
		DistinctPrompts: g.distinct.Load(), ShortNonceItems: g.shortItems.Load(), ResizedItems: g.resized.Load()}
	if st == nil {
		return info
	}
	info.Method = Method(st.tok)
	info.TokenizeCalls = st.calls.Load()
	if built(st.done, &st.err) {
		info.OverheadTokens, info.PrefixTokens = st.overhead, st.prefixTokens
		info.NonceWords, info.NonceAlphabet, info.NonceTested = st.alpha.full, st.alpha.smallest(), st.alpha.tested
	}
	st.mu.Lock()
	for el := st.lru.Front(); el != nil; el = el.Next() {
		e := el.Value.(*entry)
		info.Prompts++
		if e.count != e.target {
			info.Inexact++
		}
		if !e.stable {
			info.Resized++
		}
	}
	info.CacheBytes = st.entryBytes + st.slotBytesLocked()
	info.Evictions = st.evictions
	st.mu.Unlock()
	return info
}

// built reports whether a state's build is over (done closed) without an
// error (err, read only then).
func built(done <-chan struct{}, err *error) bool {
	select {
	case <-done:
		return *err == nil
	default:
		return false
	}
}

// ready returns the cache state for tok, building the overhead and the
// prefix first if needed.
func (g *Generator) ready(ctx context.Context, tok Tokenizer) (*cacheState, error) {
	for {
		g.mu.Lock()
		st := g.state
		build := false
		if st == nil || !sameTokenizer(st.tok, tok) {
			seed := MixNonce(g.seed, g.nonce)
			st = &cacheState{g: g, tok: tok, gen: g.gen, seed: seed, done: make(chan struct{}),
				body: newSlot(derive(seed, tagBody, 0)), entries: map[int]*entry{}}
			g.state = st
			build = true
		}
		g.mu.Unlock()
		err := buildOrWait(ctx, build, st.done, &st.err, func() error {
			err := st.buildPrefix(ctx)
			if err == nil {
				err = st.buildAlphabet(ctx)
			}
			return err
		})
		if err != nil {
			return nil, err
		}
		if st.err == nil {
			return st, nil
		}
		g.mu.Lock()
		if g.state == st {
			g.state = nil // retry on the next call
		}
		g.mu.Unlock()
		if !build && retryable(st.err) && ctx.Err() == nil {
			continue // the builder's context ended or it panicked: build again
		}
		return nil, st.err
	}
}

// sameTokenizer compares two tokenizers by identity; values of a
// non-comparable dynamic type count as different.
func sameTokenizer(a, b Tokenizer) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}

// buildOrWait is the build-once step of the prompt caches: the caller that
// made the value (builder) runs build into *err and closes done (*err
// stays errBuildPanicked if build panics); the others wait for done. It
// returns ctx's error when a wait ends with ctx, else nil: the build's
// outcome is *err.
func buildOrWait(ctx context.Context, builder bool, done chan struct{}, err *error, build func() error) error {
	if builder {
		defer close(done)
		*err = errBuildPanicked
		*err = build()
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// errBuildPanicked is what waiters see when the goroutine building a
// prompt panicked (in the Tokenizer); the builder's panic propagates.
var errBuildPanicked = errors.New("workload: building the prompt panicked")

// retryable reports whether a waiter should build again itself after
// another goroutine's build failed with err: the builder's context ended,
// or it panicked.
func retryable(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errBuildPanicked)
}

// Tags of the derived random streams; changing one changes every prompt.
const (
	tagInput uint64 = iota + 1
	tagOutput
	tagPrompt
	tagPrefix
	tagBody
	tagNonceCheck
	tagCalibration
	tagTurns
	tagFollowUp
	tagRunNonce
	tagImage     // an image of its own (images.go)
	tagImageSlot // which pooled image (images.go)
	tagImagePool // a pooled image (images.go)
)

// streamWord is the fixed second word of every workload PCG state.
const streamWord = 0x776f726b6c6f6164 // "workload"

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, streamWord)) }

// derive mixes a seed with a tag and parts into a new seed (SplitMix64
// finaliser over each word), so each purpose and index has its own stream.
func derive(seed uint64, parts ...uint64) uint64 {
	h := seed
	for _, p := range parts {
		h = splitmix(h ^ splitmix(p+0x9e3779b97f4a7c15))
	}
	return h
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
