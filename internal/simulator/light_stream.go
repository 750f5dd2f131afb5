package simulator

import (
	"net/http"
	"time"
)

// lightSleepMax is the longest wait light mode sleeps without watching the
// request's context: shorter waits (the usual 5 ms gap) use time.Sleep, the
// cheapest wait the runtime has (no channel, no select), and a client that
// went away is noticed by the next write failing.
const lightSleepMax = 100 * time.Millisecond

// lightWriter writes light mode's events straight to net/http's response
// writer: Write + FlushError, one write(2) per event, without the
// middleware wrappers and http.ResponseController's per-call unwrapping.
type lightWriter struct {
	w     http.ResponseWriter
	flush func() error
}

// newLightWriter unwraps w (statusRecorder and any writer with Unwrap) down
// to the first writer that can flush.
func newLightWriter(w http.ResponseWriter) lightWriter {
	for {
		switch f := w.(type) {
		case interface{ FlushError() error }:
			return lightWriter{w: w, flush: f.FlushError}
		case http.Flusher:
			return lightWriter{w: w, flush: func() error { f.Flush(); return nil }}
		case interface{ Unwrap() http.ResponseWriter }:
			w = f.Unwrap()
		default:
			return lightWriter{w: w, flush: func() error { return http.ErrNotSupported }}
		}
	}
}

func (lw lightWriter) write(b []byte) error {
	if _, err := lw.w.Write(b); err != nil {
		return err
	}
	return lw.flush()
}

// wait waits until due; false when the request or the simulator ended
// first. now is the caller's latest clock reading.
func (c *call) lightWait(t **time.Timer, due, now time.Time) bool {
	d := due.Sub(now)
	if d <= 0 {
		return true
	}
	if d <= lightSleepMax {
		time.Sleep(d)
		select {
		case <-c.s.done:
			return false
		default:
			return true
		}
	}
	if *t == nil {
		*t = time.NewTimer(d)
	} else {
		(*t).Reset(d)
	}
	select {
	case <-(*t).C:
		return true
	case <-c.ctx.Done():
	case <-c.s.done:
	}
	return false
}

// streamLight writes the n token events of a streaming light response,
// each on its own write and flush, the k-th due at start + TTFT + k·Gap,
// and stamps each right after its flush returned (TraceRecord.EventsNS).
// It returns false when the stream was cut (client gone, write error,
// simulator closing).
func (s *Simulator) streamLight(c *call, kind apiKind, start time.Time, n int) bool {
	ls := s.light
	lw := newLightWriter(c.w)
	var t *time.Timer
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	due := start.Add(s.cfg.Light.TTFT)
	now := time.Now()
	for i := range n {
		if !c.lightWait(&t, due, now) {
			if c.ctx.Err() != nil {
				c.tr.FinishReason = finishAbort
			}
			return false
		}
		if i == 0 && kind == kindChat {
			if err := lw.write(ls.role[kind]); err != nil {
				c.tr.FinishReason = finishAbort
				return false
			}
			c.tr.EventsNS = append(c.tr.EventsNS, time.Now().UnixNano())
		}
		ev := ls.token[kind]
		if i == n-1 {
			ev = ls.last[kind]
		}
		if err := lw.write(ev); err != nil {
			c.tr.FinishReason = finishAbort
			return false
		}
		now = time.Now()
		c.tr.EventsNS = append(c.tr.EventsNS, now.UnixNano())
		c.tr.CompletionTokens = i + 1
		ls.events.Add(1)
		due = due.Add(s.cfg.Light.Gap)
	}
	return true
}
