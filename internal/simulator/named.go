package simulator

// The named-event streams, the Responses API's (respapi.go) and the
// Messages API's (messages.go): an "event: <name>" line before each data
// line, and one loop that streams a sequence's tokens through either with
// the mid-stream faults (namedTokens).

import "time"

// namedStream is one streamed answer of named events: what namedTokens
// asks of it.
type namedStream interface {
	// begin writes the events due at the engine's first output.
	begin() error
	// deltas writes the events of output tokens [from, to).
	deltas(seq *sequence, from, to int) error
	// fail writes the error-event fault's event.
	fail() error
	// truncated is the name of the stream's token event and the start of
	// one, cut inside its string: the malformed-event fault's event.
	truncated() (event string, data []byte)
}

// namedTokens submits seq and streams its tokens through ns until it
// finishes, with fp's mid-stream faults once half of the tokens (or all)
// are sent: error-event sends ns.fail's event, malformed-event the
// truncated event, cut-stream ends the stream, stall-mid-stream sleeps. It
// returns the tokens sent and whether the stream goes on to its closing
// events: false when the client left, the engine aborted the sequence or
// a fault ended the stream (the sequence aborted unless it had finished).
func (s *Simulator) namedTokens(c *call, seq *sequence, fp faultPlan, ns namedStream) (sent int, ok bool) {
	if err := s.eng.submit(seq); err != nil {
		return 0, false
	}
	abort := func() {
		s.eng.abort(seq)
		c.tr.FinishReason = finishAbort
	}
	started, midDone := false, false
	half := max(1, seq.finishLen/2)
	for {
		produced, finished, reason, ok := c.progress(seq, sent)
		if !ok {
			return sent, false
		}
		if !started {
			started = true
			if err := ns.begin(); err != nil {
				abort()
				return sent, false
			}
		}
		if fp.cut && produced > half {
			produced, finished = half, false
		}
		if produced > sent {
			if err := ns.deltas(seq, sent, produced); err != nil {
				abort()
				return sent, false
			}
		}
		sent = produced
		c.tr.CompletionTokens = sent
		if !midDone && (sent >= half || finished) {
			midDone = true
			if fp.errorEvent {
				if err := ns.fail(); err == nil && !finished {
					abort()
				}
				c.tr.FinishReason = finishError
				return sent, false
			}
			if fp.malformed {
				event, data := ns.truncated()
				if err := c.namedEvent(event, data, false); err != nil {
					abort()
					return sent, false
				}
			}
			if fp.cut {
				s.endCut(c, seq, finished, reason)
				return sent, false
			}
			if fp.stallMid && !c.sleep(fp.stallFor) {
				if !finished {
					abort()
				}
				return sent, false
			}
		}
		if finished {
			c.tr.FinishReason = toolFinish(seq, reason)
			return sent, true
		}
	}
}

// namedEvent writes an SSE event, with an event: line when name is not
// empty, and records its flush time if it is a content event.
func (c *call) namedEvent(name string, payload []byte, content bool) error {
	c.buf = c.buf[:0]
	if name != "" {
		c.buf = append(append(append(c.buf, "event: "...), name...), '\n')
	}
	c.buf = append(c.buf, "data: "...)
	c.buf = append(c.buf, payload...)
	c.buf = append(c.buf, "\n\n"...)
	if err := c.write(c.buf); err != nil {
		return err
	}
	if content {
		c.tr.EventsNS = append(c.tr.EventsNS, time.Now().UnixNano())
	}
	return nil
}
