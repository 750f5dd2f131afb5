package workload

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
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
}

// Exact reports whether the prompt has exactly the drawn token count.
func (it Item) Exact() bool { return it.PromptTokens == it.PrefixTokens+it.InputTokens }

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Messages returns the item as a chat conversation: one user message holding
// Prompt.
func (it Item) Messages() []Message { return []Message{{Role: "user", Content: it.Prompt}} }

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
	// distinct input length, more when a length cannot be salted; lengths
	// evicted to stay within the budget are not counted); Inexact of them
	// could not reach their token count exactly; Unsalted of them change
	// the token count when salted, so they are sent verbatim (from a pool
	// of 8 per length) and may hit the server's prefix cache.
	Prompts  int `json:"prompts"`
	Inexact  int `json:"inexact"`
	Unsalted int `json:"unsalted"`
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
// function of the seed, i, the spec, the prefix generation and the
// tokenizer's counts, whatever the order or concurrency of the calls.
//
// Prompts are built from a fixed word list (random words drawn from the
// seed, like vLLM's random dataset draws random token ids) and sized with
// the Tokenizer to exactly PrefixTokens + InputTokens tokens. Base prompts
// are cached per input length, and each item gets a random salt (its first
// few body words replaced by other words of the same length, which keeps the
// count), so a probe at a steady rate calls the tokenizer only for lengths it
// has not seen yet, and no two items share more than the intended prefix.
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
	state *cacheState
}

// saltWords is how many leading body words an item's salt may replace.
const saltWords = 4

// unsaltedPool is the number of distinct base prompts per length used when
// salting would change a prompt's token count.
const unsaltedPool = 8

// DefaultCacheBudget is the prompt cache budget of a Generator whose
// SetCacheBudget was never called: 64 MiB, room for about 11 million
// prompt tokens (a word of the list and its space average 5.8 bytes).
const DefaultCacheBudget = 64 << 20

// Accounting of the prompt cache (estimates of Go's heap, see
// Info.CacheBytes).
const (
	entryOverhead  = 256 // an entry, its channel, map slot and LRU element
	spanBytes      = 16  // one salt span
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
// cached; errors come from tok (or ctx) and leave nothing cached, so a later
// call retries.
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
	target := g.spec.PrefixTokens + inLen
	r := newRand(derive(g.seed, tagPrompt, uint64(i)))
	e, err := st.entry(ctx, target, 0)
	if err != nil {
		return Item{}, err
	}
	if e.saltable {
		it.Prompt = salt(e, r)
	} else {
		if slot := r.IntN(unsaltedPool); slot != 0 {
			if e, err = st.entry(ctx, target, slot); err != nil {
				return Item{}, err
			}
		}
		it.Prompt = e.text
	}
	it.PromptTokens = e.count
	return it, nil
}

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
	info := Info{PrefixGeneration: gen, CacheBudget: int64(g.CacheBudget())}
	if st == nil {
		return info
	}
	info.Method = Method(st.tok)
	info.TokenizeCalls = st.calls.Load()
	select {
	case <-st.done:
		if st.err == nil {
			info.OverheadTokens, info.PrefixTokens = st.overhead, st.prefixTokens
		}
	default:
	}
	st.mu.Lock()
	for el := st.lru.Front(); el != nil; el = el.Next() {
		e := el.Value.(*entry)
		info.Prompts++
		if e.count != e.target {
			info.Inexact++
		}
		if !e.saltable {
			info.Unsalted++
		}
	}
	info.CacheBytes = st.entryBytes + st.slotBytesLocked()
	info.Evictions = st.evictions
	st.mu.Unlock()
	return info
}

