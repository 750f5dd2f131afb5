package workload

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmprobe/llmprobe/prober/capfile"

	"github.com/llmprobe/llmprobe/prober/jsonkind"
)

// Trace formats (Trace.Format).
const (
	// TraceMooncake is the Mooncake trace format (kvcache-ai/Mooncake,
	// FAST25-release/traces): {"timestamp": ms, "input_length",
	// "output_length", "hash_ids": [...]}, timestamps relative to the first
	// request.
	TraceMooncake = "mooncake"
	// TraceOffsets is llmprobe's offset format: {"offset_ms",
	// "input_tokens", "output_tokens"} and optional "hash_ids", offsets from
	// the start of the replay.
	TraceOffsets = "offsets"
)

// Bounds of a trace file. Every one is checked while the file is read, so
// a huge or endless file fails early, naming the file (and the line).
const (
	// MaxTraceBytes caps a trace file's size: 64 MiB (Mooncake's
	// conversation trace is about 3 MB).
	MaxTraceBytes = 64 << 20
	// MaxTraceEntries caps a trace's requests: 1,000,000 (a sweep step holds
	// a summary of each, see sweep.MaxStepRequests).
	MaxTraceEntries = 1_000_000
	// MaxTraceHashIDs caps the hash ids of a whole trace: 4,194,304 (2^22,
	// 32 MiB as int64, and the map that finds the shared prefixes at load).
	MaxTraceHashIDs = 1 << 22
	// MaxTraceLineBytes caps one line: 1 MiB.
	MaxTraceLineBytes = 1 << 20
	// MaxTraceOffset caps an offset or timestamp: 31 days.
	MaxTraceOffset = 31 * 24 * time.Hour
	// DefaultTraceBlockSize is the tokens of one hash_ids block: 512, the
	// block size of Mooncake's traces (len(hash_ids) = ceil(input_length /
	// 512) in FAST25-release/traces/conversation_trace.jsonl).
	DefaultTraceBlockSize = 512
	// MaxTraceBlockSize caps TraceOptions.BlockSize.
	MaxTraceBlockSize = 1 << 16
)

// TraceOptions tune LoadTrace and ParseTrace. The zero value is the
// default.
type TraceOptions struct {
	// BlockSize is the number of tokens one hash id stands for
	// (DefaultTraceBlockSize when 0).
	BlockSize int
}

// TraceEntry is one request of a trace.
type TraceEntry struct {
	// Line is the entry's line in the file (1-based).
	Line int
	// Offset is when the request is sent, from the start of the replay at
	// speed 1: a Mooncake timestamp minus the trace's first one, or the
	// offset_ms as written.
	Offset time.Duration
	// InputTokens and OutputTokens are the prompt length (in the server's
	// tokens, template included, as vLLM counts usage.prompt_tokens) and
	// max_tokens.
	InputTokens, OutputTokens int
	// HashIDs are the ids of the prompt's blocks of Trace.BlockSize tokens
	// (nil: none); the same id at the same position is the same text.
	HashIDs []int64
	// SharedTokens is the prompt prefix this request shares with the
	// requests before it in the trace: BlockSize times the number of its
	// leading hash ids that an earlier request had at the same positions,
	// at most InputTokens.
	SharedTokens int
	// Repeat is true when an earlier request had the same hash ids and
	// input length, and the ids cover the whole input (the same prompt).
	Repeat bool
}

// Trace is a loaded trace file: entries sorted by offset, bounded (the
// Max* constants), every length in [1, MaxLength].
type Trace struct {
	// Path is the file as given; SHA256 "sha256:" and the hex SHA-256 of
	// its bytes (for the fingerprint).
	Path   string
	SHA256 string
	// Format is TraceMooncake or TraceOffsets.
	Format string
	// BlockSize is the tokens of one hash id.
	BlockSize int
	// Entries in offset order (stable: entries at the same offset keep
	// their file order).
	Entries []TraceEntry
	// Reordered counts the entries that came before an earlier offset in
	// the file: they were sorted into place (0 for a sorted file).
	Reordered int
	// Rebased is the first Mooncake timestamp, subtracted from every entry
	// (0 for the offsets format).
	Rebased time.Duration
	// HashIDs is the number of hash ids of all entries.
	HashIDs int
}

