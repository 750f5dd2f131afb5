package workload

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
)

// Trace prompts: each entry's prompt is its blocks of text, one per hash
// id, then text of its own for the input beyond them. A block's text is a
// function of the seed, the hash id and its position only, so two requests
// that share their first k hash ids share a k x BlockSize-token prefix, as
// the production requests did; a shorter last block is the first tokens of
// its id's full block.
//
// The cheap path builds no prompt with the tokenizer: blocks are drawn
// from words that the tokenizer counts as one token each (tested once per
// tokenizer, as the nonce alphabet is), so a block of L tokens is L such
// words, and the prompt's count is the overhead plus the sum of its blocks.
// A prompt's first word starts the text, where a word may cost a token
// more, so it is drawn from words tested there one by one (startWords).
// The first prompt built is counted once to confirm it. When fewer than
// minTraceWords words pass, or that check fails, every block is sized with
// the tokenizer instead (a few Count calls each), and sized blocks are kept
// in a cache bounded by a byte budget, so that shared blocks are sized once
// while they stay in it.

// Tags of the trace prompts' random streams (distinct from the generator's).
const (
	tagTraceBlock uint64 = 0x7472616365000001 + iota
	tagTraceTail
)

// minTraceWords is the fewest one-token words the cheap path draws from.
const minTraceWords = 16

// DefaultTraceCacheBudget is the byte budget of the sized-block cache (the
// tokenizer-sized path only): 32 MiB, about 10,000 blocks of 512 tokens.
const DefaultTraceCacheBudget = 32 << 20

// TracePrompts builds the prompts of a trace's entries. It is safe for
// concurrent use; like a Generator its state belongs to one Tokenizer value
// (a different one starts over).
type TracePrompts struct {
	trace  *Trace
	budget int64

	mu    sync.Mutex
	state *traceState
}

// NewTracePrompts returns the prompt builder of t. budget bounds the
// sized-block cache in bytes (<= 0: DefaultTraceCacheBudget).
func NewTracePrompts(t *Trace, budget int) *TracePrompts {
	if budget <= 0 {
		budget = DefaultTraceCacheBudget
	}
	return &TracePrompts{trace: t, budget: int64(budget)}
}

// Trace returns the trace.
func (p *TracePrompts) Trace() *Trace { return p.trace }

// TracePromptInfo describes what a TracePrompts has built.
type TracePromptInfo struct {
	// Method is the tokenizer's sizing method ("" before the first item).
	Method string `json:"method"`
	// TokenizeCalls counts Tokenizer.Count calls.
	TokenizeCalls int64 `json:"tokenize_calls"`
	// OverheadTokens is what the tokenizer adds to any text (Count("the") -
	// 1).
	OverheadTokens int `json:"overhead_tokens"`
	// Words is the number of one-token words blocks are drawn from, Sized
	// is true when blocks are sized with the tokenizer instead (too few such
	// words, or the first prompt's count disagreed).
	Words int  `json:"words"`
	Sized bool `json:"sized"`
	// CacheBytes, CacheBudget and Evictions describe the sized-block
	// cache (text bytes plus a fixed overhead per block).
	CacheBytes  int64 `json:"cache_bytes"`
	CacheBudget int64 `json:"cache_budget"`
	Evictions   int64 `json:"evictions"`
}

// Info returns what the builder has done so far.
func (p *TracePrompts) Info() TracePromptInfo {
	info := TracePromptInfo{CacheBudget: p.budget}
	p.mu.Lock()
	st := p.state
	p.mu.Unlock()
	if st == nil {
		return info
	}
	info.Method = Method(st.tok)
	info.TokenizeCalls = st.calls.Load()
	if built(st.done, &st.err) {
		info.OverheadTokens, info.Words, info.Sized = st.overhead, len(st.words), !st.fast.Load()
	}
	st.mu.Lock()
	info.CacheBytes, info.Evictions = st.bytes, st.evictions
	st.mu.Unlock()
	return info
}

