// Package sse owns incremental parsing of a Server-Sent-Events stream (the
// body of a streaming OpenAI-compatible response) as specified by the WHATWG
// HTML standard, section "Server-sent events": it reads from an io.Reader as
// bytes arrive and yields one Event per dispatched event, stamped with the
// monotonic time at which the read that completed it returned.
//
// The parser is built for the per-token hot path: after warm-up it allocates
// nothing per event, and the byte slices it hands out alias its own buffers
// (valid until the next call). Memory is bounded by Options.MaxEventBytes and
// Options.MaxBodyBytes; exceeding either yields ErrTooLarge.
package sse

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"
)

// Defaults of Options.
const (
	// DefaultMaxEventBytes bounds one event's joined data and any one line.
	DefaultMaxEventBytes = 1 << 20
	// DefaultBufferSize is the initial read buffer size; the buffer grows
	// (doubling) only to hold a line longer than it, up to the event bound.
	DefaultBufferSize = 8 << 10
	// lineSlack is the room a line may take beyond MaxEventBytes for its
	// field name ("data: ") and line terminator.
	lineSlack = 16
	// maxEmptyReads bounds consecutive (0, nil) reads before giving up.
	maxEmptyReads = 100
)

// ErrTooLarge is returned (wrapped) when one event or line is larger than
// Options.MaxEventBytes, or the body is larger than Options.MaxBodyBytes.
var ErrTooLarge = errors.New("sse: event or body too large")

// doneData is the data of the sentinel event that OpenAI-compatible servers
// send last ("data: [DONE]").
var doneData = []byte("[DONE]")

// Options configures a Parser. The zero value is usable.
type Options struct {
	// MaxEventBytes bounds the joined data of one event and the length of
	// any single line (plus a few bytes for the field name and terminator).
	// 0 means DefaultMaxEventBytes.
	MaxEventBytes int
	// MaxBodyBytes bounds the total number of bytes read from the stream;
	// events complete within the bound are handed out, then ErrTooLarge.
	// 0 means no bound (memory stays bounded by MaxEventBytes regardless).
	MaxBodyBytes int64
	// BufferSize is the initial read buffer size; 0 means DefaultBufferSize.
	BufferSize int
	// Now returns the current time; nil means time.Now. Tests inject a
	// fake clock here.
	Now func() time.Time
}

// Event is one dispatched SSE event. Its byte slices alias the Parser's
// buffers and are valid only until the next call to Next or Reset.
type Event struct {
	// Data is the event's data: the values of its "data" fields joined by
	// "\n" (an event with a lone "data" field has empty, non-nil Data).
	Data []byte
	// Type is the value of the last "event" field; empty means "message".
	Type []byte
	// At is when the read that delivered the event's last byte returned
	// (monotonic clock). Several events delivered by one read share it.
	At time.Time
	// Partial is set on an event that the stream ended in the middle of
	// (no terminating blank line). The SSE standard discards such an
	// event; it is handed out, marked, so that callers can decide (a final
	// "data: [DONE]" without its blank line is common).
	Partial bool
}

// IsDone reports whether e is the "[DONE]" sentinel.
func (e *Event) IsDone() bool { return bytes.Equal(e.Data, doneData) }

// Parser reads SSE events from a stream. It is not safe for concurrent use;
// one goroutine owns it (per stream). Reset lets a Parser, and its buffers,
// be reused for another stream.
type Parser struct {
	r   io.Reader
	now func() time.Time

	maxEvent int
	maxLine  int
	maxBody  int64

	buf  []byte // read buffer; unprocessed bytes are buf[rd:wr]
	rd   int
	wr   int
	data []byte // data buffer of the event being built, each line + '\n'
	typ  []byte // event type buffer

	hasData    bool  // a data field was seen in the event being built
	skipLF     bool  // last line ended with '\r' at the end of the buffer
	bomChecked bool  // the leading byte order mark was handled
	reset      bool  // the data/type buffers are to be cleared on Next
	eof        bool  // the reader returned io.EOF
	err        error // sticky read error, returned once buffered lines are used
	at         time.Time
	total      int64
	comments   int
}

