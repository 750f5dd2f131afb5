package simulator

import "time"

// streamEmpty serves the fault empty-answer on a stream: chat's role chunk
// (when the persona sends one), the usage chunk with 0 completion tokens
// when asked, then [DONE]; nothing enters the engine.
func (s *Simulator) streamEmpty(c *call, g *genRequest, id string) {
	w := s.newWire(g, id, time.Now().Unix())
	w.tr = &c.tr
	if g.kind == kindChat {
		if b := w.role(); b != nil {
			if err := c.event(b, true); err != nil {
				return
			}
		}
	}
	if g.includeUsage {
		if err := c.event(w.usage(0, nil), false); err != nil {
			return
		}
	}
	c.tr.FinishReason = finishStop
	if err := c.write([]byte("data: [DONE]\n\n")); err != nil {
		return
	}
	c.tr.DoneNS = time.Now().UnixNano()
}