// traceState is what TracePrompts built for one tokenizer.
type traceState struct {
	p     *TracePrompts
	tok   Tokenizer
	calls atomic.Int64

	done     chan struct{} // closed when overhead and words are built
	err      error
	overhead int
	words    []string
	first    []string    // the words that cost one token at the text's start too (startWords)
	fast     atomic.Bool // the cheap path holds
	checked  atomic.Bool // the first prompt was counted

	mu        sync.Mutex
	cache     map[blockID]*list.Element // of *sizedBlock
	lru       list.List
	bytes     int64
	evictions int64
}

// blockID names one block of text: a hash id at a position, cut to tokens.
type blockID struct {
	seed   uint64
	id     int64
	pos    int
	tokens int
}

type sizedBlock struct {
	key   blockID
	text  string
	count int // tokens beyond the overhead
}

const blockOverhead = 128 // accounted bytes of a cache entry beyond its text

// At returns the item of entry i of the trace, with the block texts of
// seed (a step's seed: steps with different seeds share no block).
func (p *TracePrompts) At(ctx context.Context, tok Tokenizer, seed uint64, i int) (Item, error) {
	if tok == nil {
		return Item{}, errors.New("workload: no tokenizer")
	}
	if i < 0 || i >= len(p.trace.Entries) {
		return Item{}, fmt.Errorf("workload: trace entry %d out of range [0, %d)", i, len(p.trace.Entries))
	}
	st, err := p.ready(ctx, tok)
	if err != nil {
		return Item{}, err
	}
	it, err := st.item(ctx, seed, i)
	if err != nil {
		return Item{}, err
	}
	if st.fast.Load() && !st.checked.Swap(true) {
		c, err := st.count(ctx, it.Prompt)
		if err != nil {
			st.checked.Store(false)
			return Item{}, err
		}
		if c != it.PromptTokens {
			st.fast.Store(false) // not additive: size every block
			return st.item(ctx, seed, i)
		}
	}
	return it, nil
}

// ready returns the state for tok, building the overhead and the words
// first; a failed build is retried on the next call.
func (p *TracePrompts) ready(ctx context.Context, tok Tokenizer) (*traceState, error) {
	p.mu.Lock()
	st := p.state
	build := st == nil || !sameTokenizer(st.tok, tok)
	if build {
		st = &traceState{p: p, tok: tok, done: make(chan struct{}), cache: map[blockID]*list.Element{}}
		p.state = st
	}
	p.mu.Unlock()
	if err := buildOrWait(ctx, build, st.done, &st.err, func() error { return st.build(ctx) }); err != nil {
		return nil, err
	}
	if st.err != nil {
		p.mu.Lock()
		if p.state == st {
			p.state = nil
		}
		p.mu.Unlock()
		return nil, st.err
	}
	return st, nil
}

func (st *traceState) count(ctx context.Context, text string) (int, error) {
	return sizeCount(ctx, st.tok, &st.calls, "trace prompt", text)
}

// build measures the overhead and tests the word list for one-token words,
// as buildAlphabet does (groups that count as as many copies of "the").
func (st *traceState) build(ctx context.Context) error {
	one, err := st.count(ctx, nonceWord)
	if err != nil {
		return err
	}
	st.overhead = max(0, one-1)
	st.words, err = groupSearch(ctx, func(ctx context.Context, words []string) (int, error) {
		return st.count(ctx, strings.Join(words, " "))
	}, func(c, want, g int) bool { return c == want && want == st.overhead+g })
	if err != nil {
		return err
	}
	if len(st.words) < minTraceWords {
		return nil
	}
	// A prompt's first word starts the text, where a word may cost more.
	first, pair, err := startWords(ctx, st.count)
	if err != nil {
		return err
	}
	if pair == st.overhead+2 {
		st.first = first
	}
	st.fast.Store(len(st.first) > 0)
	return nil
}