// NewParser returns a Parser reading from r.
func NewParser(r io.Reader, o Options) *Parser {
	p := &Parser{}
	p.init(o)
	p.Reset(r)
	return p
}

func (p *Parser) init(o Options) {
	p.maxEvent = o.MaxEventBytes
	if p.maxEvent <= 0 {
		p.maxEvent = DefaultMaxEventBytes
	}
	p.maxLine = p.maxEvent + lineSlack
	p.maxBody = o.MaxBodyBytes
	size := o.BufferSize
	if size <= 0 {
		size = DefaultBufferSize
	}
	size = min(size, p.maxLine+2)
	p.buf = make([]byte, size)
	p.now = o.Now
	if p.now == nil {
		p.now = time.Now
	}
}

// Reset makes p read a new stream from r, keeping its buffers and options.
func (p *Parser) Reset(r io.Reader) {
	p.r = r
	p.rd, p.wr = 0, 0
	p.data = p.data[:0]
	p.typ = p.typ[:0]
	p.hasData, p.skipLF, p.bomChecked, p.reset, p.eof = false, false, false, false, false
	p.err = nil
	p.at = time.Time{}
	p.total = 0
	p.comments = 0
}

// BytesRead is the number of bytes read from the stream so far.
func (p *Parser) BytesRead() int64 { return p.total }

// Comments is the number of comment lines (":" keep-alives) seen so far.
func (p *Parser) Comments() int { return p.comments }

// LastRead is when the most recent read that returned bytes returned (zero
// before the first one).
func (p *Parser) LastRead() time.Time { return p.at }

// Next returns the next event. At the end of the stream it returns io.EOF;
// when the stream ends in the middle of an event that has data, that event is
// returned first with Partial set. Read errors are returned as they are (after
// any events already buffered); an event or body over its bound yields an
// error wrapping ErrTooLarge. After an error, Next keeps returning it.
func (p *Parser) Next() (Event, error) {
	if p.reset {
		p.data = p.data[:0]
		p.typ = p.typ[:0]
		p.hasData = false
		p.reset = false
	}
	for {
		if !p.bomChecked && !p.checkBOM() {
			if err := p.fill(); err != nil {
				return Event{}, err
			}
			continue
		}
		b := p.buf[p.rd:p.wr]
		if p.skipLF && len(b) > 0 {
			p.skipLF = false
			if b[0] == '\n' {
				p.rd++
				b = b[1:]
			}
		}
		if len(b) > 0 {
			end, next := lineEnd(b)
			if end >= 0 {
				if next == end+1 && next == len(b) && b[end] == '\r' {
					p.skipLF = true // a '\n' may follow in the next read
				}
				p.rd += next
				ev, ok, err := p.line(b[:end])
				if err != nil {
					return Event{}, p.fail(err)
				}
				if ok {
					return ev, nil
				}
				continue
			}
			if len(b) > p.maxLine {
				return Event{}, p.fail(fmt.Errorf("%w: line longer than %d bytes", ErrTooLarge, p.maxLine))
			}
		}
		if p.eof {
			return p.finish()
		}
		if p.err != nil {
			return Event{}, p.err
		}
		if err := p.fill(); err != nil {
			return Event{}, err
		}
	}
}

// checkBOM strips a leading UTF-8 byte order mark. It reports false when
// more bytes are needed to decide.
func (p *Parser) checkBOM() bool {
	const bom = "\xEF\xBB\xBF"
	b := p.buf[p.rd:p.wr]
	if len(b) < len(bom) && !p.eof && p.err == nil && bytes.HasPrefix([]byte(bom), b) {
		return false
	}
	p.bomChecked = true
	if bytes.HasPrefix(b, []byte(bom)) {
		p.rd += len(bom)
	}
	return true
}

