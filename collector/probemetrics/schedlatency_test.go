package probemetrics

import (
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/llmprobe/llmprobe/prober/schedlat"
)

// TestSchedLatencyFromRuntime gathers llmprobe_client_sched_latency_seconds
// twice around some scheduling work: its buckets are SchedLatencyBuckets,
// cumulative and monotonic, and its count grows with the runtime's.
func TestSchedLatencyFromRuntime(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	NewSchedLatency(reg)
	first := schedHistogram(t, reg)
	var wg sync.WaitGroup
	for range 4 * runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for range 200 {
				runtime.Gosched()
			}
		})
	}
	wg.Wait()
	second := schedHistogram(t, reg)
	if second.GetSampleCount() <= first.GetSampleCount() {
		t.Errorf("count %d then %d: the runtime's samples did not show", first.GetSampleCount(), second.GetSampleCount())
	}
	var bounds []float64
	prev := uint64(0)
	for _, b := range second.GetBucket() {
		bounds = append(bounds, b.GetUpperBound())
		if b.GetCumulativeCount() < prev || b.GetCumulativeCount() > second.GetSampleCount() {
			t.Errorf("bucket le=%g: %d after %d (count %d)", b.GetUpperBound(), b.GetCumulativeCount(), prev, second.GetSampleCount())
		}
		prev = b.GetCumulativeCount()
	}
	if !slices.Equal(bounds, SchedLatencyBuckets) || !slices.Contains(bounds, 0.001) {
		t.Errorf("buckets %v, want %v (with the 1 ms limit)", bounds, SchedLatencyBuckets)
	}
	if problems, err := testutil.CollectAndLint(NewSchedLatency(nil)); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}

// TestSchedLatencyExposition pins the exposition of a known runtime
// histogram: samples at 0.5-1 ms count under le="0.001", the bucket
// straddling 1 ms under le="0.0025"; _sum from the midpoints (90 x 0.25 ms +
// 5 x 0.7 + 3 x 1 + 1 x 2.05, and the open bucket at its lower bound, 3 ms).
func TestSchedLatencyExposition(t *testing.T) {
	c := NewSchedLatency(nil).(*schedLatency)
	c.read = func() schedlat.Snapshot {
		return schedlat.Snapshot{Buckets: []float64{math.Inf(-1), 0, 0.0005, 0.0009, 0.0011, 0.003, math.Inf(1)},
			Counts: []uint64{0, 90, 5, 3, 1, 1}}
	}
	want := `# HELP llmprobe_client_sched_latency_seconds ` + helpSchedLatency + `
# TYPE llmprobe_client_sched_latency_seconds histogram
llmprobe_client_sched_latency_seconds_bucket{le="1e-05"} 0
llmprobe_client_sched_latency_seconds_bucket{le="2.5e-05"} 0
llmprobe_client_sched_latency_seconds_bucket{le="5e-05"} 0
llmprobe_client_sched_latency_seconds_bucket{le="0.0001"} 0
llmprobe_client_sched_latency_seconds_bucket{le="0.00025"} 0
llmprobe_client_sched_latency_seconds_bucket{le="0.0005"} 90
llmprobe_client_sched_latency_seconds_bucket{le="0.001"} 95
llmprobe_client_sched_latency_seconds_bucket{le="0.0025"} 98
llmprobe_client_sched_latency_seconds_bucket{le="0.005"} 99
llmprobe_client_sched_latency_seconds_bucket{le="0.01"} 99
llmprobe_client_sched_latency_seconds_bucket{le="0.025"} 99
llmprobe_client_sched_latency_seconds_bucket{le="0.05"} 99
llmprobe_client_sched_latency_seconds_bucket{le="0.1"} 99
llmprobe_client_sched_latency_seconds_bucket{le="0.25"} 99
llmprobe_client_sched_latency_seconds_bucket{le="1"} 99
llmprobe_client_sched_latency_seconds_bucket{le="+Inf"} 100
llmprobe_client_sched_latency_seconds_sum 0.03405
llmprobe_client_sched_latency_seconds_count 100
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

func schedHistogram(t *testing.T, reg prometheus.Gatherer) *dto.Histogram {
	t.Helper()
	mf := gatherFamily(t, reg, NameSchedLatency)
	if mf == nil || len(mf.GetMetric()) != 1 {
		t.Fatalf("%s not gathered once: %v", NameSchedLatency, mf)
	}
	return mf.GetMetric()[0].GetHistogram()
}
