package workload

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/llmprobe/llmprobe/prober/stats"
)

// Dataset sampling modes (DatasetSpec.Sampling).
const (
	// SamplingRandom: each request an independent seeded draw from the
	// entries (with replacement). The default.
	SamplingRandom = "random"
	// SamplingShuffle: without replacement: the requests of a step are
	// distinct entries in a seeded order; a step with more requests than
	// entries is refused before any load is sent.
	SamplingShuffle = "shuffle"
	// SamplingCycle: as SamplingShuffle, but a step with more requests
	// than entries cycles through them again in the same order.
	SamplingCycle = "cycle"
	// SamplingSequential: the entries in file order from the first,
	// cycling.
	SamplingSequential = "sequential"
)

// DatasetSamplings lists the sampling modes.
var DatasetSamplings = []string{SamplingRandom, SamplingShuffle, SamplingCycle, SamplingSequential}

// The ShareGPT pruning bounds of vLLM's is_valid_sequence (in tokens), the
// rules 3 to 6 of docs/workload.md.
const (
	ShareGPTMinLen       = 4
	ShareGPTMaxPromptLen = 1024
	ShareGPTMaxTotalLen  = 2048
)

// ErrAllPruned is wrapped by Measure's error when ShareGPT pruning left
// no entry: a fault of the file, not of the server.
var ErrAllPruned = errors.New("vLLM's ShareGPT length rules pruned every entry")

// measureConcurrency is how many tokenizer calls Measure has in flight.
const measureConcurrency = 8

// DatasetSpec is the `dataset:` of a workload: a dataset file and how it
// is sampled.
type DatasetSpec struct {
	// Path is the dataset file (required).
	Path string `yaml:"path" json:"path"`
	// Format is FormatJSONL, FormatShareGPT or "" / "auto" (detected).
	Format string `yaml:"format,omitempty" json:"format,omitempty"`
	// Sampling is one of DatasetSamplings; "" means SamplingRandom.
	Sampling string `yaml:"sampling,omitempty" json:"sampling,omitempty"`
	// SHA256 is the hex SHA-256 of the file as loaded, set by whoever loads
	// it (config load, sweep preparation), so that a changed file changes
	// the workload's hash and a probe's restart key. It is never read from
	// YAML.
	SHA256 string `yaml:"-" json:"sha256,omitempty"`
	// MaxEntries is the most entries measured and sampled from: a subset
	// chosen before anything is measured (see SubsetSize and subset); nil
	// means DefaultDatasetMaxEntries, 0 every entry.
	MaxEntries *int `yaml:"max_entries,omitempty" json:"max_entries,omitempty"`
}

// SamplingOrDefault returns Sampling, defaulting to SamplingRandom.
func (d DatasetSpec) SamplingOrDefault() string {
	if d.Sampling == "" {
		return SamplingRandom
	}
	return d.Sampling
}

// Validate checks the spec's own fields (not the file).
func (d DatasetSpec) Validate() error {
	if d.Path == "" {
		return errors.New("path: required")
	}
	switch d.Format {
	case "", "auto", FormatJSONL, FormatShareGPT:
	default:
		return fmt.Errorf("format: must be auto, %s or %s, got %q", FormatJSONL, FormatShareGPT, d.Format)
	}
	if d.Sampling != "" && !slices.Contains(DatasetSamplings, d.Sampling) {
		return fmt.Errorf("sampling: must be one of %v, got %q", DatasetSamplings, d.Sampling)
	}
	return d.validateMaxEntries()
}

// validateDataset checks a Spec with a Dataset.
func (s Spec) validateDataset() error {
	if err := s.Dataset.Validate(); err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	if s.InputTokens.Dist != "" {
		return errors.New("input_tokens: does not apply with dataset (the dataset's prompts set the input lengths)")
	}
	if s.PrefixTokens != 0 {
		return errors.New("prefix_tokens: does not apply with dataset (the dataset's prompts are sent as they are)")
	}
	if s.OutputTokens.Dist != "" {
		if err := s.OutputTokens.Validate(); err != nil {
			return fmt.Errorf("output_tokens: %w", err)
		}
	}
	return nil
}