// fill reads more bytes into the buffer, compacting or growing it first.
// It returns a non-nil error only when nothing can be read any more and the
// error is not io.EOF (which is recorded in p.eof) or a too-large condition.
func (p *Parser) fill() error {
	if p.eof {
		return nil
	}
	if p.err != nil {
		return p.err
	}
	if p.rd > 0 {
		n := copy(p.buf, p.buf[p.rd:p.wr])
		p.rd, p.wr = 0, n
	}
	if p.wr == len(p.buf) {
		if len(p.buf) >= p.maxLine+2 {
			return p.fail(fmt.Errorf("%w: line longer than %d bytes", ErrTooLarge, p.maxLine))
		}
		nb := make([]byte, min(2*len(p.buf), p.maxLine+2))
		copy(nb, p.buf[:p.wr])
		p.buf = nb
	}
	for range maxEmptyReads {
		n, err := p.r.Read(p.buf[p.wr:])
		if n > 0 {
			p.at = p.now()
			p.wr += n
			p.total += int64(n)
			if p.maxBody > 0 && p.total > p.maxBody {
				// Events complete within the bound are still handed out.
				p.wr -= int(p.total - p.maxBody)
				p.total = p.maxBody
				p.err = fmt.Errorf("%w: body larger than %d bytes", ErrTooLarge, p.maxBody)
				return nil
			}
		}
		if errors.Is(err, io.EOF) {
			p.eof = true
			return nil
		}
		if err != nil {
			p.err = err
			if n > 0 {
				return nil // hand out what arrived first
			}
			return err
		}
		if n > 0 {
			return nil
		}
	}
	return p.fail(io.ErrNoProgress)
}

// fail makes err sticky and returns it.
func (p *Parser) fail(err error) error {
	p.err = err
	p.eof = false
	p.rd, p.wr = 0, 0
	return err
}

// finish handles the end of the stream: an unterminated last line is
// processed, and a pending event with data is handed out as Partial.
func (p *Parser) finish() (Event, error) {
	if p.rd < p.wr {
		line := p.buf[p.rd:p.wr]
		p.rd = p.wr
		if len(line) > 0 {
			if _, _, err := p.line(line); err != nil {
				return Event{}, p.fail(err)
			}
		}
	}
	if p.hasData {
		ev := p.event()
		ev.Partial = true
		return ev, nil
	}
	return Event{}, io.EOF
}

// lineEnd finds the first line terminator in b (CRLF, LF or lone CR). It
// returns the index where the line ends and where the next line starts, or
// -1, -1. A '\r' at the very end of b ends a line; the caller skips a '\n'
// that may follow it in the next read.
func lineEnd(b []byte) (end, next int) {
	lf := bytes.IndexByte(b, '\n')
	search := b
	if lf >= 0 {
		search = b[:lf]
	}
	if cr := bytes.IndexByte(search, '\r'); cr >= 0 {
		if cr+1 < len(b) && b[cr+1] == '\n' {
			return cr, cr + 2
		}
		return cr, cr + 1
	}
	if lf >= 0 {
		return lf, lf + 1
	}
	return -1, -1
}

// line processes one line (without its terminator). It reports an event
// when the line is blank and the event being built has data.
func (p *Parser) line(l []byte) (Event, bool, error) {
	if len(l) == 0 {
		if !p.hasData {
			p.typ = p.typ[:0]
			return Event{}, false, nil
		}
		return p.event(), true, nil
	}
	if l[0] == ':' {
		p.comments++
		return Event{}, false, nil
	}
	field, value := l, l[len(l):]
	if i := bytes.IndexByte(l, ':'); i >= 0 {
		field, value = l[:i], l[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(field) {
	case "data":
		if len(p.data)+len(value)+1 > p.maxEvent+1 {
			return Event{}, false, fmt.Errorf("%w: event data longer than %d bytes", ErrTooLarge, p.maxEvent)
		}
		p.data = append(p.data, value...)
		p.data = append(p.data, '\n')
		p.hasData = true
	case "event":
		p.typ = append(p.typ[:0], value...)
	}
	// "id" and "retry" only matter for reconnection, which a measuring
	// client never does; other fields are ignored as the standard says.
	return Event{}, false, nil
}

// event builds the event from the buffers; they are cleared on the next call.
func (p *Parser) event() Event {
	p.reset = true
	return Event{
		Data: p.data[: len(p.data)-1 : len(p.data)-1],
		Type: p.typ,
		At:   p.at,
	}
}
