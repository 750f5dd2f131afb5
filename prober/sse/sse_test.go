package sse

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

// chunkReader returns one chunk per Read (split further only when p is
// shorter), then err (io.EOF when nil).
type chunkReader struct {
	chunks [][]byte
	err    error
}

func (r *chunkReader) Read(p []byte) (int, error) {
	for len(r.chunks) > 0 && len(r.chunks[0]) == 0 {
		r.chunks = r.chunks[1:]
	}
	if len(r.chunks) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		return 0, io.EOF
	}
	n := copy(p, r.chunks[0])
	r.chunks[0] = r.chunks[0][n:]
	return n, nil
}

func newChunkReader(err error, chunks ...string) *chunkReader {
	r := &chunkReader{err: err}
	for _, c := range chunks {
		r.chunks = append(r.chunks, []byte(c))
	}
	return r
}

// tickClock returns base + k ms on its k-th call (k from 1), so an event's At
// tells which read completed it.
type tickClock struct {
	base time.Time
	n    int
}

func (c *tickClock) now() time.Time {
	c.n++
	return c.base.Add(time.Duration(c.n) * time.Millisecond)
}

type gotEvent struct {
	Data    string
	Type    string
	Read    int // 1-based index of the read that completed the event
	Partial bool
}

func collect(t *testing.T, p *Parser, clk *tickClock) ([]gotEvent, error) {
	t.Helper()
	var out []gotEvent
	for range 10000 {
		ev, err := p.Next()
		if err != nil {
			return out, err
		}
		out = append(out, gotEvent{
			Data:    string(ev.Data),
			Type:    string(ev.Type),
			Read:    int(ev.At.Sub(clk.base) / time.Millisecond),
			Partial: ev.Partial,
		})
	}
	t.Fatal("parser did not terminate")
	return nil, nil
}