// ready returns the cache state for tok, building the overhead and the
// prefix first if needed.
func (g *Generator) ready(ctx context.Context, tok Tokenizer) (*cacheState, error) {
	for {
		g.mu.Lock()
		st := g.state
		build := false
		if st == nil || !sameTokenizer(st.tok, tok) {
			st = &cacheState{g: g, tok: tok, gen: g.gen, done: make(chan struct{}),
				slots: map[int]*slot{}, entries: map[entryKey]*entry{}}
			g.state = st
			build = true
		}
		g.mu.Unlock()
		if build {
			func() {
				defer close(st.done)
				st.err = errBuildPanicked // stays if buildPrefix panics
				st.err = st.buildPrefix(ctx)
			}()
		} else {
			select {
			case <-st.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
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

// errBuildPanicked is what waiters see when the goroutine building a
// prompt panicked (in the Tokenizer); the builder's panic propagates.
var errBuildPanicked = errors.New("workload: building the prompt panicked")

// retryable reports whether a waiter should build again itself after
// another goroutine's build failed with err: the builder's context ended,
// or it panicked.
func retryable(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errBuildPanicked)
}

// cacheState is everything built for one (tokenizer, prefix generation).
type cacheState struct {
	g     *Generator
	tok   Tokenizer
	gen   uint64
	calls atomic.Int64

	done         chan struct{} // closed when overhead and prefix are built
	err          error
	overhead     int
	prefixText   string // "" without a prefix
	prefixTokens int

	mu         sync.Mutex
	slots      map[int]*slot
	entries    map[entryKey]*entry // built and building
	lru        list.List           // of the built *entry, most recently used first
	entryBytes int64               // accounted bytes of the entries in lru
	evictions  int64
	perWord    float64 // tokens per word seen so far (first guesses only)
}

// insertLocked adds the built entry e to the LRU and evicts down to the
// budget (possibly e itself, when it alone exceeds it). st.mu is held.
func (st *cacheState) insertLocked(e *entry) {
	e.size = entryOverhead + int64(len(e.text)) + spanBytes*int64(cap(e.spans))
	st.entryBytes += e.size
	e.elem = st.lru.PushFront(e)
	st.trimLocked()
}

// slotBytesLocked returns the accounted bytes of the body streams. st.mu
// is held.
func (st *cacheState) slotBytesLocked() int64 {
	var n int64
	for _, sl := range st.slots {
		n += sl.bytes.Load()
	}
	return n
}

// trimLocked brings the accounted bytes within the budget: body streams
// that hold more than a quarter of it are reset first (they are
// regenerated from their seed; only their measured counts cost tokenizer
// calls to learn again), then base prompts are evicted, least recently
// used first. A stream busy building a prompt is left alone, so a build in
// progress may exceed the budget until the next trim. st.mu is held.
func (st *cacheState) trimLocked() {
	budget := int64(st.g.CacheBudget())
	slots := st.slotBytesLocked()
	if st.entryBytes+slots <= budget {
		return
	}
	if slots > budget/4 {
		for _, sl := range st.slots {
			if sl.bytes.Load() > 0 && sl.mu.TryLock() { // never wait for sl.mu under st.mu
				slots -= sl.reset()
				sl.mu.Unlock()
			}
		}
	}
	for st.entryBytes+slots > budget {
		back := st.lru.Back()
		if back == nil {
			return
		}
		e := st.lru.Remove(back).(*entry)
		e.elem = nil
		delete(st.entries, e.key)
		st.entryBytes -= e.size
		st.evictions++
	}
}

// guess returns the first probe for a prompt that must add tokens beyond
// base, from the tokens per word seen so far.
func (st *cacheState) guess(tokens int) int {
	st.mu.Lock()
	pw := st.perWord
	st.mu.Unlock()
	if pw <= 0 {
		pw = 1
	}
	return int(float64(tokens)/pw + 0.5)
}

// learn records that k words added tokens beyond the base.
func (st *cacheState) learn(tokens, k int) {
	if tokens > 0 && k > 0 {
		st.mu.Lock()
		st.perWord = float64(tokens) / float64(k)
		st.mu.Unlock()
	}
}

func (st *cacheState) count(ctx context.Context, text string) (int, error) {
	st.calls.Add(1)
	n, err := st.tok.Count(ctx, text)
	if err != nil {
		return 0, fmt.Errorf("workload: sizing prompt: %w", err)
	}
	return n, nil
}

func (st *cacheState) buildPrefix(ctx context.Context) error {
	one, err := st.count(ctx, "the")
	if err != nil {
		return err
	}
	st.overhead = max(0, one-1)
	want := st.g.spec.PrefixTokens
	if want == 0 {
		return nil
	}
	r := newRand(derive(st.g.seed, tagPrefix, st.gen))
	var words []string
	text := func(k int) string {
		for len(words) < k {
			words = append(words, wordList[r.IntN(len(wordList))])
		}
		return strings.Join(words[:k], " ")
	}
	memo := map[int]int{}
	f := func(k int) (int, error) {
		if c, ok := memo[k]; ok {
			return c, nil
		}
		c, err := st.count(ctx, text(k))
		if err != nil {
			return 0, err
		}
		memo[k] = c
		return c, nil
	}
	target := st.overhead + want
	hi, err := search(target, st.guess(want), 4*want+64, st.overhead, f)
	if err != nil {
		return err
	}
	k := hi
	if c, _ := f(hi); c > target && hi > 1 {
		if cl, _ := f(hi - 1); target-cl < c-target {
			k = hi - 1 // closer from below
		}
	}
	c, _ := f(k)
	st.prefixText, st.prefixTokens = text(k), c-st.overhead
	st.learn(st.prefixTokens, k)
	return nil
}

// search returns the smallest k in [1, maxK] with f(k) >= target (maxK when
// none), assuming f is non-decreasing, with f(0) = base. guess is the first
// probe; later probes extrapolate or interpolate linearly (every third one
// bisects, to bound the worst case), and an exact hit is confirmed by
// probing one word fewer, so a near-linear f takes two or three calls. The
// result does not depend on guess, only the number of calls does.
func search(target, guess, maxK, base int, f func(int) (int, error)) (int, error) {
	lo, clo := 0, base // f(lo) < target (lo = 0 by assumption)
	hi, chi := -1, 0   // smallest known k with f(k) >= target
	k := min(max(guess, 1), maxK)
	for step := 0; ; step++ {
		c, err := f(k)
		if err != nil {
			return 0, err
		}
		if c >= target {
			hi, chi = k, c
		} else {
			lo, clo = k, c
		}
		switch {
		case hi == lo+1:
			return hi, nil
		case hi < 0:
			if k == maxK {
				return maxK, nil
			}
			perWord := float64(c-base) / float64(k)
			if perWord <= 0 {
				k = min(2*k, maxK)
				continue
			}
			k = min(maxK, max(k+1, k+int(float64(target-c)/perWord+0.5)))
		case chi == target && k == hi:
			k = hi - 1
		case step%3 == 2:
			k = (lo + hi) / 2
		default:
			k = lo + int(float64(target-clo)*float64(hi-lo)/float64(max(chi-clo, 1))+0.5)
			k = min(max(k, lo+1), hi-1)
		}
	}
}

type entryKey struct{ target, slot int }

// entry is one base prompt. Its fields are immutable once done is closed.
type entry struct {
	done     chan struct{}
	err      error
	key      entryKey
	target   int
	text     string
	count    int
	spans    [][2]int // byte ranges of the words a salt may replace
	saltable bool

	// Under cacheState.mu: the LRU element (nil unless built and cached)
	// and the accounted size.
	elem *list.Element
	size int64
}

// slot is one deterministic stream of body words and the counts measured on
// its prefixes. A reset drops both; the stream is drawn again, identically,
// from its seed.
type slot struct {
	mu    sync.Mutex
	seed  uint64
	r     *rand.Rand
	words []uint16 // indices into wordList
	memo  map[int]int
	bytes atomic.Int64 // accounted size, updated under mu
}

func newSlot(seed uint64) *slot {
	return &slot{seed: seed, r: newRand(seed), memo: map[int]int{}}
}

func (s *slot) ensure(k int) {
	for len(s.words) < k {
		s.words = append(s.words, uint16(s.r.IntN(len(wordList))))
	}
}

// firstWords returns the first k words (k <= len(s.words)).
func (s *slot) firstWords(k int) []string {
	out := make([]string, k)
	for i, w := range s.words[:k] {
		out[i] = wordList[w]
	}
	return out
}

// account updates the slot's accounted size. s.mu is held.
func (s *slot) account() {
	s.bytes.Store(slotWordBytes*int64(cap(s.words)) + memoEntryBytes*int64(len(s.memo)))
}

// reset drops the words and counts and returns the bytes freed. s.mu is
// held.
func (s *slot) reset() int64 {
	freed := s.bytes.Load()
	s.r, s.words, s.memo = newRand(s.seed), nil, map[int]int{}
	s.account()
	return freed
}

// entry returns the base prompt of target tokens from body slot n.
func (st *cacheState) entry(ctx context.Context, target, n int) (*entry, error) {
	key := entryKey{target, n}
	for {
		st.mu.Lock()
		e, ok := st.entries[key]
		if !ok {
			e = &entry{done: make(chan struct{}), key: key, target: target}
			st.entries[key] = e
		} else if e.elem != nil {
			st.lru.MoveToFront(e.elem)
		}
		sl := st.slots[n]
		if sl == nil {
			sl = newSlot(derive(st.g.seed, tagBody, uint64(n)))
			st.slots[n] = sl
		}
		st.mu.Unlock()
		if !ok {
			func() {
				defer close(e.done)
				e.err = errBuildPanicked // stays if build panics
				e.err = st.build(ctx, e, sl)
			}()
		} else {
			select {
			case <-e.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if e.err == nil {
			if !ok {
				st.mu.Lock()
				st.insertLocked(e)
				st.mu.Unlock()
			}
			return e, nil
		}
		st.mu.Lock()
		if st.entries[key] == e {
			delete(st.entries, key)
		}
		st.mu.Unlock()
		if ok && retryable(e.err) && ctx.Err() == nil {
			continue
		}
		return nil, e.err
	}
}

// build sizes entry e from slot sl: the smallest number of body words whose
// prompt reaches the target; when the last word overshoots, a short filler
// word in its place; then whether salting keeps the count.
func (st *cacheState) build(ctx context.Context, e *entry, sl *slot) error {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	defer sl.account()
	sep := ""
	if st.prefixText != "" {
		sep = " "
	}
	compose := func(words []string) (string, [][2]int) {
		var b strings.Builder
		b.WriteString(st.prefixText)
		b.WriteString(sep)
		var spans [][2]int
		for i, w := range words {
			if i > 0 {
				b.WriteByte(' ')
			}
			if i < saltWords && i < len(words)-1 {
				spans = append(spans, [2]int{b.Len(), b.Len() + len(w)})
			}
			b.WriteString(w)
		}
		return b.String(), spans
	}
	f := func(k int) (int, error) {
		if c, ok := sl.memo[k]; ok {
			return c, nil
		}
		sl.ensure(k)
		text, _ := compose(sl.firstWords(k))
		c, err := st.count(ctx, text)
		if err != nil {
			return 0, err
		}
		sl.memo[k] = c
		return c, nil
	}
	base := st.overhead + st.prefixTokens
	hi, err := search(e.target, st.guess(e.target-base), 4*e.target+64, base, f)
	if err != nil {
		return err
	}
	st.learn(sl.memo[hi]-base, hi)
	sl.ensure(hi)
	best := sl.firstWords(hi)
	bestCount, _ := f(hi)
	if bestCount != e.target {
		// Candidates: one word fewer (if any), or a filler in place of the
		// last word.
		consider := func(words []string, c int) {
			d, bd := abs(c-e.target), abs(bestCount-e.target)
			if d < bd || d == bd && c < bestCount {
				best, bestCount = words, c
			}
		}
		if hi > 1 {
			c, err := f(hi - 1)
			if err != nil {
				return err
			}
			consider(sl.firstWords(hi-1), c)
		}
		// gap: tokens still missing without the last word (>= 1 when
		// f is non-decreasing); try gap copies of each filler word.
		gap := 1
		if hi > 1 {
			gap = max(1, e.target-sl.memo[hi-1])
		}
		for _, fw := range fillerWords {
			if bestCount == e.target || gap > 8 {
				break
			}
			words := sl.firstWords(hi - 1)
			for range gap {
				words = append(words, fw)
			}
			text, _ := compose(words)
			c, err := st.count(ctx, text)
			if err != nil {
				return err
			}
			consider(words, c)
		}
	}
	e.text, e.spans = compose(best)
	e.count = bestCount
	// Salting keeps the count if two salted variants count the same.
	e.saltable = len(e.spans) > 0
	check := newRand(derive(st.g.seed, tagSaltCheck, uint64(e.target)))
	for range 2 {
		if !e.saltable {
			break
		}
		c, err := st.count(ctx, salt(e, check))
		if err != nil {
			return err
		}
		e.saltable = c == e.count
	}
	return nil
}

// salt returns e.text with each salt span replaced by a random word of the
// same length.
func salt(e *entry, r *rand.Rand) string {
	b := []byte(e.text)
	for _, sp := range e.spans {
		ws := wordsByLen[sp[1]-sp[0]]
		if len(ws) < 2 {
			continue
		}
		copy(b[sp[0]:sp[1]], ws[r.IntN(len(ws))])
	}
	return string(b)
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// Tags of the derived random streams; changing one changes every prompt.
const (
	tagInput uint64 = iota + 1
	tagOutput
	tagPrompt
	tagPrefix
	tagBody
	tagSaltCheck
	tagCalibration
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
