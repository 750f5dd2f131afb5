package workload

import (
	"container/list"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
)

// cacheState is everything built for one (tokenizer, prefix generation).
type cacheState struct {
	g     *Generator
	tok   Tokenizer
	gen   uint64
	seed  uint64 // of the texts: MixNonce(the generator's seed, its nonce)
	calls atomic.Int64

	done         chan struct{} // closed when overhead, prefix and alphabet are built
	err          error
	overhead     int
	prefixText   string // "" without a prefix
	prefixTokens int
	alpha        *alphabet

	body *slot // the body word stream; its own lock

	mu         sync.Mutex
	entries    map[int]*entry // by target; built and building
	lru        list.List      // of the built *entry, most recently used first
	entryBytes int64          // accounted bytes of the entries in lru
	evictions  int64
	perWord    float64 // tokens per word seen so far (first guesses only)
	seen       servedSet
}

// insertLocked adds the built entry e to the LRU and evicts down to the
// budget (possibly e itself, when it alone exceeds it). st.mu is held.
func (st *cacheState) insertLocked(e *entry) {
	e.size = entryOverhead + int64(len(e.text))
	st.entryBytes += e.size
	e.elem = st.lru.PushFront(e)
	st.trimLocked()
}

// slotBytesLocked returns the accounted bytes of the body stream.
func (st *cacheState) slotBytesLocked() int64 { return st.body.bytes.Load() }