func TestParser(t *testing.T) {
	errReset := errors.New("connection reset by peer")
	tests := []struct {
		name    string
		chunks  []string
		readErr error
		opts    Options
		want    []gotEvent
		wantErr error
	}{
		{
			name:    "empty body",
			wantErr: io.EOF,
		},
		{
			name:    "one event LF",
			chunks:  []string{"data: hello\n\n"},
			want:    []gotEvent{{Data: "hello", Read: 1}},
			wantErr: io.EOF,
		},
		{
			name:    "CRLF line ends",
			chunks:  []string{"data: a\r\n\r\ndata: b\r\n\r\n"},
			want:    []gotEvent{{Data: "a", Read: 1}, {Data: "b", Read: 1}},
			wantErr: io.EOF,
		},
		{
			name:    "lone CR line ends",
			chunks:  []string{"data: a\r\rdata: b\r\r"},
			want:    []gotEvent{{Data: "a", Read: 1}, {Data: "b", Read: 1}},
			wantErr: io.EOF,
		},
		{
			name:    "CRLF split between reads",
			chunks:  []string{"data: a\r", "\n\r", "\ndata: b\r", "\n\r\n"},
			want:    []gotEvent{{Data: "a", Read: 2}, {Data: "b", Read: 4}},
			wantErr: io.EOF,
		},
		{
			name:    "CRLF at end of read then blank line",
			chunks:  []string{"data\r\n", "\n"},
			want:    []gotEvent{{Data: "", Read: 2}},
			wantErr: io.EOF,
		},
		{
			name:    "CR at end of read then data",
			chunks:  []string{"data: a\r", "\r", "data: b\r\r"},
			want:    []gotEvent{{Data: "a", Read: 2}, {Data: "b", Read: 3}},
			wantErr: io.EOF,
		},
		{
			name:    "mixed line ends",
			chunks:  []string{"data: a\r\ndata: b\rdata: c\n\n"},
			want:    []gotEvent{{Data: "a\nb\nc", Read: 1}},
			wantErr: io.EOF,
		},
		{
			name:    "data without space",
			chunks:  []string{"data:x\n\ndata:  two spaces\n\n"},
			want:    []gotEvent{{Data: "x", Read: 1}, {Data: " two spaces", Read: 1}},
			wantErr: io.EOF,
		},
		{
			name:    "field without colon is an empty value",
			chunks:  []string{"data\n\ndata\ndata\n\n"},
			want:    []gotEvent{{Data: "", Read: 1}, {Data: "\n", Read: 1}},
			wantErr: io.EOF,
		},
		{
			name:    "multi-line data joined with LF",
			chunks:  []string{"data: {\"a\":\ndata: 1}\n\n"},
			want:    []gotEvent{{Data: "{\"a\":\n1}", Read: 1}},
			wantErr: io.EOF,
		},
		{
			name:    "event split across many reads",
			chunks:  []string{"da", "ta: {\"choi", "ces\":[]}", "\n", "\n"},
			want:    []gotEvent{{Data: "{\"choices\":[]}", Read: 5}},
			wantErr: io.EOF,
		},
		{
			name:   "several events in one read",
			chunks: []string{"data: 1\n\ndata: 2\n\ndata: 3\n\n", "data: 4\n\n"},
			want: []gotEvent{
				{Data: "1", Read: 1}, {Data: "2", Read: 1}, {Data: "3", Read: 1}, {Data: "4", Read: 2},
			},
			wantErr: io.EOF,
		},
		{
			name:    "comments and keep-alives ignored",
			chunks:  []string{": ping\n\n", ":\n", "data: a\n: inside\n\n", ": bye\n"},
			want:    []gotEvent{{Data: "a", Read: 3}},
			wantErr: io.EOF,
		},
		{
			name:    "blank lines without data dispatch nothing",
			chunks:  []string{"\n\n\n\r\n\r\r", "data: a\n\n"},
			want:    []gotEvent{{Data: "a", Read: 2}},
			wantErr: io.EOF,
		},
		{
			name:    "event type kept and reset",
			chunks:  []string{"event: error\ndata: boom\n\ndata: next\n\nevent: lost\n\ndata: x\n\n"},
			want:    []gotEvent{{Data: "boom", Type: "error", Read: 1}, {Data: "next", Read: 1}, {Data: "x", Read: 1}},
			wantErr: io.EOF,
		},
		{
			name:    "id retry and unknown fields ignored",
			chunks:  []string{"id: 7\nretry: 10\nfoo: bar\ndata: a\n\n"},
			want:    []gotEvent{{Data: "a", Read: 1}},
			wantErr: io.EOF,
		},
		{
			name:    "field names are case sensitive",
			chunks:  []string{"Data: a\nDATA: b\ndata: c\n\n"},
			want:    []gotEvent{{Data: "c", Read: 1}},
			wantErr: io.EOF,
		},
		{
			name:    "DONE sentinel",
			chunks:  []string{"data: {\"choices\":[{\"text\":\"a\"}]}\n\n", "data: [DONE]\n\n"},
			want:    []gotEvent{{Data: "{\"choices\":[{\"text\":\"a\"}]}", Read: 1}, {Data: "[DONE]", Read: 2}},
			wantErr: io.EOF,
		},
		{
			name:    "leading BOM stripped",
			chunks:  []string{"\xEF\xBB", "\xBFdata: a\n\n"},
			want:    []gotEvent{{Data: "a", Read: 2}},
			wantErr: io.EOF,
		},
		{
			name:    "only the first BOM is stripped",
			chunks:  []string{"\xEF\xBB\xBF\xEF\xBB\xBFdata: a\n\ndata: b\n\n"},
			want:    []gotEvent{{Data: "b", Read: 1}},
			wantErr: io.EOF,
		},
		{
			name:    "partial event at EOF handed out marked",
			chunks:  []string{"data: a\n\ndata: [DONE]"},
			want:    []gotEvent{{Data: "a", Read: 1}, {Data: "[DONE]", Read: 1, Partial: true}},
			wantErr: io.EOF,
		},
		{
			name:    "terminated data line without blank line at EOF",
			chunks:  []string{"data: a\n"},
			want:    []gotEvent{{Data: "a", Read: 1, Partial: true}},
			wantErr: io.EOF,
		},
		{
			name:    "unterminated comment at EOF",
			chunks:  []string{"data: a\n\n: bye"},
			want:    []gotEvent{{Data: "a", Read: 1}},
			wantErr: io.EOF,
		},
		{
			name:    "read error after events",
			chunks:  []string{"data: a\n\ndata: b"},
			readErr: errReset,
			want:    []gotEvent{{Data: "a", Read: 1}},
			wantErr: errReset,
		},
		{
			name:    "event over max size",
			chunks:  []string{"data: 0123456789\n\n", "data: 0123456789a\n\n"},
			opts:    Options{MaxEventBytes: 10},
			want:    []gotEvent{{Data: "0123456789", Read: 1}},
			wantErr: ErrTooLarge,
		},
		{
			name:    "joined data over max size",
			chunks:  []string{"data: 01234\ndata: 56789\n\n"},
			opts:    Options{MaxEventBytes: 10},
			wantErr: ErrTooLarge,
		},
		{
			name:    "endless line without terminator",
			chunks:  []string{strings.Repeat("x", 100), strings.Repeat("x", 100)},
			opts:    Options{MaxEventBytes: 50, BufferSize: 16},
			wantErr: ErrTooLarge,
		},
		{
			name:    "endless comment without terminator",
			chunks:  []string{":" + strings.Repeat("x", 1000)},
			opts:    Options{MaxEventBytes: 50, BufferSize: 16},
			wantErr: ErrTooLarge,
		},
		{
			name:    "body over max size",
			chunks:  []string{"data: a\n\n", ": keep-alive\n", ": keep-alive\n"},
			opts:    Options{MaxBodyBytes: 20},
			want:    []gotEvent{{Data: "a", Read: 1}},
			wantErr: ErrTooLarge,
		},
		{
			name:    "events within the body bound in the same read come first",
			chunks:  []string{"data: a\n\ndata: bbbbbbbb\n\n"},
			opts:    Options{MaxBodyBytes: 12},
			want:    []gotEvent{{Data: "a", Read: 1}},
			wantErr: ErrTooLarge,
		},
		{
			name:    "buffer grows for a long line",
			chunks:  []string{"data: " + strings.Repeat("y", 100) + "\n\n"},
			opts:    Options{BufferSize: 8},
			want:    []gotEvent{{Data: strings.Repeat("y", 100), Read: 5}}, // 8+8+16+32+44 bytes
			wantErr: io.EOF,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := &tickClock{base: time.Unix(1000, 0)}
			o := tt.opts
			o.Now = clk.now
			p := NewParser(newChunkReader(tt.readErr, tt.chunks...), o)
			got, err := collect(t, p, clk)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error = %v, want %v", err, tt.wantErr)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("events\n got %+v\nwant %+v", got, tt.want)
			}
			// Errors are sticky.
			if _, err2 := p.Next(); !errors.Is(err2, tt.wantErr) {
				t.Fatalf("second error = %v, want %v", err2, tt.wantErr)
			}
		})
	}
}

