package sweep

import (
	"context"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/llmprobe/llmprobe/prober/workload"
)

// promptItem is one request of the workload.
type promptItem = workload.Item

// promptSource builds the prompts of every step from one workload
// generator (so the shared prefix is the same across steps unless
// --fresh-prefix), or from the dataset, sized with the endpoint's prompt
// sizing (the server's tokenizer, or a calibration from
// usage.prompt_tokens).
type promptSource struct {
	src   itemSource
	gen   *workload.Generator // nil for a dataset
	tok   workload.Tokenizer
	fresh bool
	// sessions draws the later turns of a multi-turn workload (nil: single
	// requests); a session's first turn is the step's item.
	sessions *workload.Sessions
	// fromStart starts every step's items at index 0 (sequential dataset
	// sampling: each step sends the file's entries in order).
	fromStart bool
	// trace builds the measured prompts of a trace replay (nil: src).
	trace *workload.TracePrompts
	// nonce is the run's prompt nonce (Config.PromptNonce): mixed into
	// the texts, never into lengths or arrivals.
	nonce uint64
}

// NewPromptNonce draws a fresh prompt nonce (Config.PromptNonce), in
// [1, 2^63-1], from the process's random source.
func NewPromptNonce() int64 { return rand.Int64N(math.MaxInt64) + 1 }

// itemSource yields a workload's items by index: the Generator or a
// dataset's DatasetSource.
type itemSource interface {
	At(ctx context.Context, tok workload.Tokenizer, i int64) (workload.Item, error)
	DistinctPrompts() int64
}

// info returns the generator's Info (a dataset has none).
func (ps *promptSource) info() workload.Info {
	if ps.gen == nil {
		return workload.Info{}
	}
	return ps.gen.Info()
}

// newPromptSource builds the workload generator of the sweep; prompts are
// sized with the tokenizer the preflight set up (endpoint.PromptSizing).
func newPromptSource(r *runner) (*promptSource, error) {
	c := r.cfg
	r.tokenizer = r.sizing.Method()
	if r.dataset != nil {
		return &promptSource{src: r.dataset, tok: r.sizing.Tokenizer,
			fromStart: r.dataset.Sampling() == workload.SamplingSequential}, nil
	}
	gen, err := workload.NewGenerator(c.Workload, uint64(c.shardSeed()))
	if err != nil {
		return nil, err
	}
	nonce := uint64(c.PromptNonce)
	gen.SetPromptNonce(nonce)
	ps := &promptSource{src: gen, gen: gen, tok: r.sizing.Tokenizer, fresh: c.FreshPrefix, nonce: nonce}
	if c.Workload.MultiTurn != nil {
		if ps.sessions, err = workload.NewSessions(c.Workload, uint64(c.shardSeed())); err != nil {
			return nil, err
		}
		ps.sessions.SetPromptNonce(nonce)
	}
	if c.Trace != nil {
		ps.trace = workload.NewTracePrompts(c.Trace, 0)
	}
	return ps, nil
}

// stepItems are the prompts of one step: the warmups and the measured ones.
// distinct0 is the generator's distinct-prompt count once the warmups were
// built (the step's measured prompts are counted from there).
type stepItems struct {
	warmups   []promptItem
	measured  *itemList
	distinct0 int64
}

// itemList yields the measured items of a step by arrival index: from a
// promptWindow built ahead of the sends when the count is known, else on
// demand (cheap once the generator has cached the base prompt of each
// length).
type itemList struct {
	at  itemFunc
	win *promptWindow
}

// itemFunc builds the measured item of arrival index i of a step.
type itemFunc func(ctx context.Context, i int) (promptItem, error)

func (l *itemList) get(ctx context.Context, i int) (promptItem, error) {
	if l.win != nil {
		if it, ok := l.win.take(i); ok {
			return it, nil
		}
	}
	return l.at(ctx, i)
}

// close stops the list's window builder, if any.
func (l *itemList) close() {
	if l != nil && l.win != nil {
		l.win.close()
	}
}

// items builds a step's items. Item indices come from the step seed, so a
// level's prompts do not depend on the order the levels ran in, and no two
// steps share a prompt beyond the shared prefix. With --fresh-prefix each
// step draws a new prefix first. n < 0 means the count is not known. With
// n > 0 the measured items are built ahead by a promptWindow, which items
// fills before it returns (so that the first sends find their prompts); a
// burst step (burst true) builds all n, since they are sent at once. The
// caller closes out.measured.
func (ps *promptSource) items(ctx context.Context, seed uint64, n, warmups int, burst bool) (stepItems, error) {
	if ps.fresh {
		ps.gen.FreshPrefix()
	}
	base := int64(seed >> 24)        // 40 bits: room for any step's count
	wbase := int64(seed>>24) ^ 1<<40 // warmups: a disjoint range
	if ps.fromStart {
		base = 0
	}
	at := itemFunc(func(ctx context.Context, i int) (promptItem, error) { return ps.src.At(ctx, ps.tok, base+int64(i)) })
	if ps.trace != nil { // a trace replay: item i is the trace's entry i
		textSeed := workload.MixNonce(seed, ps.nonce) // the trace decides the lengths; the seed, the texts
		at = func(ctx context.Context, i int) (promptItem, error) { return ps.trace.At(ctx, ps.tok, textSeed, i) }
	}
	out := stepItems{measured: &itemList{at: at}}
	for i := range warmups {
		it, err := ps.src.At(ctx, ps.tok, wbase+int64(i))
		if err != nil {
			return out, err
		}
		out.warmups = append(out.warmups, it)
	}
	out.distinct0 = ps.src.DistinctPrompts()
	if n > 0 {
		size, budget := min(n, windowItems), windowBytes
		if burst {
			size, budget = n, math.MaxInt
		}
		w := newPromptWindow(at, n, size, budget)
		out.measured.win = w
		if err := w.fill(ctx); err != nil {
			w.close()
			return out, err
		}
	}
	return out, nil
}

