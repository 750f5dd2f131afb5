package workload

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadTraceMooncake(t *testing.T) {
	tr, err := LoadTrace("testdata/trace/mooncake.jsonl", TraceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Format != TraceMooncake || tr.BlockSize != 512 || tr.Reordered != 0 || tr.Rebased != time.Second || tr.HashIDs != 16 {
		t.Fatalf("format %q block %d reordered %d rebased %s hash ids %d", tr.Format, tr.BlockSize, tr.Reordered, tr.Rebased, tr.HashIDs)
	}
	b, _ := os.ReadFile("testdata/trace/mooncake.jsonl")
	if !strings.HasPrefix(tr.SHA256, "sha256:") || len(tr.SHA256) != 7+64 {
		t.Fatalf("sha256 %q", tr.SHA256)
	}
	if again, _ := ParseTrace("x", bytes.NewReader(b), TraceOptions{}); again.SHA256 != tr.SHA256 {
		t.Fatalf("the hash is not of the file's bytes: %s vs %s", again.SHA256, tr.SHA256)
	}
	want := []struct {
		line, in, out, shared int
		off                   time.Duration
	}{
		{1, 1200, 8, 0, 0},
		{2, 1100, 4, 1024, 0},
		{3, 600, 16, 512, 250 * time.Millisecond},
		{4, 300, 2, 0, 500 * time.Millisecond}, // id 5 at position 0 is new
		{6, 1536, 8, 1536, 800 * time.Millisecond},
		{7, 2000, 32, 1024, 1100 * time.Millisecond},
	}
	if len(tr.Entries) != len(want) {
		t.Fatalf("%d entries, want %d", len(tr.Entries), len(want))
	}
	for i, w := range want {
		e := tr.Entries[i]
		if e.Line != w.line || e.InputTokens != w.in || e.OutputTokens != w.out || e.SharedTokens != w.shared || e.Offset != w.off {
			t.Errorf("entry %d: %+v, want %+v", i, e, w)
		}
	}
	if tr.Span() != 1100*time.Millisecond {
		t.Errorf("span %s", tr.Span())
	}
	if s, in := tr.PrefixShare(0); s != 4096 || in != 6736 {
		t.Errorf("prefix share %d / %d", s, in)
	}
	reqs := tr.Requests()
	if len(reqs) != 6 || reqs[4].SharedPrefixTokens != 1536 || reqs[5].Offset != 1100*time.Millisecond || reqs[5].InputTokens != 2000 {
		t.Errorf("requests %+v", reqs)
	}
	if l := tr.Longest(0); l.Line != 7 {
		t.Errorf("longest line %d", l.Line)
	}
	for _, c := range []struct {
		n     int
		d     time.Duration
		speed float64
		want  int
	}{
		{0, 0, 1, 6}, {3, 0, 1, 3}, {0, 500 * time.Millisecond, 1, 3}, {0, 500 * time.Millisecond, 2, 5},
		{2, 500 * time.Millisecond, 2, 2}, {0, time.Nanosecond, 1, 2}, {100, 0, 1, 6},
	} {
		if got := tr.Cut(c.n, c.d, c.speed); got != c.want {
			t.Errorf("Cut(%d, %s, %v) = %d, want %d", c.n, c.d, c.speed, got, c.want)
		}
	}
}

func TestLoadTraceOffsetsSorted(t *testing.T) {
	tr, err := LoadTrace("testdata/trace/offsets.jsonl", TraceOptions{BlockSize: 256})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Format != TraceOffsets || tr.Reordered != 1 || tr.Rebased != 0 {
		t.Fatalf("format %q reordered %d rebased %s", tr.Format, tr.Reordered, tr.Rebased)
	}
	var lines []int
	for _, e := range tr.Entries {
		lines = append(lines, e.Line)
	}
	if fmt.Sprint(lines) != "[1 3 2 4]" || tr.Entries[2].Offset != 100500*time.Microsecond {
		t.Fatalf("lines %v, offsets %v", lines, tr.Entries)
	}
	if e := tr.Entries[3]; len(e.HashIDs) != 1 || e.SharedTokens != 0 {
		t.Fatalf("last entry %+v", e)
	}
}

func TestLoadTraceInvalid(t *testing.T) {
	f := func(file, want string) {
		t.Helper()
		path := filepath.Join("testdata/trace", file)
		_, err := LoadTrace(path, TraceOptions{})
		if err == nil {
			t.Errorf("%s: no error", file)
			return
		}
		if got := err.Error(); got != path+":"+want && got != "trace "+path+": "+want && got != "trace: "+want {
			t.Errorf("%s:\n got  %s\n want %s", file, got, want)
		}
	}
	f("invalid-input-zero.jsonl", "2: input_length: must be >= 1, got 0")
	f("invalid-mixed.jsonl", "2: offset_ms: this line is the offsets format but the trace's first entry is the mooncake format")
	f("invalid-missing-output.jsonl", "2: output_tokens: required")
	f("invalid-negative.jsonl", "2: timestamp: must be >= 0 milliseconds, got -3")
	f("invalid-hash-ids.jsonl", "2: hash_ids: 3 blocks of 512 tokens, more than input_length 600 needs (2); is the block size right?")
	f("invalid-type.jsonl", "3: input_tokens: want an integer, got a JSON string")
	f("invalid-unknown-key.jsonl", `1: not a trace entry: unknown field "prompt"`)
	f("invalid-no-span.jsonl", "every entry is at the same time: a replay needs a span (all at once is a burst: --rates inf)")
	f("invalid-too-long.jsonl", "2: input_tokens: must be <= 1048576 (the largest length llmprobe draws), got 2000000")
	f("invalid-truncated.jsonl", "2: not a trace entry: incomplete JSON object")
	f("missing.jsonl", "open testdata/trace/missing.jsonl: no such file or directory")
}

func TestParseTraceBounds(t *testing.T) {
	line := `{"offset_ms": 0, "input_tokens": 10, "output_tokens": 1}` + "\n"
	padded := `{"offset_ms": 0, "input_tokens": 10,` + strings.Repeat(" ", 1000) + `"output_tokens": 1}` + "\n"
	if _, err := ParseTrace("big", strings.NewReader(strings.Repeat(padded, MaxTraceBytes/len(padded)+1)), TraceOptions{}); err == nil ||
		err.Error() != "trace big: the file is larger than the cap of 67108864 bytes" {
		t.Errorf("size cap: %v", err)
	}
	long := `{"offset_ms": 0, "input_tokens": 10, "output_tokens": 1, "hash_ids": [` + strings.Repeat("1,", MaxTraceLineBytes/2) + "1]}\n"
	if _, err := ParseTrace("long", strings.NewReader(line+long), TraceOptions{}); err == nil ||
		err.Error() != "long:2: the line is longer than 1048576 bytes" {
		t.Errorf("line cap: %v", err)
	}
	if _, err := ParseTrace("bs", strings.NewReader(line), TraceOptions{BlockSize: -1}); err == nil ||
		err.Error() != "trace bs: block size must be in [1, 65536], got -1" {
		t.Errorf("block size: %v", err)
	}
	if _, err := ParseTrace("empty", strings.NewReader("\n\n"), TraceOptions{}); err == nil || err.Error() != "trace empty: no entries" {
		t.Errorf("empty: %v", err)
	}
}

// wordTokenizer counts one token per word plus overhead, like the
// simulator's tokenizer with a BOS token.
type wordTokenizer struct{ overhead int }

func (w wordTokenizer) Count(_ context.Context, s string) (int, error) {
	return len(strings.Fields(s)) + w.overhead, nil
}

// byteTokenizer counts a token per 3 bytes (no word is one token), which
// sends the trace prompts down the tokenizer-sized path.
type byteTokenizer struct{}

func (byteTokenizer) Count(_ context.Context, s string) (int, error) { return 1 + (len(s)+2)/3, nil }

func TestTracePromptsSharedPrefixes(t *testing.T) {
	const bs = 8
	lines := []string{
		`{"timestamp": 0, "input_length": 30, "output_length": 3, "hash_ids": [1, 2, 3, 4]}`,
		`{"timestamp": 1, "input_length": 30, "output_length": 3, "hash_ids": [1, 2, 5, 6]}`,
		`{"timestamp": 2, "input_length": 20, "output_length": 3, "hash_ids": [7, 2, 3]}`,
		`{"timestamp": 3, "input_length": 30, "output_length": 3, "hash_ids": [1, 2, 3, 4]}`,
		`{"timestamp": 4, "input_length": 40, "output_length": 3, "hash_ids": [1]}`,
		`{"timestamp": 5, "input_length": 40, "output_length": 3}`,
	}
	tr, err := ParseTrace("t", strings.NewReader(strings.Join(lines, "\n")), TraceOptions{BlockSize: bs})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		tok   Tokenizer
		sized bool
	}{
		{"one-token words", &wordTokenizer{overhead: 1}, false},
		{"sized blocks", &byteTokenizer{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewTracePrompts(tr, 0)
			ctx := context.Background()
			items := make([]Item, len(tr.Entries))
			for i := range items {
				if items[i], err = p.At(ctx, tc.tok, 42, i); err != nil {
					t.Fatal(err)
				}
				it := items[i]
				if it.InputTokens != tr.Entries[i].InputTokens || it.OutputTokens != 3 {
					t.Fatalf("item %d lengths %d/%d", i, it.InputTokens, it.OutputTokens)
				}
				if c, _ := tc.tok.Count(ctx, it.Prompt); !tc.sized && (c != it.PromptTokens || !it.Exact()) {
					t.Fatalf("item %d: counted %d, claimed %d, want %d", i, c, it.PromptTokens, it.InputTokens)
				}
			}
			info := p.Info()
			if info.Sized != tc.sized {
				t.Fatalf("info %+v", info)
			}
			words := func(i int) []string { return strings.Fields(items[i].Prompt) }
			common := func(a, b int) int {
				x, y := words(a), words(b)
				n := 0
				for n < len(x) && n < len(y) && x[n] == y[n] {
					n++
				}
				return n
			}
			if items[0].Prompt != items[3].Prompt {
				t.Error("the same hash ids and length gave different prompts")
			}
			if !tc.sized {
				// Overhead 1: the body is 29 tokens, blocks of 8.
				if n := common(0, 1); n < 2*bs || n > 2*bs+3 {
					t.Errorf("entries 0 and 1 share two blocks: %d common words", n)
				}
				if n := common(0, 2); n > 3 {
					t.Errorf("entries 0 and 2 differ at block 0: %d common words", n)
				}
				if n := common(0, 4); n < bs || n > bs+3 {
					t.Errorf("entries 0 and 4 share one block: %d common words", n)
				}
				// Block 1 of id 2 is the same text in entries 0 and 2, but
				// behind different first blocks.
				if strings.Join(words(0)[bs:2*bs], " ") != strings.Join(words(2)[bs:2*bs], " ") {
					t.Error("the same id at the same position gave different text")
				}
			} else if common(0, 1) == 0 || common(0, 2) > 3 {
				t.Errorf("sized: common words 0/1 %d, 0/2 %d", common(0, 1), common(0, 2))
			}
			if common(5, 4) > 3 || common(5, 0) > 3 {
				t.Error("an entry without hash ids shares a prefix")
			}
			other, err := p.At(ctx, tc.tok, 43, 0)
			if err != nil {
				t.Fatal(err)
			}
			if other.Prompt == items[0].Prompt {
				t.Error("another seed gave the same blocks")
			}
		})
	}
}