func TestParserReset(t *testing.T) {
	p := NewParser(strings.NewReader("data: a\n\ndata: partial"), Options{})
	if ev, err := p.Next(); err != nil || string(ev.Data) != "a" {
		t.Fatalf("Next = %q, %v", ev.Data, err)
	}
	p.Reset(strings.NewReader("data: b\n\n"))
	if ev, err := p.Next(); err != nil || string(ev.Data) != "b" || ev.Partial {
		t.Fatalf("after Reset Next = %q partial=%v, %v", ev.Data, ev.Partial, err)
	}
	if _, err := p.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("end = %v, want io.EOF", err)
	}
	if p.BytesRead() != int64(len("data: b\n\n")) {
		t.Fatalf("BytesRead = %d", p.BytesRead())
	}
}

func TestParserTimestampPerRead(t *testing.T) {
	// The event's time is the time its last byte arrived, not the time Next
	// is called: events buffered by one read share that read's time.
	clk := &tickClock{base: time.Unix(0, 0)}
	p := NewParser(newChunkReader(nil, "data: 1\n\ndata: 2\n\n", ": ping\n", "data: 3\n", "\n"), Options{Now: clk.now})
	var reads []int
	for {
		ev, err := p.Next()
		if err != nil {
			break
		}
		reads = append(reads, int(ev.At.Sub(clk.base)/time.Millisecond))
	}
	if fmt.Sprint(reads) != "[1 1 4]" {
		t.Fatalf("reads = %v, want [1 1 4]", reads)
	}
	if p.Comments() != 1 {
		t.Fatalf("Comments = %d, want 1", p.Comments())
	}
}

type zeroReader struct{}

func (zeroReader) Read([]byte) (int, error) { return 0, nil }

func TestParserNoProgress(t *testing.T) {
	p := NewParser(zeroReader{}, Options{})
	if _, err := p.Next(); !errors.Is(err, io.ErrNoProgress) {
		t.Fatalf("error = %v, want io.ErrNoProgress", err)
	}
}

func TestEventIsDone(t *testing.T) {
	tests := []struct {
		name string
		data string
		want bool
	}{
		{name: "done", data: "[DONE]", want: true},
		{name: "json", data: `{"choices":[]}`},
		{name: "done with space", data: " [DONE]"},
		{name: "lower case", data: "[done]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := Event{Data: []byte(tt.data)}
			if got := ev.IsDone(); got != tt.want {
				t.Fatalf("IsDone(%q) = %v, want %v", tt.data, got, tt.want)
			}
		})
	}
}