// LoadTrace reads and validates the trace file at path. Errors name the
// file and, for a bad entry, its line and field ("t.jsonl:3: input_length:
// must be >= 1, got 0"); nothing is sent before a trace loads.
func LoadTrace(path string, o TraceOptions) (*Trace, error) {
	f, err := capfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > MaxTraceBytes {
		return nil, fmt.Errorf("trace %s: the file has %d bytes, more than the cap of %d", path, fi.Size(), MaxTraceBytes)
	}
	t, err := ParseTrace(path, f, o)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// traceLine is one line as written: pointers tell a missing key from 0.
type traceLine struct {
	Timestamp    *float64 `json:"timestamp"`
	InputLength  *int64   `json:"input_length"`
	OutputLength *int64   `json:"output_length"`
	OffsetMS     *float64 `json:"offset_ms"`
	InputTokens  *int64   `json:"input_tokens"`
	OutputTokens *int64   `json:"output_tokens"`
	HashIDs      []int64  `json:"hash_ids"`
}

// ParseTrace reads a trace from r; name is the file name its errors give.
// It reads at most MaxTraceBytes.
func ParseTrace(name string, r io.Reader, o TraceOptions) (*Trace, error) {
	bs := o.BlockSize
	if bs == 0 {
		bs = DefaultTraceBlockSize
	}
	if bs < 1 || bs > MaxTraceBlockSize {
		return nil, fmt.Errorf("trace %s: block size must be in [1, %d], got %d", name, MaxTraceBlockSize, bs)
	}
	h := sha256.New()
	lim := &io.LimitedReader{R: r, N: MaxTraceBytes + 1}
	br := bufio.NewReaderSize(io.TeeReader(lim, h), 64<<10)
	t := &Trace{Path: name, BlockSize: bs}
	var maxOff time.Duration
	for line := 1; ; line++ {
		b, err := readTraceLine(br)
		if lim.N <= 0 {
			return nil, fmt.Errorf("trace %s: the file is larger than the cap of %d bytes", name, MaxTraceBytes)
		}
		if errors.Is(err, errLineTooLong) {
			return nil, fmt.Errorf("%s:%d: the line is longer than %d bytes", name, line, MaxTraceLineBytes)
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("trace %s: %w", name, err)
		}
		if len(bytes.TrimSpace(b)) > 0 {
			e, err := t.parseEntry(b, line)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", name, line, err)
			}
			if len(t.Entries) == MaxTraceEntries {
				return nil, fmt.Errorf("%s:%d: more than %d entries, the cap on a trace", name, line, MaxTraceEntries)
			}
			if t.HashIDs += len(e.HashIDs); t.HashIDs > MaxTraceHashIDs {
				return nil, fmt.Errorf("%s:%d: hash_ids: more than %d hash ids in the trace, the cap", name, line, MaxTraceHashIDs)
			}
			if e.Offset < maxOff {
				t.Reordered++
			}
			maxOff = max(maxOff, e.Offset)
			t.Entries = append(t.Entries, e)
		}
		if err != nil { // io.EOF
			break
		}
	}
	if len(t.Entries) == 0 {
		return nil, fmt.Errorf("trace %s: no entries", name)
	}
	if t.Reordered > 0 {
		slices.SortStableFunc(t.Entries, func(a, b TraceEntry) int {
			switch {
			case a.Offset < b.Offset:
				return -1
			case a.Offset > b.Offset:
				return 1
			}
			return 0
		})
	}
	if t.Format == TraceMooncake {
		t.Rebased = t.Entries[0].Offset
		for i := range t.Entries {
			t.Entries[i].Offset -= t.Rebased
		}
	}
	if t.Span() <= 0 {
		return nil, fmt.Errorf("trace %s: every entry is at the same time: a replay needs a span (all at once is a burst: --rates inf)", name)
	}
	t.shareBlocks()
	t.SHA256 = "sha256:" + hex.EncodeToString(h.Sum(nil))
	return t, nil
}

var errLineTooLong = errors.New("line too long")

