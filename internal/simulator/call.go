package simulator

// A call: one HTTP request being served, its writer and trace record, and
// what every handler does with it (the request preamble, waiting on the
// engine, writing events and answers, the faults that end a connection).

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/go-kit/log/level"
)

// call is the per-request response state: the writer, its controller, the
// slow-drip setting and the trace record being filled.
type call struct {
	s       *Simulator
	w       http.ResponseWriter
	rc      *http.ResponseController
	ctx     context.Context
	drip    time.Duration
	dripped bool
	tr      TraceRecord
	buf     []byte
	// anthropic: errors in the Messages API's shape (messages.go).
	anthropic bool
}

var errInterrupted = errors.New("interrupted")

// sleep waits d; false when the client left or the simulator stops first.
func (c *call) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.ctx.Done():
	case <-c.s.quit:
	case <-c.s.done:
	}
	return false
}

// write sends b and flushes it (one byte at a time under slow drip).
func (c *call) write(b []byte) error {
	if !c.dripped {
		if _, err := c.w.Write(b); err != nil {
			return err
		}
		return c.rc.Flush()
	}
	for i := range b {
		if _, err := c.w.Write(b[i : i+1]); err != nil {
			return err
		}
		if err := c.rc.Flush(); err != nil {
			return err
		}
		if c.drip > 0 && i < len(b)-1 && !c.sleep(c.drip) {
			return errInterrupted
		}
	}
	return nil
}

// event writes one SSE event and records its flush time if it is a
// content event.
func (c *call) event(payload []byte, content bool) error {
	return c.namedEvent("", payload, content)
}

// fail answers with a vLLM-shaped error.
func (c *call) fail(e *apiError) {
	if c.anthropic {
		writeJSON(c.w, e.Status, anthropicError(e))
	} else {
		c.s.writeError(c.w, e)
	}
	c.rc.Flush()
	c.tr.Status = e.Status
	c.tr.HeadersNS = time.Now().UnixNano()
}

// reset closes the connection with a TCP RST and no response bytes.
func (c *call) reset() {
	conn, _, err := c.rc.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // HTTP/2: abort the stream instead
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

// startCall begins serving a request: its number, its request id (the
// client's X-Request-Id, or one drawn from the seed; answered as
// X-Request-Id), the replica that serves it (servedby.go) and its call. A
// handler that traces defers c.record.
func (s *Simulator) startCall(w http.ResponseWriter, r *http.Request) (c *call, reqNo uint64, replica int) {
	reqNo = s.reqNo.Add(1)
	rid := r.Header.Get("X-Request-Id")
	if rid == "" {
		rid = fmt.Sprintf("%016x%016x", hash2(s.idSeed, reqNo), hash2(reqNo, s.idSeed))
	}
	w.Header().Set("X-Request-Id", rid)
	replica = s.servedBy(w.Header(), r, reqNo)
	c = &call{s: s, w: w, rc: http.NewResponseController(w), ctx: r.Context(),
		tr: TraceRecord{RequestID: rid, Traceparent: traceparent(r), Endpoint: r.URL.Path}}
	return c, reqNo, replica
}

// record writes c's trace record when the simulator writes a trace file.
func (c *call) record() {
	if c.s.trace == nil {
		return
	}
	if err := c.s.trace.write(&c.tr); err != nil {
		level.Warn(c.s.logger).Log("msg", "trace record lost", "err", err)
	}
}

// errShuttingDown is the answer to requests the stopping engine will not take.
var errShuttingDown = &apiError{Status: http.StatusServiceUnavailable, Type: "ServiceUnavailableError",
	Message: "the simulator is shutting down"}

// wait blocks until seq finishes; false when the client left (the sequence
// is aborted) or the simulator closed.
func (c *call) wait(seq *sequence) bool {
	for {
		if _, finished, _ := seq.snapshot(); finished {
			return true
		}
		select {
		case <-seq.notify:
		case <-c.ctx.Done():
			c.s.eng.abort(seq)
			return false
		case <-c.s.done:
			return false
		}
	}
}

// progress blocks until seq has produced past sent tokens or finished and
// returns what it has produced (and its finish reason); ok is false when the stream must end: the
// client left (the sequence is aborted), the engine aborted it, or the
// simulator closed.
func (c *call) progress(seq *sequence, sent int) (produced int, finished bool, reason string, ok bool) {
	for {
		select {
		case <-seq.notify:
		case <-c.ctx.Done():
			c.s.eng.abort(seq)
			c.tr.FinishReason = finishAbort
			return 0, false, "", false
		case <-c.s.done:
			return 0, false, "", false
		}
		produced, finished, reason := seq.snapshot()
		if reason == finishAbort {
			c.tr.FinishReason = finishAbort
			return 0, false, "", false
		}
		if produced != sent || finished {
			return produced, finished, reason, true
		}
	}
}

// hang blocks until the client leaves or serving stops.
func (c *call) hang() {
	select {
	case <-c.ctx.Done():
	case <-c.s.quit:
	case <-c.s.done:
	}
}

// openStream answers a streamed request: status 200 and the event-stream
// header, flushed. A hang fault (hang) then holds the stream open without a
// byte. It reports whether the stream goes on.
func (c *call) openStream(hang bool) bool {
	c.w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	c.w.WriteHeader(http.StatusOK)
	if err := c.rc.Flush(); err != nil {
		return false
	}
	c.tr.Status = http.StatusOK
	c.tr.HeadersNS = time.Now().UnixNano()
	if hang {
		c.hang()
		return false
	}
	return true
}

// answer writes a non-streamed answer's JSON body with status 200 and
// records it (the tokens produced, the finish reason). fp's body faults:
// malformed sends half of the body (as the whole, by its Content-Length),
// cut half of the declared body before it aborts the connection.
func (c *call) answer(body []byte, produced int, reason string, fp faultPlan) {
	if fp.malformed {
		body = body[:len(body)/2]
	}
	h := c.w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", fmt.Sprint(len(body)))
	c.w.WriteHeader(http.StatusOK)
	c.tr.Status = http.StatusOK
	c.tr.CompletionTokens = produced
	c.tr.FinishReason = reason
	if fp.cut {
		c.write(body[:len(body)/2])
		c.tr.HeadersNS = time.Now().UnixNano()
		panic(http.ErrAbortHandler)
	}
	c.write(body)
	c.tr.HeadersNS = time.Now().UnixNano()
}