// The bounds of a promptWindow: at most windowItems prompts built ahead, and
// no more once they hold windowBytes of text.
const (
	windowItems = 2048
	windowBytes = 32 << 20
)

// promptWindow builds a step's items [0, n) in order in a goroutine, at
// most size (and about budget bytes of prompt text) ahead of the ones
// taken, so that a step of millions of requests never holds their prompts
// while the send path still finds each prompt built (no /tokenize round
// trip there). An item its sender asks for before the builder reached it
// (the builder fell behind, or failed) is not in the window: take reports
// false, the sender builds it itself (Generator.At gives the same item),
// and the builder skips it.
type promptWindow struct {
	at     itemFunc
	n      int
	budget int

	mu     sync.Mutex
	cond   *sync.Cond
	ring   []windowSlot
	next   int // the next index the builder considers
	skip   int // indices below are not built by the builder any more
	bytes  int // prompt text in the ring
	err    error
	done   bool          // the builder returned
	closed bool          // close was called
	ready  chan struct{} // closed when the ring is first full, or the builder returned
	once   sync.Once
	cancel context.CancelFunc
	exited chan struct{}
}

type windowSlot struct {
	idx int
	it  promptItem
	ok  bool
}

func newPromptWindow(at itemFunc, n, size, budget int) *promptWindow {
	w := &promptWindow{at: at, n: n, budget: budget, ring: make([]windowSlot, size),
		ready: make(chan struct{}), exited: make(chan struct{})}
	w.cond = sync.NewCond(&w.mu)
	return w
}

// fill starts the builder and waits until the window is full (or every
// item is built); it returns the error of a build that failed meanwhile.
// The builder runs until the last item or close.
func (w *promptWindow) fill(ctx context.Context) error {
	bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w.cancel = cancel
	go w.build(bctx, ctx)
	select {
	case <-w.ready:
	case <-ctx.Done():
		return ctx.Err()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// build is the builder goroutine. It stops on bctx (close) and on a failed
// build; stepCtx ending (an interrupted step) closes it too.
func (w *promptWindow) build(bctx, stepCtx context.Context) {
	defer close(w.exited)
	stop := context.AfterFunc(stepCtx, w.close)
	defer stop()
	markReady := func() { w.once.Do(func() { close(w.ready) }) }
	defer markReady()
	w.mu.Lock()
	defer func() {
		w.done = true
		w.mu.Unlock()
	}()
	for {
		j := max(w.next, w.skip)
		if w.closed || j >= w.n {
			return
		}
		s := &w.ring[j%len(w.ring)]
		if s.ok || (w.bytes >= w.budget && w.bytes > 0) {
			markReady() // full: the sends may start
			w.cond.Wait()
			continue
		}
		w.next = j + 1
		w.mu.Unlock()
		it, err := w.at(bctx, j)
		w.mu.Lock()
		if err != nil {
			if !w.closed {
				w.err = err
			}
			return
		}
		if j < w.skip || w.closed {
			continue // its sender built it meanwhile
		}
		*s = windowSlot{idx: j, it: it, ok: true}
		w.bytes += len(it.Prompt)
	}
}

// take returns item i when the builder has it ready, and removes it from
// the window; false means the caller builds it (and the builder will not).
func (w *promptWindow) take(i int) (promptItem, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := &w.ring[i%len(w.ring)]
	if s.ok && s.idx == i {
		it := s.it
		*s = windowSlot{}
		w.bytes -= len(it.Prompt)
		w.cond.Signal()
		return it, true
	}
	w.skip = max(w.skip, i+1)
	return promptItem{}, false
}

// close stops the builder and waits for it to return; it is idempotent
// and safe to call concurrently with take.
func (w *promptWindow) close() {
	w.mu.Lock()
	w.closed = true
	w.cond.Broadcast()
	w.mu.Unlock()
	if w.cancel != nil {
		w.cancel()
		<-w.exited
	}
}

// prefixGeneration is the number of prefixes drawn so far (0 without
// --fresh-prefix).
func (ps *promptSource) prefixGeneration() uint64 { return ps.info().PrefixGeneration }
