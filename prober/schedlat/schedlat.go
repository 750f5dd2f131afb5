// Package schedlat reads Go's own scheduling latency: the runtime/metrics
// histogram /sched/latencies:seconds, the time goroutines spent runnable
// before they ran. It is how llmprobe checks itself: when the prober's host
// (or its own busy goroutines) delays the goroutines that read the streams,
// every timestamp the client takes is late by that much, although its sends
// may keep their schedule. The runtime histogram is cumulative since the
// process started; Read takes a snapshot and Snapshot.Sub the delta over an
// interval (a sweep step), whose Quantile is the figure a step is judged by
// (the sweep's client-read-lag flag); the daemon exports the cumulative
// counts as a histogram (collector/probemetrics).
//
// The runtime samples one in eight goroutine transitions into running and
// counts the whole process: with the embedded simulator, the server's
// goroutines count too. Reading costs a few microseconds and allocates the
// snapshot: call it per step or per scrape, never per request.
package schedlat

import (
	"math"
	"runtime/metrics"
	"time"
)

// Metric is the runtime/metrics name read.
const Metric = "/sched/latencies:seconds"

// Snapshot is the runtime's cumulative scheduling-latency histogram at one
// moment. Buckets holds the bucket boundaries in seconds (len(Counts)+1;
// the first may be -Inf, the last +Inf), Counts the samples per bucket.
// The zero Snapshot is empty (OK false).
type Snapshot struct {
	Buckets []float64
	Counts  []uint64
}

// OK reports whether the snapshot holds a histogram (the runtime supports
// the metric).
func (s Snapshot) OK() bool { return len(s.Counts) > 0 && len(s.Buckets) == len(s.Counts)+1 }

// Read returns the runtime's histogram now; an empty Snapshot when the
// runtime does not support the metric. It is safe for concurrent use.
func Read() Snapshot {
	sample := []metrics.Sample{{Name: Metric}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindFloat64Histogram {
		return Snapshot{}
	}
	h := sample[0].Value.Float64Histogram()
	return Snapshot{Buckets: h.Buckets, Counts: h.Counts}
}

// Sub returns the samples s gained since prev (an earlier snapshot of the
// same process): the histogram of the interval between them. An empty or
// mismatched prev yields s itself.
func (s Snapshot) Sub(prev Snapshot) Snapshot {
	if !s.OK() {
		return Snapshot{}
	}
	d := Snapshot{Buckets: s.Buckets, Counts: make([]uint64, len(s.Counts))}
	same := prev.OK() && len(prev.Counts) == len(s.Counts)
	for i, c := range s.Counts {
		if same && prev.Counts[i] <= c {
			c -= prev.Counts[i]
		}
		d.Counts[i] = c
	}
	return d
}

// Count returns the number of samples in s.
func (s Snapshot) Count() uint64 {
	var n uint64
	for _, c := range s.Counts {
		n += c
	}
	return n
}

// Quantile returns the q-quantile (0 < q <= 1) of s, interpolated linearly
// inside the bucket that holds it, as PromQL's histogram_quantile does (the
// runtime's buckets are about 12 % wide near a millisecond); a quantile in
// the open last bucket is its lower bound. ok is false when s has no
// samples.
func (s Snapshot) Quantile(q float64) (d time.Duration, ok bool) {
	total := s.Count()
	if total == 0 || !(q > 0 && q <= 1) {
		return 0, false
	}
	rank := q * float64(total)
	var cum float64
	for i, c := range s.Counts {
		if c == 0 {
			continue
		}
		next := cum + float64(c)
		if next >= rank {
			lo, hi := s.Buckets[i], s.Buckets[i+1]
			switch {
			case math.IsInf(hi, 1):
				return seconds(max(lo, 0)), true
			case math.IsInf(lo, -1):
				return seconds(max(hi, 0)), true
			}
			return seconds(lo + (hi-lo)*(rank-cum)/float64(c)), true
		}
		cum = next
	}
	return seconds(max(s.Buckets[len(s.Buckets)-2], 0)), true
}

// CountAbove returns the samples of s that are certainly above d: those in
// buckets whose lower bound is at least d.
func (s Snapshot) CountAbove(d time.Duration) uint64 {
	limit := d.Seconds()
	var n uint64
	for i, c := range s.Counts {
		if s.Buckets[i] >= limit {
			n += c
		}
	}
	return n
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// Cumulative returns, for each upper bound in bounds (seconds, ascending),
// the samples of s in buckets whose upper boundary is at most that bound:
// a classic cumulative histogram. A runtime bucket that straddles a bound
// counts in the next one, so the counts err towards higher latencies. It
// also returns the total count and an estimate of the sum (each bucket's
// samples at its midpoint; the open last bucket at its lower bound).
func (s Snapshot) Cumulative(bounds []float64) (cum []uint64, count uint64, sum float64) {
	cum = make([]uint64, len(bounds))
	j := 0
	var run uint64
	for i, c := range s.Counts {
		lo, hi := s.Buckets[i], s.Buckets[i+1]
		for j < len(bounds) && hi > bounds[j] {
			cum[j] = run
			j++
		}
		run += c
		switch {
		case c == 0:
		case math.IsInf(hi, 1):
			sum += float64(c) * max(lo, 0)
		case math.IsInf(lo, -1):
			sum += float64(c) * max(hi, 0)
		default:
			sum += float64(c) * (lo + hi) / 2
		}
	}
	for ; j < len(bounds); j++ {
		cum[j] = run
	}
	return cum, run, sum
}
