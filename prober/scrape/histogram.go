package scrape

import (
	"math"
	"slices"
	"sort"

	dto "github.com/prometheus/client_model/go"
)

// Bucket is one classic histogram bucket: the cumulative count of
// observations <= UpperBound.
type Bucket struct {
	UpperBound float64
	Count      float64
}

// Histogram is a classic (le-bucketed) histogram read from a snapshot or
// the difference of two. Its last bucket is always +Inf. It is a value:
// methods never modify it.
type Histogram struct {
	// Buckets are sorted by UpperBound and cumulative.
	Buckets []Bucket
	count   float64
	sum     float64
}

// NewHistogram builds a Histogram from cumulative buckets (any order) and
// its count and sum; a +Inf bucket holding count is added when missing.
func NewHistogram(buckets []Bucket, count, sum float64) *Histogram {
	bs := slices.Clone(buckets)
	sort.Slice(bs, func(i, j int) bool { return bs[i].UpperBound < bs[j].UpperBound })
	if len(bs) == 0 || !math.IsInf(bs[len(bs)-1].UpperBound, +1) {
		bs = append(bs, Bucket{UpperBound: math.Inf(+1), Count: count})
	}
	return &Histogram{Buckets: bs, count: count, sum: sum}
}

// Count returns the number of observations.
func (h *Histogram) Count() float64 { return h.count }

// Sum returns the sum of the observations.
func (h *Histogram) Sum() float64 { return h.sum }

// Mean returns Sum/Count, or NaN when there are no observations.
func (h *Histogram) Mean() float64 {
	if h.count == 0 {
		return math.NaN()
	}
	return h.sum / h.count
}

// Quantile estimates the q-quantile exactly as Prometheus' histogram_quantile
// does for classic histograms (promql.BucketQuantile): linear interpolation
// within the bucket the rank falls into, a lower bound of 0 for the first
// bucket when its upper bound is positive (else that upper bound is
// returned), the upper bound of the highest finite bucket when the rank falls
// into the +Inf bucket, buckets with equal bounds merged, numerically
// insignificant differences ignored and decreasing counts forced monotonic.
// It returns NaN for no observations, fewer than two buckets or q = NaN,
// -Inf for q < 0 and +Inf for q > 1.
func (h *Histogram) Quantile(q float64) float64 {
	switch {
	case math.IsNaN(q):
		return math.NaN()
	case q < 0:
		return math.Inf(-1)
	case q > 1:
		return math.Inf(+1)
	}
	if len(h.Buckets) == 0 {
		return math.NaN()
	}
	buckets := slices.Clone(h.Buckets)
	sort.SliceStable(buckets, func(i, j int) bool { return buckets[i].UpperBound < buckets[j].UpperBound })
	if !math.IsInf(buckets[len(buckets)-1].UpperBound, +1) {
		return math.NaN()
	}
	buckets = coalesce(buckets)
	ensureMonotonic(buckets)
	if len(buckets) < 2 {
		return math.NaN()
	}
	observations := buckets[len(buckets)-1].Count
	if observations == 0 {
		return math.NaN()
	}
	rank := q * observations
	b := sort.Search(len(buckets)-1, func(i int) bool { return buckets[i].Count >= rank })
	switch {
	case b == len(buckets)-1:
		return buckets[len(buckets)-2].UpperBound
	case b == 0 && buckets[0].UpperBound <= 0:
		return buckets[0].UpperBound
	}
	var (
		start = 0.0
		end   = buckets[b].UpperBound
		count = buckets[b].Count
	)
	if b > 0 {
		start = buckets[b-1].UpperBound
		count -= buckets[b-1].Count
		rank -= buckets[b-1].Count
	}
	return start + (end-start)*(rank/count)
}

// coalesce merges buckets with the same upper bound; buckets is sorted.
func coalesce(buckets []Bucket) []Bucket {
	last := buckets[0]
	i := 0
	for _, b := range buckets[1:] {
		if b.UpperBound == last.UpperBound {
			last.Count += b.Count
		} else {
			buckets[i] = last
			last = b
			i++
		}
	}
	buckets[i] = last
	return buckets[:i+1]
}

// smallDeltaTolerance is Prometheus' threshold for relative bucket
// differences that are floating point noise.
const smallDeltaTolerance = 1e-12

// ensureMonotonic ignores insignificant differences between successive
// buckets and removes decreases, as Prometheus does before interpolating.
func ensureMonotonic(buckets []Bucket) {
	prev := buckets[0].Count
	for i := 1; i < len(buckets); i++ {
		curr := buckets[i].Count
		switch {
		case curr == prev:
		case almostEqual(prev, curr, smallDeltaTolerance), curr < prev:
			buckets[i].Count = prev
		default:
			prev = curr
		}
	}
}

// almostEqual is Prometheus' util/almost.Equal.
func almostEqual(a, b, epsilon float64) bool {
	const minNormal = 2.2250738585072014e-308 // 1 / 2**(1022)
	if math.IsNaN(a) && math.IsNaN(b) {
		return true
	}
	if a == b {
		return true
	}
	absSum := math.Abs(a) + math.Abs(b)
	diff := math.Abs(a - b)
	if a == 0 || b == 0 || absSum < minNormal {
		return diff < epsilon*minNormal
	}
	return diff/math.Min(absSum, math.MaxFloat64) < epsilon
}

// histSample is one matching histogram series.
type histSample struct {
	key     string
	h       *Histogram
	created float64
}