// LengthDist summarises a token-length distribution: numpy-linear
// percentiles of the values.
type LengthDist struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	Min  float64 `json:"min"`
	P10  float64 `json:"p10"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
}

// NewLengthDist summarises xs (not modified).
func NewLengthDist(xs []float64) LengthDist {
	s := slices.Clone(xs)
	slices.Sort(s)
	d := LengthDist{N: len(s)}
	if len(s) == 0 {
		return d
	}
	d.Mean = stats.Mean(s)
	d.Min, d.Max = s[0], s[len(s)-1]
	d.P10 = stats.PercentileSorted(s, 10)
	d.P50 = stats.PercentileSorted(s, 50)
	d.P90 = stats.PercentileSorted(s, 90)
	d.P99 = stats.PercentileSorted(s, 99)
	return d
}

// DatasetInfo describes a dataset as measured with a tokenizer: what a
// run records about it (never the text).
type DatasetInfo struct {
	// Path, Format and SHA256 identify the file; Entries is its number of
	// usable entries and Skipped the ShareGPT entries left out by rules 1
	// and 2. Sampled (at the end) is how many of the Entries were measured.
	Path    string `json:"path"`
	Format  string `json:"format"`
	SHA256  string `json:"sha256"`
	Entries int    `json:"entries"`
	Skipped int    `json:"skipped,omitempty"`
	// Pruned counts the ShareGPT entries pruned by vLLM's length rules,
	// by rule: "prompt_too_short" (3), "output_too_short" (4),
	// "prompt_too_long" (5), "combined_too_long" (6); an entry counts under
	// its first failed rule. Pruned counts within the Sampled entries; Used
	// is the number of entries sampled from (Sampled less Pruned).
	Pruned map[string]int `json:"pruned,omitempty"`
	Used   int            `json:"used"`
	// Sampling is the sampling mode; Method the tokenizer's sizing method
	// (MethodServerTokenize or MethodCalibrated, the estimate) and
	// TokenizeCalls the tokenizer calls measuring took (each distinct text
	// counted once).
	Sampling      string `json:"sampling"`
	Method        string `json:"method"`
	TokenizeCalls int64  `json:"tokenize_calls"`
	// InputTokens and OutputTokens are the distributions of the used
	// entries' prompt tokens (as the server counts them) and output
	// lengths (asked for, or the measured reply's); OutputFromWorkload is
	// true when the workload's output_tokens replaced the entries' own.
	InputTokens        LengthDist `json:"input_tokens"`
	OutputTokens       LengthDist `json:"output_tokens"`
	OutputFromWorkload bool       `json:"output_from_workload,omitempty"`
	// Sampled is the number of entries measured: the subset of
	// MaxEntries (DatasetSpec.MaxEntries, 0: every entry) chosen from the
	// seed before measuring, or Entries when the file is no larger.
	Sampled    int `json:"sampled"`
	MaxEntries int `json:"max_entries"`
}

// MessageCounter is a Tokenizer that can also count a whole chat
// conversation as the server will (its chat template applied).
type MessageCounter interface {
	CountMessages(ctx context.Context, msgs []Message) (int, error)
}

// CountMessages counts a conversation with vLLM's POST /tokenize
// {"messages"} (shape TokenizeVLLM with Chat); other shapes count the
// messages' contents joined by newlines as one user message.
func (t *ServerTokenizer) CountMessages(ctx context.Context, msgs []Message) (int, error) {
	if t.opts.Shape != TokenizeVLLM || !t.opts.Chat {
		e := DatasetEntry{Messages: msgs}
		return t.Count(ctx, e.Text())
	}
	req := tokenizeRequest{Model: t.opts.Model}
	for _, m := range msgs {
		req.Messages = append(req.Messages, tokenizeMessage(m))
	}
	var out struct {
		Count *int `json:"count"`
	}
	if err := t.post(ctx, t.url, req, &out); err != nil {
		return 0, err
	}
	if out.Count == nil || *out.Count <= 0 {
		return 0, errors.New("tokenize: response has no valid count")
	}
	return *out.Count, nil
}

// DatasetSource yields the items of a dataset deterministically: item i is
// a function of the seed, i, the sampling mode and the tokenizer's counts.
// Entries are measured with the tokenizer on first use (Measure), each
// distinct text counted once; the measurement is kept for that tokenizer
// (pass the same value on every call; another one measures again). It is
// safe for concurrent use.
type DatasetSource struct {
	ds       *Dataset
	sampling string
	seed     uint64
	out      *LengthSampler // the workload's output_tokens, or nil
	maxN     int            // DatasetSpec.MaxEntriesOrDefault
	sub      []int          // the measured subset (indices into ds.Entries); nil: all

	next atomic.Int64

	mu sync.Mutex
	m  *measurement

	servedMu sync.Mutex
	served   []uint64 // bitset over the used entries
	distinct atomic.Int64
}

type measurement struct {
	tok  Tokenizer
	done chan struct{}
	err  error
	pool []measuredEntry
	info DatasetInfo
}

type measuredEntry struct {
	e       *DatasetEntry
	in, out int
}

// NewDatasetSource returns the source of ds sampled as spec.Dataset says,
// with spec.OutputTokens (when given) as every entry's output length. An
// entry without an output length needs spec.OutputTokens: the error names
// the first such entry.
func NewDatasetSource(ds *Dataset, spec Spec, seed uint64) (*DatasetSource, error) {
	if spec.Dataset == nil {
		return nil, errors.New("workload: no dataset")
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	s := &DatasetSource{ds: ds, sampling: spec.Dataset.SamplingOrDefault(), seed: seed, maxN: spec.Dataset.MaxEntriesOrDefault()}
	s.sub = subset(len(ds.Entries), spec.Dataset.SubsetSize(len(ds.Entries)), s.sampling, seed)
	if spec.OutputTokens.Dist != "" {
		out, err := NewLengthSampler(spec.OutputTokens)
		if err != nil {
			return nil, fmt.Errorf("output_tokens: %w", err)
		}
		s.out = out
	} else if ds.MissingOutput > 0 {
		return nil, fmt.Errorf("%s: max_tokens or output_tokens: required (%d entries give no output length; "+
			"or give the workload's output_tokens / --output-len for all)", ds.FirstMissingOutput, ds.MissingOutput)
	}
	return s, nil
}

// Dataset returns the dataset.
func (s *DatasetSource) Dataset() *Dataset { return s.ds }

// Sampling returns the sampling mode.
func (s *DatasetSource) Sampling() string { return s.sampling }

// Measure measures every entry of the subset (DatasetSpec.MaxEntries) with
// tok (once per tokenizer: later calls return the same result) and returns
// the dataset's description. Errors
// come from tok or ctx, or say that ShareGPT pruning left no entry.
func (s *DatasetSource) Measure(ctx context.Context, tok Tokenizer) (DatasetInfo, error) {
	m, err := s.measured(ctx, tok)
	if err != nil {
		return DatasetInfo{}, err
	}
	return m.info, nil
}

// Info returns the description of the last successful measurement (zero
// before one).
func (s *DatasetSource) Info() (DatasetInfo, bool) {
	s.mu.Lock()
	m := s.m
	s.mu.Unlock()
	if m == nil {
		return DatasetInfo{}, false
	}
	select {
	case <-m.done:
		return m.info, m.err == nil
	default:
		return DatasetInfo{}, false
	}
}

func (s *DatasetSource) measured(ctx context.Context, tok Tokenizer) (*measurement, error) {
	if tok == nil {
		return nil, errors.New("workload: no tokenizer")
	}
	for {
		s.mu.Lock()
		m := s.m
		build := false
		if m == nil || !sameTokenizer(m.tok, tok) {
			m = &measurement{tok: tok, done: make(chan struct{})}
			s.m, build = m, true
		}
		s.mu.Unlock()
		if err := buildOrWait(ctx, build, m.done, &m.err, func() error { return s.measure(ctx, m) }); err != nil {
			return nil, err
		}
		if m.err == nil {
			return m, nil
		}
		s.mu.Lock()
		if s.m == m {
			s.m = nil
		}
		s.mu.Unlock()
		if !build && retryable(m.err) && ctx.Err() == nil {
			continue
		}
		return nil, m.err
	}
}

// textCounter counts texts with a tokenizer, each distinct text once
// (concurrent askers of one text wait for the one call).
type textCounter struct {
	tok   Tokenizer
	mu    sync.Mutex
	cache map[string]*countCall
	calls atomic.Int64
}

type countCall struct {
	done chan struct{}
	n    int
	err  error
}

func (c *textCounter) count(ctx context.Context, text string, msgs []Message) (int, error) {
	key := text
	if msgs != nil {
		key = "\x00messages\x00" + text // a conversation counts apart from the same text as a prompt
	}
	c.mu.Lock()
	call, ok := c.cache[key]
	if !ok {
		call = &countCall{done: make(chan struct{})}
		c.cache[key] = call
	}
	c.mu.Unlock()
	if ok {
		select {
		case <-call.done:
			return call.n, call.err
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	defer close(call.done)
	c.calls.Add(1)
	call.err = errBuildPanicked
	if mc, isMC := c.tok.(MessageCounter); isMC && msgs != nil {
		call.n, call.err = mc.CountMessages(ctx, msgs)
	} else {
		call.n, call.err = c.tok.Count(ctx, text)
	}
	return call.n, call.err
}

// measure counts every entry's prompt (and ShareGPT reply) of the subset
// with m.tok, at most measureConcurrency calls at once, then prunes and
// summarises.
func (s *DatasetSource) measure(ctx context.Context, m *measurement) error {
	ds := s.ds
	tc := &textCounter{tok: m.tok, cache: map[string]*countCall{}}
	overhead := 0
	if ds.Format == FormatShareGPT && s.out == nil {
		n, err := tc.count(ctx, "the", nil)
		if err != nil {
			return fmt.Errorf("dataset %s: counting tokens: %w", ds.Path, err)
		}
		overhead = max(0, n-1)
	}
	n := s.size()
	ins, outs := make([]int, n), make([]int, n)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	work := make(chan int)
	for range measureConcurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				e := s.entry(i)
				n, err := tc.count(ctx, e.Text(), e.Messages)
				if err != nil {
					cancel(fmt.Errorf("%s: counting the prompt's tokens: %w", e.Where, err))
					continue
				}
				ins[i] = n
				if e.Reply != "" && s.out == nil {
					r, err := tc.count(ctx, e.Reply, nil)
					if err != nil {
						cancel(fmt.Errorf("%s: counting the reply's tokens: %w", e.Where, err))
						continue
					}
					outs[i] = max(0, r-overhead)
				}
			}
		}()
	}
	for i := range n {
		select {
		case work <- i:
			continue
		case <-ctx.Done():
		}
		break
	}
	close(work)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	info := DatasetInfo{Path: ds.Path, Format: ds.Format, SHA256: ds.SHA256, Entries: len(ds.Entries), Skipped: ds.Skipped,
		Sampling: s.sampling, Method: Method(m.tok), TokenizeCalls: tc.calls.Load(), OutputFromWorkload: s.out != nil,
		Sampled: n, MaxEntries: s.maxN}
	outHi := 0
	if s.out != nil {
		_, outHi = s.out.Range()
	}
	var inF, outF []float64
	for i := range n {
		e := s.entry(i)
		in, out := ins[i], e.OutputTokens
		if e.Reply != "" {
			out = outs[i]
		}
		if ds.Format == FormatShareGPT {
			if rule := shareGPTPruned(in, out, outHi); rule != "" {
				if info.Pruned == nil {
					info.Pruned = map[string]int{}
				}
				info.Pruned[rule]++
				continue
			}
		}
		m.pool = append(m.pool, measuredEntry{e: e, in: in, out: out})
		inF = append(inF, float64(in))
		if s.out == nil {
			outF = append(outF, float64(out))
		}
	}
	if len(m.pool) == 0 {
		return fmt.Errorf("dataset %s: %w of the %d measured (%v)", ds.Path, ErrAllPruned, n, info.Pruned)
	}
	info.Used = len(m.pool)
	info.InputTokens = NewLengthDist(inF)
	if s.out != nil {
		lo, hi := s.out.Range()
		info.OutputTokens = LengthDist{Min: float64(lo), Max: float64(hi)}
	} else {
		info.OutputTokens = NewLengthDist(outF)
	}
	m.info = info
	s.servedMu.Lock()
	s.served = make([]uint64, (len(m.pool)+63)/64)
	s.distinct.Store(0)
	s.servedMu.Unlock()
	return nil
}

// shareGPTPruned returns the first of vLLM's is_valid_sequence rules the
// pair fails ("" when none): outFixed > 0 is the workload's output length
// bound, which skips the output check and is used for the combined one.
func shareGPTPruned(in, out, outFixed int) string {
	if outFixed > 0 {
		out = outFixed
	}
	switch {
	case in < ShareGPTMinLen:
		return "prompt_too_short"
	case outFixed == 0 && out < ShareGPTMinLen:
		return "output_too_short"
	case in > ShareGPTMaxPromptLen:
		return "prompt_too_long"
	case in+out > ShareGPTMaxTotalLen:
		return "combined_too_long"
	}
	return ""
}

// Next returns the next item in sequence (At with a counter from 0).
func (s *DatasetSource) Next(ctx context.Context, tok Tokenizer) (Item, error) {
	return s.At(ctx, tok, s.next.Add(1)-1)
}

// At returns item i (i >= 0), measuring the dataset with tok first if it
// was not.
func (s *DatasetSource) At(ctx context.Context, tok Tokenizer, i int64) (Item, error) {
	m, err := s.measured(ctx, tok)
	if err != nil {
		return Item{}, err
	}
	j := s.entryIndex(uint64(i), len(m.pool))
	me := m.pool[j]
	it := Item{Index: i, InputTokens: me.in, OutputTokens: me.out, PromptTokens: me.in, Prompt: me.e.Text(), Messages: me.e.Messages}
	if s.out != nil {
		it.OutputTokens = s.out.Draw(newRand(derive(s.seed, tagOutput, uint64(i))))
	}
	s.markServed(j)
	return it, nil
}

// entryIndex maps item i to an entry of a pool of n.
func (s *DatasetSource) entryIndex(i uint64, n int) int {
	switch s.sampling {
	case SamplingSequential:
		return int(i % uint64(n))
	case SamplingShuffle, SamplingCycle:
		return int(permute(derive(s.seed, tagDataset), i%uint64(n), uint64(n)))
	default:
		return int(derive(s.seed, tagDataset, i) % uint64(n))
	}
}

func (s *DatasetSource) markServed(j int) {
	s.servedMu.Lock()
	defer s.servedMu.Unlock()
	if j/64 >= len(s.served) {
		return
	}
	if b := uint64(1) << (j % 64); s.served[j/64]&b == 0 {
		s.served[j/64] |= b
		s.distinct.Add(1)
	}
}

// DistinctPrompts returns the number of distinct entries served since the
// last measurement.
func (s *DatasetSource) DistinctPrompts() int64 { return s.distinct.Load() }

// tagDataset is the random stream of dataset sampling.
const tagDataset uint64 = 0x64617461 // "data"

// permute is a keyed bijection of [0, n): a four-round Feistel network on
// the smallest even number of bits covering n, cycle-walked into range, so
// that any n consecutive indices (mod n) map to n distinct entries without
// a table.
func permute(key, x, n uint64) uint64 {
	if n <= 1 {
		return 0
	}
	b := uint(bits.Len64(n - 1))
	if b%2 == 1 {
		b++
	}
	half := b / 2
	mask := uint64(1)<<half - 1
	for {
		l, r := x>>half, x&mask
		for round := range uint64(4) {
			l, r = r, l^(derive(key, round, r)&mask)
		}
		x = l<<half | r
		if x < n {
			return x
		}
	}
}