// readTraceLine returns the next line without its newline, at most
// MaxTraceLineBytes.
func readTraceLine(br *bufio.Reader) ([]byte, error) {
	var out []byte
	for {
		frag, err := br.ReadSlice('\n')
		if len(out)+len(frag) > MaxTraceLineBytes+1 {
			return nil, errLineTooLong
		}
		out = append(out, frag...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSuffix(out, []byte("\n")), err
	}
}

// parseEntry decodes and checks one line; its errors name the field.
func (t *Trace) parseEntry(b []byte, line int) (TraceEntry, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var l traceLine
	if err := dec.Decode(&l); err != nil {
		return TraceEntry{}, jsonLineError(err)
	}
	if dec.More() {
		return TraceEntry{}, errors.New("more than one JSON object on the line")
	}
	format, timeKey := TraceMooncake, "timestamp"
	ts, in, out := l.Timestamp, l.InputLength, l.OutputLength
	inKey, outKey := "input_length", "output_length"
	switch {
	case l.Timestamp != nil && l.OffsetMS != nil:
		return TraceEntry{}, errors.New("timestamp and offset_ms: give one (timestamp: the Mooncake format, offset_ms: the offsets format)")
	case l.OffsetMS != nil:
		format, timeKey = TraceOffsets, "offset_ms"
		ts, in, out = l.OffsetMS, l.InputTokens, l.OutputTokens
		inKey, outKey = "input_tokens", "output_tokens"
		if l.InputLength != nil || l.OutputLength != nil {
			return TraceEntry{}, errors.New("input_length/output_length belong to the Mooncake format (timestamp); the offsets format has input_tokens and output_tokens")
		}
	case l.Timestamp != nil:
		if l.InputTokens != nil || l.OutputTokens != nil {
			return TraceEntry{}, errors.New("input_tokens/output_tokens belong to the offsets format (offset_ms); the Mooncake format has input_length and output_length")
		}
	default:
		return TraceEntry{}, errors.New("timestamp (Mooncake format) or offset_ms (offsets format) is required")
	}
	switch {
	case t.Format == "":
		t.Format = format
	case t.Format != format:
		return TraceEntry{}, fmt.Errorf("%s: this line is the %s format but the trace's first entry is the %s format", timeKey, format, t.Format)
	}
	e := TraceEntry{Line: line}
	switch v := *ts; {
	case math.IsNaN(v) || v < 0:
		return e, fmt.Errorf("%s: must be >= 0 milliseconds, got %v", timeKey, v)
	case v > float64(MaxTraceOffset/time.Millisecond):
		return e, fmt.Errorf("%s: must be at most %d ms (%s), got %v", timeKey, MaxTraceOffset/time.Millisecond, MaxTraceOffset, v)
	default:
		e.Offset = time.Duration(math.Round(v * float64(time.Millisecond)))
	}
	length := func(key string, p *int64) (int, error) {
		switch {
		case p == nil:
			return 0, fmt.Errorf("%s: required", key)
		case *p < 1:
			return 0, fmt.Errorf("%s: must be >= 1, got %d", key, *p)
		case *p > MaxLength:
			return 0, fmt.Errorf("%s: must be <= %d (the largest length llmprobe draws), got %d", key, MaxLength, *p)
		}
		return int(*p), nil
	}
	var err error
	if e.InputTokens, err = length(inKey, in); err != nil {
		return e, err
	}
	if e.OutputTokens, err = length(outKey, out); err != nil {
		return e, err
	}
	need := (e.InputTokens + t.BlockSize - 1) / t.BlockSize
	if len(l.HashIDs) > need {
		return e, fmt.Errorf("hash_ids: %d blocks of %d tokens, more than %s %d needs (%d); is the block size right?",
			len(l.HashIDs), t.BlockSize, inKey, e.InputTokens, need)
	}
	for i, id := range l.HashIDs {
		if id < 0 {
			return e, fmt.Errorf("hash_ids[%d]: must be >= 0, got %d", i, id)
		}
	}
	if len(l.HashIDs) > 0 {
		e.HashIDs = l.HashIDs
	}
	return e, nil
}

// jsonLineError words a decoding error, naming the field when it has one.
func jsonLineError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Errorf("%s: want %s, got a JSON %s", te.Field, jsonkind.Describe(te.Type), te.Value)
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		msg = "incomplete JSON object"
	}
	return fmt.Errorf("not a trace entry: %s", msg)
}