// trimLocked brings the accounted bytes within the budget: a body stream
// that holds more than a quarter of it is reset first (it is regenerated
// from its seed; only its measured counts cost tokenizer calls to learn
// again), then base prompts are evicted, least recently used first. A
// stream busy building a prompt is left alone, so a build in progress may
// exceed the budget until the next trim. st.mu is held.
func (st *cacheState) trimLocked() {
	budget := int64(st.g.CacheBudget())
	slots := st.slotBytesLocked()
	if st.entryBytes+slots <= budget {
		return
	}
	if sl := st.body; slots > budget/4 && sl.mu.TryLock() { // never wait for sl.mu under st.mu
		slots -= sl.reset()
		sl.mu.Unlock()
	}
	for st.entryBytes+slots > budget {
		back := st.lru.Back()
		if back == nil {
			return
		}
		e := st.lru.Remove(back).(*entry)
		e.elem = nil
		delete(st.entries, e.target)
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
	return sizeCount(ctx, st.tok, &st.calls, "prompt", text)
}

// sizeCount counts text's tokens with tok, adding the call to calls; its
// error names what was being sized.
func sizeCount(ctx context.Context, tok Tokenizer, calls *atomic.Int64, what, text string) (int, error) {
	calls.Add(1)
	n, err := tok.Count(ctx, text)
	if err != nil {
		return 0, fmt.Errorf("workload: sizing %s: %w", what, err)
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
	r := newRand(derive(st.seed, tagPrefix, st.gen))
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

// entry is one base prompt: the prefix, a placeholder nonce of width words
// at text[nonceAt:nonceEnd], and the body. Its fields are immutable once
// done is closed.
type entry struct {
	done              chan struct{}
	err               error
	target            int
	text              string
	count             int
	width             int // nonce words (0: none fits)
	nonceAt, nonceEnd int
	words             int  // body words
	stable            bool // a nonce keeps the count: items swap it in

	// Under cacheState.mu: the LRU element (nil unless built and cached)
	// and the accounted size.
	elem *list.Element
	size int64
}

// withNonce returns e's text with the nonce of value v in place of the
// placeholder.
func (e *entry) withNonce(a *alphabet, v uint64) string {
	var b strings.Builder
	b.Grow(len(e.text) - (e.nonceEnd - e.nonceAt) + e.width*a.maxLen)
	b.WriteString(e.text[:e.nonceAt])
	a.writeNonce(&b, v, e.width)
	b.WriteString(e.text[e.nonceEnd:])
	return b.String()
}

// memoKey is a measured count of the body stream: the first words body
// words after the prefix and a placeholder nonce of nonce words.
type memoKey struct{ words, nonce int }

// slot is one deterministic stream of body words and the counts measured on
// its prefixes. A reset drops both; the stream is drawn again, identically,
// from its seed.
type slot struct {
	mu    sync.Mutex
	seed  uint64
	r     *rand.Rand
	words []uint16 // indices into wordList
	memo  map[memoKey]int
	bytes atomic.Int64 // accounted size, updated under mu
}

func newSlot(seed uint64) *slot {
	return &slot{seed: seed, r: newRand(seed), memo: map[memoKey]int{}}
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
	s.r, s.words, s.memo = newRand(s.seed), nil, map[memoKey]int{}
	s.account()
	return freed
}

// entry returns the base prompt of target tokens.
func (st *cacheState) entry(ctx context.Context, target int) (*entry, error) {
	for {
		st.mu.Lock()
		e, ok := st.entries[target]
		if !ok {
			e = &entry{done: make(chan struct{}), target: target}
			st.entries[target] = e
		} else if e.elem != nil {
			st.lru.MoveToFront(e.elem)
		}
		st.mu.Unlock()
		if err := buildOrWait(ctx, !ok, e.done, &e.err, func() error { return st.build(ctx, e) }); err != nil {
			return nil, err
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
		if st.entries[target] == e {
			delete(st.entries, target)
		}
		st.mu.Unlock()
		if ok && retryable(e.err) && ctx.Err() == nil {
			continue
		}
		return nil, e.err
	}
}

// build sizes entry e from the body stream with a placeholder nonce as wide
// as the input allows (one word per token beyond the prefix, at most a
// full nonce), then checks whether two other nonces keep the count.
func (st *cacheState) build(ctx context.Context, e *entry) error {
	sl := st.body
	sl.mu.Lock()
	defer sl.mu.Unlock()
	defer sl.account()
	words := func(k int) []string { sl.ensure(k); return sl.firstWords(k) }
	width := min(max(e.target-st.overhead-st.prefixTokens, 0), st.alpha.full)
	p, err := st.size(ctx, sizing{target: e.target, width: width, narrow: true,
		nonce: st.alpha.placeholder(width), words: words, memo: sl.memo, guess: -1})
	if err != nil {
		return err
	}
	e.text, e.count, e.width, e.nonceAt, e.nonceEnd, e.words = p.text, p.count, p.width, p.nonceAt, p.nonceEnd, p.words
	e.stable = e.width == 0 || st.alpha.tested
	check := newRand(derive(st.seed, tagNonceCheck, uint64(e.target)))
	for range 2 {
		if !e.stable || e.width == 0 {
			break
		}
		c, err := st.count(ctx, e.withNonce(st.alpha, check.Uint64()%st.alpha.capacity(e.width)))
		if err != nil {
			return err
		}
		e.stable = c == e.count
	}
	return nil
}

// sizeItem sizes one item of the resized entry e around its own nonce,
// with e's layout and body stream; counts are measured afresh (they are
// not cached), the body stream is locked only to read words.
func (st *cacheState) sizeItem(ctx context.Context, e *entry, nonce string) (sized, error) {
	sl := st.body
	words := func(k int) []string {
		sl.mu.Lock()
		defer sl.mu.Unlock()
		sl.ensure(k)
		defer sl.account()
		return sl.firstWords(k)
	}
	return st.size(ctx, sizing{target: e.target, width: e.width, nonce: nonce,
		words: words, memo: map[memoKey]int{}, guess: e.words})
}

// sizing is what size needs to build one prompt.
type sizing struct {
	target int
	width  int    // nonce words
	narrow bool   // narrow the nonce while it alone exceeds the target
	nonce  string // width words
	words  func(k int) []string
	memo   map[memoKey]int // counts by (body words, width)
	guess  int             // first body-word probe; < 0: from the tokens per word seen
}

// sized is a prompt built by size.
type sized struct {
	text              string
	count             int
	width             int
	nonceAt, nonceEnd int
	words             int
}

// size builds the prompt prefix, nonce, body: the smallest number of body
// words whose prompt reaches the target; when the last word overshoots, a
// short filler word in its place; when the target cannot be met, the
// closest count found (below on a tie).
func (st *cacheState) size(ctx context.Context, z sizing) (sized, error) {
	var p sized
	compose := func(head string, words []string) string {
		if len(words) == 0 {
			return head
		}
		body := strings.Join(words, " ")
		if head == "" {
			return body
		}
		return head + " " + body
	}
	var head string
	f := func(k int) (int, error) {
		key := memoKey{k, z.width}
		if c, ok := z.memo[key]; ok {
			return c, nil
		}
		if k == 0 && z.width == 0 { // the prefix alone: measured already
			return st.overhead + st.prefixTokens, nil
		}
		c, err := st.count(ctx, compose(head, z.words(k)))
		if err != nil {
			return 0, err
		}
		z.memo[key] = c
		return c, nil
	}
	var base int
	for {
		head = st.prefixText
		p.nonceAt = len(head)
		if z.width > 0 {
			if head != "" {
				head += " "
				p.nonceAt++
			}
			head += z.nonce
		}
		p.width, p.nonceEnd = z.width, len(head)
		var err error
		if base, err = f(0); err != nil {
			return p, err
		}
		if base <= z.target || !z.narrow || z.width == 0 {
			break
		}
		z.width-- // the placeholder alone overshoots: one word fewer
		z.nonce = st.alpha.placeholder(z.width)
	}
	if base >= z.target && head != "" {
		p.text, p.count = head, base
		return p, nil
	}
	guess := z.guess
	if guess < 0 {
		guess = st.guess(z.target - base)
	}
	hi, err := search(z.target, guess, 4*z.target+64, base, f)
	if err != nil {
		return p, err
	}
	if z.guess < 0 {
		st.learn(z.memo[memoKey{hi, z.width}]-base, hi)
	}
	best := z.words(hi)
	bestCount, _ := f(hi)
	if bestCount != z.target {
		// Candidates: one word fewer (if that is a prompt), or a filler in
		// place of the last word.
		consider := func(words []string, c int) {
			d, bd := abs(c-z.target), abs(bestCount-z.target)
			if d < bd || d == bd && c < bestCount {
				best, bestCount = words, c
			}
		}
		// gap: tokens still missing without the last word (>= 1 when
		// f is non-decreasing); try gap copies of each filler word.
		gap := 1
		if hi > 1 || head != "" {
			c, err := f(hi - 1)
			if err != nil {
				return p, err
			}
			consider(z.words(hi-1), c)
			gap = max(1, z.target-c)
		}
		for _, fw := range fillerWords {
			if bestCount == z.target || gap > 8 {
				break
			}
			words := z.words(hi - 1)
			for range gap {
				words = append(words, fw)
			}
			c, err := st.count(ctx, compose(head, words))
			if err != nil {
				return p, err
			}
			consider(words, c)
		}
	}
	p.text, p.count, p.words = compose(head, best), bestCount, len(best)
	return p, nil
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
