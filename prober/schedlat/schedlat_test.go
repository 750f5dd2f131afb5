package schedlat

import (
	"math"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestReadAndSub(t *testing.T) {
	a := Read()
	if !a.OK() {
		t.Fatalf("the runtime does not export %s", Metric)
	}
	// Make goroutines wait for each other so that the runtime samples
	// some scheduling latencies.
	var wg sync.WaitGroup
	for range 4 * runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for range 200 {
				runtime.Gosched()
			}
		})
	}
	wg.Wait()
	b := Read()
	d := b.Sub(a)
	if d.Count() == 0 || d.Count() > b.Count() || d.Count() != b.Count()-a.Count() {
		t.Errorf("delta count %d, cumulative %d then %d", d.Count(), a.Count(), b.Count())
	}
	if q, ok := d.Quantile(0.99); !ok || q < 0 {
		t.Errorf("p99 %v %v", q, ok)
	}
}

// synthetic is a histogram with boundaries 0, 1, 2, 4 ms and +Inf.
func synthetic(counts ...uint64) Snapshot {
	return Snapshot{Buckets: []float64{math.Inf(-1), 0, 0.001, 0.002, 0.004, math.Inf(1)}, Counts: counts}
}

func TestQuantile(t *testing.T) {
	f := func(s Snapshot, q float64, want time.Duration, wantOK bool) {
		t.Helper()
		got, ok := s.Quantile(q)
		if ok != wantOK || (got-want).Abs() > time.Microsecond {
			t.Errorf("Quantile(%g) of %v = %v %v, want %v %v", q, s.Counts, got, ok, want, wantOK)
		}
	}
	f(synthetic(0, 0, 0, 0, 0), 0.99, 0, false)
	f(synthetic(0, 100, 0, 0, 0), 0.5, 500*time.Microsecond, true)
	f(synthetic(0, 50, 50, 0, 0), 0.99, 1980*time.Microsecond, true) // 49 of 50 into [1, 2) ms
	f(synthetic(0, 98, 0, 2, 0), 0.99, 3*time.Millisecond, true)     // half of the [2, 4) ms bucket
	f(synthetic(0, 0, 0, 0, 10), 0.99, 4*time.Millisecond, true)     // open bucket: its lower bound
	f(synthetic(0, 10, 0, 0, 0), 0, 0, false)
}

func TestSubReset(t *testing.T) {
	prev := synthetic(0, 5, 5, 0, 0)
	now := synthetic(0, 7, 9, 1, 0)
	if got := now.Sub(prev).Counts; !slices.Equal(got, []uint64{0, 2, 4, 1, 0}) {
		t.Errorf("delta %v", got)
	}
	if got := now.Sub(Snapshot{}).Counts; !slices.Equal(got, now.Counts) {
		t.Errorf("delta from nothing %v", got)
	}
}

func TestCumulative(t *testing.T) {
	s := synthetic(0, 3, 4, 2, 1)
	cum, n, sum := s.Cumulative([]float64{0.0005, 0.001, 0.003, 0.004, 10})
	if !slices.Equal(cum, []uint64{0, 3, 7, 9, 9}) || n != 10 {
		t.Errorf("cumulative %v count %d", cum, n)
	}
	if n := s.CountAbove(2 * time.Millisecond); n != 3 {
		t.Errorf("CountAbove(2ms) = %d, want 3", n)
	}
	if n := s.CountAbove(1500 * time.Microsecond); n != 3 {
		t.Errorf("CountAbove(1.5ms) = %d, want 3 (the [1, 2) ms bucket is not certainly above)", n)
	}
	if want := 3*0.0005 + 4*0.0015 + 2*0.003 + 1*0.004; math.Abs(sum-want) > 1e-12 {
		t.Errorf("sum %g, want %g", sum, want)
	}
}
