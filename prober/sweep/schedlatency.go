package sweep

import (
	"time"

	"github.com/llmprobe/llmprobe/prober/schedlat"
)

// schedFigure is the Go scheduling latency of a step (prober/schedlat): the
// p99 in milliseconds of the samples the runtime took over the step, how
// many there were, and how many were certainly over the step's limit (in
// runtime buckets whose lower bound is at or above it).
type schedFigure struct {
	p99MS     float64
	samples   uint64
	overLimit uint64
}

// schedFigureOf summarises the scheduling-latency histogram d of a step
// (the delta between its start and end) against limit.
func schedFigureOf(d schedlat.Snapshot, limit time.Duration) schedFigure {
	p99, ok := d.Quantile(0.99)
	if !ok {
		return schedFigure{}
	}
	return schedFigure{p99MS: ms(p99), samples: d.Count(), overLimit: d.CountAbove(limit)}
}

// SetSchedLatency sets the scheduling-latency figures Judge reads from s:
// the p99 in milliseconds, the sample count and the samples over the limit
// (for steps judged again from their recorded figures, and tests).
func (s *Stats) SetSchedLatency(p99MS float64, samples, overLimit uint64) {
	s.schedLat = schedFigure{p99MS: p99MS, samples: samples, overLimit: overLimit}
}
