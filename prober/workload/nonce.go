package workload

import (
	"context"
	"math/bits"
	"sort"
	"strings"
)

// Nonces: every item's prompt begins, after the shared prefix, with its
// nonce: the item's index under a seeded permutation, written in base B
// with words of the alphabet (least significant digit first; without a
// shared prefix the first digit's words are those tested at the text's
// start, see startWords), so that no two items of a run share more than
// the prefix and a common start of their nonces.
const (
	// maxAlphabet is the largest nonce alphabet: with 64 words a full
	// nonce is eight words. The first 64 words of the list (the shortest,
	// one token in common vocabularies) are tried first, as one group.
	maxAlphabet = 64
	// alphabetCalls bounds the tokenizer calls spent testing the alphabet
	// (about two when every candidate passes).
	alphabetCalls = 48
	// firstCalls: without a shared prefix the nonce's first word starts
	// the text, where a word may cost a token more (a BPE vocabulary
	// without its space-less form); the first digit is drawn from up to
	// maxAlphabet words of the list tested there one by one, with at most
	// firstCalls tokenizer calls (64 when every one passes).
	firstCalls = 80
	// nonceBits: a full nonce numbers at least 2^48 items, so items whose
	// indices differ by less than that have distinct nonces (a sweep's
	// indices stay below 2^42).
	nonceBits = 48
	// nonceWord is the reference word: the alphabet is the words the
	// tokenizer counts as it (the overhead is measured as Count("the") -
	// 1, so it is one token), and a base prompt's placeholder nonce is it
	// repeated.
	nonceWord = "the"
)

// groupSearch is the word list search of buildAlphabet and the trace
// prompts' build: in order, groups of g candidate words (a power of two,
// from maxAlphabet; halved on a failure, doubled on a pass) are counted
// with count, and a group passes when keep holds for its count c, want
// (the count of g copies of nonceWord) and g; at most maxAlphabet words,
// alphabetCalls calls. It returns the words that passed so far, with
// count's error.
func groupSearch(ctx context.Context, count func(ctx context.Context, words []string) (int, error), keep func(c, want, g int) bool) ([]string, error) {
	ref := map[int]int{} // count of g copies of nonceWord
	var words []string
	calls, pos, g := 0, 0, maxAlphabet
	for pos < len(wordList) && len(words) < maxAlphabet && calls < alphabetCalls {
		g = 1 << (bits.Len(uint(min(g, maxAlphabet-len(words), len(wordList)-pos))) - 1) // a power of two
		want, ok := ref[g]
		if !ok {
			c, err := count(ctx, strings.Fields(strings.Repeat(nonceWord+" ", g)))
			if err != nil {
				return words, err
			}
			calls++
			ref[g], want = c, c
		}
		group := wordList[pos : pos+g]
		c, err := count(ctx, group)
		if err != nil {
			return words, err
		}
		calls++
		switch {
		case keep(c, want, g):
			words = append(words, group...)
			pos += g
			g *= 2
		case g == 1:
			pos++
		default:
			g /= 2
		}
	}
	return words, nil
}

// alphabet is the nonce's digit words for one tokenizer and prefix.
type alphabet struct {
	words  []string // distinct, no spaces
	first  []string // the first digit's: words, or (no prefix) words that passed at the text's start
	full   int      // words of a full nonce: the smallest d with capacity(d) >= 2^48
	tested bool     // false: untested words (no two passed), every length resized
	maxLen int      // bytes of the longest word
	keys   [3]uint64
}

// buildAlphabet tests the word list, in order, for words that the
// tokenizer counts as nonceWord right after the prefix: a group of g
// candidates passes when it counts as g copies of nonceWord (with
// additive counts of at least one token a word, every word of it is then
// one token). Groups start at 64 words (two calls when the first 64
// pass), halve on a failure and double on a pass; at most alphabetCalls
// calls are spent. Without a prefix, the first digit's words are then
// tested at the start of the text (startWords), where a group puts only
// its first word.
func (st *cacheState) buildAlphabet(ctx context.Context) error {
	words, err := groupSearch(ctx, func(ctx context.Context, words []string) (int, error) {
		body := strings.Join(words, " ")
		if st.prefixText != "" {
			body = st.prefixText + " " + body
		}
		return st.count(ctx, body)
	}, func(c, want, _ int) bool { return c == want })
	if err != nil {
		return err
	}
	a := &alphabet{words: words, first: words, tested: len(words) >= 2}
	if a.tested && st.prefixText == "" {
		first, _, err := startWords(ctx, st.count)
		if err != nil {
			return err
		}
		a.first, a.tested = first, len(first) > 0
	}
	if !a.tested {
		a.words = wordList[:maxAlphabet]
		a.first = a.words
	}
	a.finish(st.seed)
	st.alpha = a
	return nil
}

// finish sets the full nonce's words, the longest word and the
// permutation's keys of a, whose words and first are set.
func (a *alphabet) finish(seed uint64) {
	for a.capacity(a.full) < 1<<nonceBits {
		a.full++
	}
	for _, w := range append(a.words[:len(a.words):len(a.words)], a.first...) {
		a.maxLen = max(a.maxLen, len(w))
	}
	for r := range a.keys {
		a.keys[r] = derive(seed, tagPrompt, uint64(r))
	}
}