func TestTracePromptsCacheBudget(t *testing.T) {
	var lines []string
	for i := range 40 {
		lines = append(lines, fmt.Sprintf(`{"offset_ms": %d, "input_tokens": 64, "output_tokens": 1, "hash_ids": [%d, %d]}`, i, i%3, i))
	}
	tr, err := ParseTrace("t", strings.NewReader(strings.Join(lines, "\n")), TraceOptions{BlockSize: 32})
	if err != nil {
		t.Fatal(err)
	}
	p := NewTracePrompts(tr, 4096)
	tok := &byteTokenizer{}
	for i := range tr.Entries {
		if _, err := p.At(context.Background(), tok, 1, i); err != nil {
			t.Fatal(err)
		}
	}
	info := p.Info()
	if !info.Sized || info.CacheBytes > 4096 || info.Evictions == 0 || info.CacheBytes == 0 {
		t.Fatalf("cache %+v", info)
	}
	// A shared block still in the cache costs no tokenizer call.
	calls := info.TokenizeCalls
	if _, err := p.At(context.Background(), tok, 1, len(tr.Entries)-1); err != nil {
		t.Fatal(err)
	}
	if got := p.Info().TokenizeCalls; got != calls {
		t.Errorf("a cached item took %d tokenizer calls", got-calls)
	}
}