// blockKey is a hash id at a block position.
type blockKey struct {
	pos int32
	id  int64
}

// shareBlocks sets every entry's SharedTokens and Repeat, in offset order.
func (t *Trace) shareBlocks() {
	seen := make(map[blockKey]struct{}, t.HashIDs)
	type promptKey struct {
		in  int
		ids string
	}
	prompts := map[promptKey]struct{}{}
	var buf []byte
	for i := range t.Entries {
		e := &t.Entries[i]
		k := 0
		for k < len(e.HashIDs) {
			if _, ok := seen[blockKey{int32(k), e.HashIDs[k]}]; !ok {
				break
			}
			k++
		}
		e.SharedTokens = min(k*t.BlockSize, e.InputTokens)
		for j, id := range e.HashIDs {
			seen[blockKey{int32(j), id}] = struct{}{}
		}
		if len(e.HashIDs)*t.BlockSize >= e.InputTokens {
			buf = buf[:0]
			for _, id := range e.HashIDs {
				buf = append(strconv.AppendInt(buf, id, 10), ',')
			}
			pk := promptKey{e.InputTokens, string(buf)}
			_, e.Repeat = prompts[pk]
			prompts[pk] = struct{}{}
		}
	}
}

// Span returns the offset of the last entry (the first is at 0 for a
// Mooncake trace).
func (t *Trace) Span() time.Duration { return t.Entries[len(t.Entries)-1].Offset }

// Cut returns how many of the first entries a replay at speed sends:
// the first n (n > 0), and only those whose offset / speed is below d (d >
// 0), at least one.
func (t *Trace) Cut(n int, d time.Duration, speed float64) int {
	k := len(t.Entries)
	if n > 0 {
		k = min(k, n)
	}
	if d > 0 && speed > 0 {
		k = max(1, min(k, sortSearch(k, func(i int) bool { return float64(t.Entries[i].Offset)/speed >= float64(d) })))
	}
	return k
}

func sortSearch(n int, f func(int) bool) int {
	lo, hi := 0, n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if !f(m) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// TraceRequest is one request of a trace as workload statistics see it.
type TraceRequest struct {
	// Offset is the send time from the start at speed 1.
	Offset time.Duration
	// InputTokens and OutputTokens are the request's lengths.
	InputTokens, OutputTokens int
	// SharedPrefixTokens is TraceEntry.SharedTokens: BlockSize times the
	// number of leading hash ids already seen at the same positions in an
	// earlier request (at most InputTokens).
	SharedPrefixTokens int
}

// Requests returns the trace's requests in offset order, without their
// hash ids (for `llmprobe workload stats`).
func (t *Trace) Requests() []TraceRequest {
	out := make([]TraceRequest, len(t.Entries))
	for i, e := range t.Entries {
		out[i] = TraceRequest{Offset: e.Offset, InputTokens: e.InputTokens, OutputTokens: e.OutputTokens, SharedPrefixTokens: e.SharedTokens}
	}
	return out
}

// PrefixShare returns the shared prefix tokens of the first n entries
// over their input tokens (SharedTokens / InputTokens summed; 0 without
// hash ids). n <= 0 or beyond the trace means every entry.
func (t *Trace) PrefixShare(n int) (shared, input int64) {
	if n <= 0 || n > len(t.Entries) {
		n = len(t.Entries)
	}
	for _, e := range t.Entries[:n] {
		shared += int64(e.SharedTokens)
		input += int64(e.InputTokens)
	}
	return shared, input
}

// Longest returns the entry among the first n (all when n <= 0) with the
// most input + output tokens.
func (t *Trace) Longest(n int) TraceEntry {
	if n <= 0 || n > len(t.Entries) {
		n = len(t.Entries)
	}
	best := t.Entries[0]
	for _, e := range t.Entries[1:n] {
		if e.InputTokens+e.OutputTokens > best.InputTokens+best.OutputTokens {
			best = e
		}
	}
	return best
}