// startWords returns nonceWord and the first other words of the list (at
// most maxAlphabet in all) that count as nonceWord at the very start of
// the text, and the count of two copies of nonceWord (pair): each word is
// tested there, followed by nonceWord, against pair, with at most
// firstCalls calls of count. There (a completion prompt's start, or a chat
// message's right after the template's role header) a BPE word without
// its leading space may cost a token more than after another word, and
// buildAlphabet's groups put only their first word there; a nonce whose
// first word did put its item one token off the base prompt's count
// (issue 22 V10).
func startWords(ctx context.Context, count func(context.Context, string) (int, error)) (words []string, pair int, err error) {
	if pair, err = count(ctx, nonceWord+" "+nonceWord); err != nil {
		return nil, 0, err
	}
	words = []string{nonceWord} // passes by definition
	for calls, i := 1, 0; calls < firstCalls && i < len(wordList) && len(words) < maxAlphabet; i++ {
		w := wordList[i]
		if w == nonceWord {
			continue
		}
		c, err := count(ctx, w+" "+nonceWord)
		if err != nil {
			return nil, 0, err
		}
		calls++
		if c == pair {
			words = append(words, w)
		}
	}
	return words, pair, nil
}

// smallest returns the size of the smallest digit alphabet: the nonces'
// overlap grows as with an alphabet of that size, at most.
func (a *alphabet) smallest() int { return min(len(a.first), len(a.words)) }

// placeholder returns the base prompts' nonce of w words.
func (a *alphabet) placeholder(w int) string {
	return strings.TrimSuffix(strings.Repeat(nonceWord+" ", w), " ")
}

// capacity returns the number of distinct nonces of w words: the first
// digit's words times the alphabet's size to the w-1 (w <= a.full, so at
// most 2^48 times the alphabet's size, below 2^63).
func (a *alphabet) capacity(w int) uint64 {
	if w == 0 {
		return 1
	}
	c := uint64(len(a.first))
	for range w - 1 {
		c *= uint64(len(a.words))
	}
	return c
}

// value returns item i's nonce value for a nonce of w words: i modulo the
// capacity, permuted.
func (a *alphabet) value(i uint64, w int) uint64 {
	c := a.capacity(w)
	if c <= 1 {
		return 0
	}
	return a.permute(i%c, c)
}

// permute is a seeded bijection of [0, c): a bijection of the m-bit
// integers (add a key, xorshift, multiply by an odd constant, three
// rounds) walked until it lands below c (less than two rounds on average,
// since 2^m < 2c).
func (a *alphabet) permute(x, c uint64) uint64 {
	m := uint(bits.Len64(c - 1))
	mask := uint64(1)<<m - 1
	for {
		for r, k := range a.keys {
			x = (x + k) & mask
			x ^= x >> ((m + 1) / 2)
			x = (x * (0x9e3779b97f4a7c15 + 2*uint64(r))) & mask
		}
		if x < c {
			return x
		}
	}
}

// writeNonce writes the w words of the nonce of value v: the first digit
// from a.first, the others from a.words.
func (a *alphabet) writeNonce(b *strings.Builder, v uint64, w int) {
	for j := range w {
		set := a.words
		if j == 0 {
			set = a.first
		} else {
			b.WriteByte(' ')
		}
		n := uint64(len(set))
		b.WriteString(set[v%n])
		v /= n
	}
}

// nonce returns the w words of the nonce of value v.
func (a *alphabet) nonce(v uint64, w int) string {
	var b strings.Builder
	a.writeNonce(&b, v, w)
	return b.String()
}

// Bounds of the served-item tracking behind DistinctPrompts.
const (
	maxServedSpans = 4096
	maxShortNonces = 1 << 16
)

// servedSet is what a cacheState has served: item indices as sorted,
// disjoint ranges, and the (target, nonce value) pairs of shortened
// nonces.
type servedSet struct {
	spans []indexSpan
	short map[shortKey]struct{}
}

type indexSpan struct{ lo, hi int64 }

type shortKey struct {
	target int
	v      uint64
}

// add records index i and reports whether it is new. When the ranges are
// at their bound, a new index that extends none is reported new and not
// recorded.
func (s *servedSet) add(i int64) bool {
	k := sort.Search(len(s.spans), func(j int) bool { return s.spans[j].hi >= i })
	if k < len(s.spans) && s.spans[k].lo <= i {
		return false
	}
	left := k > 0 && s.spans[k-1].hi == i-1
	right := k < len(s.spans) && s.spans[k].lo == i+1
	switch {
	case left && right:
		s.spans[k-1].hi = s.spans[k].hi
		s.spans = append(s.spans[:k], s.spans[k+1:]...)
	case left:
		s.spans[k-1].hi = i
	case right:
		s.spans[k].lo = i
	case len(s.spans) < maxServedSpans:
		s.spans = append(s.spans, indexSpan{})
		copy(s.spans[k+1:], s.spans[k:])
		s.spans[k] = indexSpan{i, i}
	}
	return true
}

// served counts item i, built from e with nonce value v, in the
// generator's DistinctPrompts and ShortNonceItems.
func (st *cacheState) served(i int64, e *entry, v uint64) {
	g := st.g
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.seen.add(i) {
		return
	}
	if e.width == st.alpha.full {
		g.distinct.Add(1)
		return
	}
	g.shortItems.Add(1)
	k := shortKey{e.target, v}
	if _, dup := st.seen.short[k]; dup || len(st.seen.short) >= maxShortNonces {
		return
	}
	if st.seen.short == nil {
		st.seen.short = map[shortKey]struct{}{}
	}
	st.seen.short[k] = struct{}{}
	g.distinct.Add(1)
}