// refEvent and refParse are a deliberately naive reading of the SSE
// standard over a whole input, the oracle for the fuzz target.
type refEvent struct {
	data, typ string
	partial   bool
}

func refParse(in []byte) (events []refEvent, longestLine, longestData int) {
	s := string(in)
	s = strings.TrimPrefix(s, "\xEF\xBB\xBF")
	var lines []string
	var cur strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\r':
			lines = append(lines, cur.String())
			cur.Reset()
			if i+1 < len(s) && s[i+1] == '\n' {
				i++
			}
		case '\n':
			lines = append(lines, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	if cur.Len() > 0 {
		lines = append(lines, cur.String())
	}
	var data, typ strings.Builder
	hasData := false
	for _, l := range lines {
		longestLine = max(longestLine, len(l))
		if l == "" {
			if hasData {
				d := data.String()
				events = append(events, refEvent{data: d[:len(d)-1], typ: typ.String()})
				longestData = max(longestData, len(d)-1)
			}
			data.Reset()
			typ.Reset()
			hasData = false
			continue
		}
		if l[0] == ':' {
			continue
		}
		field, value := l, ""
		if i := strings.IndexByte(l, ':'); i >= 0 {
			field, value = l[:i], strings.TrimPrefix(l[i+1:], " ")
		}
		switch field {
		case "data":
			data.WriteString(value)
			data.WriteByte('\n')
			hasData = true
			longestData = max(longestData, data.Len()-1)
		case "event":
			typ.Reset()
			typ.WriteString(value)
		}
	}
	if hasData {
		d := data.String()
		events = append(events, refEvent{data: d[:len(d)-1], typ: typ.String(), partial: true})
	}
	return events, longestLine, longestData
}

// splitReader hands out its input in pseudo-random read sizes.
type splitReader struct {
	b    []byte
	seed uint32
}

func (r *splitReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	r.seed = r.seed*1664525 + 1013904223
	n := int(r.seed>>24)%7 + 1
	n = min(n, len(p), len(r.b))
	copy(p, r.b[:n])
	r.b = r.b[n:]
	return n, nil
}

func parseAll(r io.Reader, o Options) ([]refEvent, error) {
	p := NewParser(r, o)
	var out []refEvent
	for {
		ev, err := p.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return out, err
		}
		out = append(out, refEvent{data: string(ev.Data), typ: string(ev.Type), partial: ev.Partial})
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: [DONE]\n\n",
		"data:x\r\n\r\n: ping\r\ndata\rdata: y\r\r",
		"event: error\ndata: {\"error\":{}}\n\n",
		"\xEF\xBB\xBFdata: a\n\ndata: b",
		"data: a\r",
		"\r\n\r\n\n\r",
	} {
		f.Add([]byte(s), uint32(1))
	}
	f.Fuzz(func(t *testing.T, in []byte, seed uint32) {
		want, longestLine, longestData := refParse(in)
		// Whole input in one read and in random small reads agree with
		// the oracle.
		for _, r := range []io.Reader{bytes.NewReader(in), &splitReader{b: in, seed: seed}} {
			got, err := parseAll(r, Options{BufferSize: 4})
			if err != nil {
				t.Fatalf("%T: error %v", r, err)
			}
			if !slicesEqual(got, want) {
				t.Fatalf("%T: events\n got %#v\nwant %#v", r, got, want)
			}
		}
		// With a small bound: either the same events, or ErrTooLarge for
		// input that really has a line or event over the bound.
		const limit = 16
		got, err := parseAll(&splitReader{b: in, seed: seed}, Options{MaxEventBytes: limit})
		switch {
		case err == nil:
			if !slicesEqual(got, want) {
				t.Fatalf("bounded: events\n got %#v\nwant %#v", got, want)
			}
		case errors.Is(err, ErrTooLarge):
			if longestLine <= limit+lineSlack && longestData <= limit {
				t.Fatalf("bounded: ErrTooLarge with longest line %d, data %d", longestLine, longestData)
			}
			if len(got) > len(want) || !slicesEqual(got, want[:len(got)]) {
				t.Fatalf("bounded: events before error\n got %#v\nwant prefix of %#v", got, want)
			}
		default:
			t.Fatalf("bounded: error %v", err)
		}
	})
}

func slicesEqual(a, b []refEvent) bool {
	return len(a) == len(b) && (len(a) == 0 || reflect.DeepEqual(a, b))
}