// item builds entry i's prompt.
func (st *traceState) item(ctx context.Context, seed uint64, i int) (Item, error) {
	t := st.p.trace
	e := t.Entries[i]
	it := Item{Index: int64(i), InputTokens: e.InputTokens, OutputTokens: e.OutputTokens}
	body := max(1, e.InputTokens-st.overhead)
	var b strings.Builder
	total := st.overhead
	add := func(text string, count int) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(text)
		total += count
	}
	bs := t.BlockSize
	for j, id := range e.HashIDs {
		n := min(bs, body-j*bs)
		if n <= 0 {
			break
		}
		text, c, err := st.block(ctx, blockID{seed: seed, id: id, pos: j, tokens: n})
		if err != nil {
			return Item{}, err
		}
		add(text, c)
	}
	if rest := body - len(e.HashIDs)*bs; rest > 0 {
		// The input beyond the hash ids: text of this request's own.
		text, c, err := st.text(ctx, derive(seed, tagTraceTail, uint64(i)), rest, len(e.HashIDs) == 0)
		if err != nil {
			return Item{}, err
		}
		add(text, c)
	}
	it.Prompt, it.PromptTokens = b.String(), total
	return it, nil
}

// block returns the text of block k and its tokens (beyond the overhead).
func (st *traceState) block(ctx context.Context, k blockID) (string, int, error) {
	seed := derive(k.seed, tagTraceBlock, uint64(k.id), uint64(k.pos))
	if st.fast.Load() {
		return st.text(ctx, seed, k.tokens, k.pos == 0)
	}
	st.mu.Lock()
	if el, ok := st.cache[k]; ok {
		st.lru.MoveToFront(el)
		sb := el.Value.(*sizedBlock)
		st.mu.Unlock()
		return sb.text, sb.count, nil
	}
	st.mu.Unlock()
	text, c, err := st.text(ctx, seed, k.tokens, k.pos == 0)
	if err != nil {
		return "", 0, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if _, ok := st.cache[k]; !ok { // another call may have built it meanwhile
		st.cache[k] = st.lru.PushFront(&sizedBlock{key: k, text: text, count: c})
		st.bytes += int64(len(text)) + blockOverhead
		for st.bytes > st.p.budget && st.lru.Len() > 0 {
			sb := st.lru.Remove(st.lru.Back()).(*sizedBlock)
			delete(st.cache, sb.key)
			st.bytes -= int64(len(sb.text)) + blockOverhead
			st.evictions++
		}
	}
	return text, c, nil
}

// text returns text of n tokens (beyond the overhead) drawn from the
// stream seed: n one-token words on the cheap path (the first from
// st.first when the text starts the prompt), else words of the list sized
// with the tokenizer (the closest count found). A text of fewer tokens
// from the same seed is a prefix of it (cheap path) or starts like it.
func (st *traceState) text(ctx context.Context, seed uint64, n int, start bool) (string, int, error) {
	r := newRand(seed)
	if st.fast.Load() {
		var b strings.Builder
		b.Grow(n * 4)
		for j := range n {
			set := st.words
			if j > 0 {
				b.WriteByte(' ')
			} else if start {
				set = st.first
			}
			b.WriteString(set[r.IntN(len(set))])
		}
		return b.String(), n, nil
	}
	var words []string
	take := func(k int) []string {
		for len(words) < k {
			words = append(words, wordList[r.IntN(len(wordList))])
		}
		return words[:k]
	}
	memo := map[int]int{}
	f := func(k int) (int, error) {
		if c, ok := memo[k]; ok {
			return c, nil
		}
		c, err := st.count(ctx, strings.Join(take(k), " "))
		if err != nil {
			return 0, err
		}
		memo[k] = c
		return c, nil
	}
	target := st.overhead + n
	hi, err := search(target, n, 4*n+64, st.overhead, f)
	if err != nil {
		return "", 0, err
	}
	k := hi
	c, _ := f(hi)
	if c != target && hi > 1 {
		if cl, err := f(hi - 1); err == nil && abs(cl-target) <= abs(c-target) {
			k, c = hi-1, cl
		}
	}
	return strings.Join(take(k), " "), max(0, c-st.overhead), nil
}
