package schedule

import (
	"math"
	"time"
)

// Offsets replays precomputed absolute offsets from the schedule's start as
// an arrival.Process: a sweep's normalized open-loop arrivals, or a trace's
// own timing divided by its speed. Past the last offset Next returns the
// largest duration, so Config.Count (or Duration) ends the schedule first.
// Offsets must be non-decreasing; the scheduler fires an offset already past
// at once (its lateness is send lag). An Offsets is used by one schedule
// (not safe for concurrent use).
type Offsets struct {
	offsets []time.Duration
	i       int
}

// NewOffsets returns the process that replays offsets (not copied: the
// caller must not change them while the schedule runs).
func NewOffsets(offsets []time.Duration) *Offsets { return &Offsets{offsets: offsets} }

// Next implements arrival.Process.
func (p *Offsets) Next() time.Duration {
	if p.i >= len(p.offsets) {
		return time.Duration(math.MaxInt64)
	}
	d := p.offsets[p.i]
	p.i++
	return d
}

// Len returns the number of offsets.
func (p *Offsets) Len() int { return len(p.offsets) }
