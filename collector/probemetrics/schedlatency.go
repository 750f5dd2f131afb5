package probemetrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmprobe/llmprobe/prober/schedlat"
)

// NameSchedLatency is the histogram of the Go scheduling latency of the
// llmprobe process (prober/schedlat): how long its runnable goroutines, the
// stream readers among them, waited to run.
const NameSchedLatency = "llmprobe_client_sched_latency_seconds"

// SchedLatencyBuckets are the classic bucket bounds of
// llmprobe_client_sched_latency_seconds: 1-2.5-5 steps from 10 µs to 1 s,
// with the sweeps' default client-read-lag limit (1 ms) a bound, so that the
// share of samples over it is read exactly from the le="0.001" bucket. The
// slice is shared: do not modify it.
var SchedLatencyBuckets = []float64{
	0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0,
}

// ClientNames returns the metric family names of the client's checks of
// itself (NewSchedLatency), which `llmprobe serve` registers beside New's.
func ClientNames() []string { return []string{NameSchedLatency} }

const helpSchedLatency = "Go scheduling latency of the llmprobe process (runtime/metrics " +
	"/sched/latencies:seconds, sampled by the runtime): how long its runnable goroutines, the stream readers " +
	"among them, waited to run. Over 1 ms at the p99 the client reads streams late and its latency figures " +
	"include its own delay (a sweep step is then flagged client-read-lag)."

// schedLatency exports the runtime's cumulative scheduling-latency
// histogram at each scrape.
type schedLatency struct {
	desc *prometheus.Desc
	read func() schedlat.Snapshot
}

// NewSchedLatency registers with reg the collector of
// llmprobe_client_sched_latency_seconds and returns it: at each scrape it
// reads the runtime's histogram (runtime/metrics /sched/latencies:seconds,
// cumulative since the process started, as a Prometheus histogram is) and
// exports it in SchedLatencyBuckets. Nothing runs between scrapes, and the
// window is the query's: histogram_quantile(0.99,
// rate(llmprobe_client_sched_latency_seconds_bucket[10m])) is the recent
// p99, and the ratio of the le="0.001" bucket to the count the share over
// 1 ms, the figure a sweep step is judged by (client-read-lag). A runtime
// bucket that straddles a bound counts in the next one (the runtime's
// buckets are about 12 % wide near 1 ms), so the classic buckets err
// towards higher latencies; _sum is estimated from the runtime buckets'
// midpoints. It has no labels: the figure is the whole process's. It is safe
// for concurrent use; reg nil returns it unregistered.
func NewSchedLatency(reg prometheus.Registerer) prometheus.Collector {
	c := &schedLatency{
		desc: prometheus.NewDesc(NameSchedLatency, helpSchedLatency, nil, nil),
		read: schedlat.Read,
	}
	if reg != nil {
		reg.MustRegister(c)
	}
	return c
}

// Describe implements prometheus.Collector.
func (c *schedLatency) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector: nothing when the runtime does not
// export the histogram.
func (c *schedLatency) Collect(ch chan<- prometheus.Metric) {
	s := c.read()
	if !s.OK() {
		return
	}
	cum, n, sum := s.Cumulative(SchedLatencyBuckets)
	buckets := make(map[float64]uint64, len(cum))
	for i, b := range SchedLatencyBuckets {
		buckets[b] = cum[i]
	}
	ch <- prometheus.MustNewConstHistogram(c.desc, n, sum, buckets)
}