// histograms returns the matching series of the histogram family name.
func (s *Snapshot) histograms(name string, match map[string]string) ([]histSample, bool) {
	mf := s.family(name)
	if mf == nil {
		return nil, false
	}
	if t := mf.GetType(); t != dto.MetricType_HISTOGRAM && t != dto.MetricType_GAUGE_HISTOGRAM {
		return nil, false
	}
	var created map[string]float64
	var out []histSample
	for _, m := range mf.GetMetric() {
		if m.GetHistogram() == nil || !matches(m, match) {
			continue
		}
		x := histSample{key: signature(m), h: fromDTO(m.GetHistogram()), created: createdTimestamp(m)}
		if x.created == 0 {
			if created == nil {
				created = s.createdByKey(createdFamily(mf))
			}
			x.created = created[x.key]
		}
		out = append(out, x)
	}
	return out, len(out) > 0
}

func fromDTO(h *dto.Histogram) *Histogram {
	bs := make([]Bucket, 0, len(h.GetBucket())+1)
	for _, b := range h.GetBucket() {
		c := float64(b.GetCumulativeCount())
		if b.CumulativeCountFloat != nil {
			c = b.GetCumulativeCountFloat()
		}
		bs = append(bs, Bucket{UpperBound: b.GetUpperBound(), Count: c})
	}
	return NewHistogram(bs, histCount(h), h.GetSampleSum())
}

// Histogram returns the cumulative histogram name summed bucket-wise over
// the matching series (label rules as Sum). ok is false when the family is
// absent or not a histogram, no series matches, or the matching series do
// not share the same bucket bounds.
func (s *Snapshot) Histogram(name string, match map[string]string) (*Histogram, bool) {
	hs, ok := s.histograms(name, match)
	if !ok {
		return nil, false
	}
	var acc *Histogram
	for _, x := range hs {
		if acc, ok = add(acc, x.h); !ok {
			return nil, false
		}
	}
	return acc, true
}

// HistogramDelta returns the observations histogram name gained between
// before and after, per series and then summed bucket-wise over the
// matching series (label rules as Sum). A series whose count or any bucket
// went down, whose _created timestamp changed, or whose bounds changed was
// reset: its delta is its after value. A series present only in after
// counts in full. ok is false when the family is absent from either
// snapshot, no series matches in after, or the matching series do not
// share the same bucket bounds.
func HistogramDelta(before, after *Snapshot, name string, match map[string]string) (*Histogram, bool) {
	if before.family(name) == nil {
		return nil, false
	}
	bs, _ := before.histograms(name, nil)
	as, ok := after.histograms(name, match)
	if !ok {
		return nil, false
	}
	prev := make(map[string]histSample, len(bs))
	for _, x := range bs {
		prev[x.key] = x
	}
	var acc *Histogram
	for _, a := range as {
		d := a.h
		if b, had := prev[a.key]; had && !histReset(b, a) {
			d = sub(a.h, b.h)
		}
		if acc, ok = add(acc, d); !ok {
			return nil, false
		}
	}
	return acc, true
}

func histReset(b, a histSample) bool {
	if a.h.count < b.h.count || (a.created != 0 && b.created != 0 && a.created != b.created) {
		return true
	}
	if len(a.h.Buckets) != len(b.h.Buckets) {
		return true
	}
	for i := range a.h.Buckets {
		if a.h.Buckets[i].UpperBound != b.h.Buckets[i].UpperBound || a.h.Buckets[i].Count < b.h.Buckets[i].Count {
			return true
		}
	}
	return false
}

// sub returns a - b; both have the same bounds (checked by histReset).
func sub(a, b *Histogram) *Histogram {
	out := &Histogram{Buckets: make([]Bucket, len(a.Buckets)), count: a.count - b.count, sum: a.sum - b.sum}
	for i := range a.Buckets {
		out.Buckets[i] = Bucket{UpperBound: a.Buckets[i].UpperBound, Count: a.Buckets[i].Count - b.Buckets[i].Count}
	}
	return out
}

// add returns acc + h (h itself copied when acc is nil), or false when the
// bounds differ.
func add(acc, h *Histogram) (*Histogram, bool) {
	if acc == nil {
		return &Histogram{Buckets: slices.Clone(h.Buckets), count: h.count, sum: h.sum}, true
	}
	if len(acc.Buckets) != len(h.Buckets) {
		return nil, false
	}
	for i := range acc.Buckets {
		if acc.Buckets[i].UpperBound != h.Buckets[i].UpperBound {
			return nil, false
		}
		acc.Buckets[i].Count += h.Buckets[i].Count
	}
	acc.count += h.count
	acc.sum += h.sum
	return acc, true
}

// CounterDelta returns how much counter name grew between before and after,
// summed over the matching series (label rules as Sum; name may also be
// <histogram>_count or _sum). Per series, a value that went down or a
// _created timestamp that changed is a reset and the delta is the after
// value; a series present only in after counts in full. ok is false when
// the family is absent from either snapshot or no series matches in after.
func CounterDelta(before, after *Snapshot, name string, match map[string]string) (float64, bool) {
	if !before.Has(name) {
		return 0, false
	}
	as, ok := after.series(name, match)
	if !ok {
		return 0, false
	}
	bs, _ := before.series(name, nil)
	prev := make(map[string]sample, len(bs))
	for _, x := range bs {
		prev[x.key] = x
	}
	var total float64
	for _, a := range as {
		b, had := prev[a.key]
		switch {
		case !had, a.value < b.value, a.created != 0 && b.created != 0 && a.created != b.created:
			total += a.value
		default:
			total += a.value - b.value
		}
	}
	return total, true
}
