package probemetrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmprobe/llmprobe/prober"
)

// The per-request server timing histograms: what a vLLM server started with
// --enable-per-request-metrics reported of each request asked with
// include_metrics (Record.ServerQueueTime, ServerTTFT), and the rest of the
// client's TTFT. A probe's series are created at its first such response,
// not by Init: a target that never reports it has none, so an absent series
// means "not reported", never "no queue".
const (
	NameServerQueue          = "llmprobe_server_queue_seconds"
	NameServerTTFT           = "llmprobe_server_ttft_seconds"
	NameTTFTOverhead         = "llmprobe_ttft_overhead_seconds"
	NameTTFTOverheadNegative = "llmprobe_ttft_overhead_negative_total"
)

// serverTimingVecs are the server timing families.
type serverTimingVecs struct {
	queue, ttft, overhead *prometheus.HistogramVec
	negative              *prometheus.CounterVec
}

func newServerTiming(hist func(name, help string, buckets []float64) *prometheus.HistogramVec) serverTimingVecs {
	return serverTimingVecs{
		queue: hist(NameServerQueue, "The server's own queue time of a request (vLLM's per-request metrics "+
			"queue_time_ms: queued to scheduled), successful streamed requests whose response reported it "+
			"(server_timing, vLLM --enable-per-request-metrics) only.", TTFTBuckets),
		ttft: hist(NameServerTTFT, "The server's own time to first token of a request (vLLM's per-request "+
			"metrics time_to_first_token_ms: scheduled to the first output token, the prefill; the queue is not "+
			"in it), successful streamed requests whose response reported it only.", TTFTBuckets),
		overhead: hist(NameTTFTOverhead, "The part of a request's TTFT the server's own timing does not cover: "+
			"client TTFT - server queue - server TTFT (network, gateways, the server's HTTP frontend, tokenization, "+
			"the first event's flush), successful streamed requests that reported both; a negative remainder is "+
			"observed as 0 and counted in "+NameTTFTOverheadNegative+".", TTFTBuckets),
		negative: prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameTTFTOverheadNegative,
			Help: "Requests whose server queue + server TTFT exceeded the client's TTFT (observed as a 0 overhead " +
				"in " + NameTTFTOverhead + "): a server clock or reference instant the client's does not match."},
			[]string{"target", "probe"}),
	}
}

// serverTimingObservers are the children of one (target, probe), created
// at its first report.
type serverTimingObservers struct {
	queue, ttft, overhead exemplarObserver
	negative              prometheus.Counter
}

// observeServerTiming observes r's server queue, server TTFT and TTFT
// overhead when r succeeded streamed and its response reported them.
func (m *Metrics) observeServerTiming(pm *probeMetrics, r *prober.Record, ex prometheus.Labels) {
	if !r.OK() || r.NoStream || (!r.HasServerQueue && !r.HasServerTTFT) {
		return
	}
	o := pm.server.Load()
	if o == nil {
		v := m.serverTiming
		o = &serverTimingObservers{
			queue:    v.queue.WithLabelValues(r.Target, r.Probe).(exemplarObserver),
			ttft:     v.ttft.WithLabelValues(r.Target, r.Probe).(exemplarObserver),
			overhead: v.overhead.WithLabelValues(r.Target, r.Probe).(exemplarObserver),
			negative: v.negative.WithLabelValues(r.Target, r.Probe),
		}
		if !pm.server.CompareAndSwap(nil, o) {
			o = pm.server.Load()
		}
	}
	if r.HasServerQueue {
		observe(o.queue, r.ServerQueueTime, ex)
	}
	if r.HasServerTTFT {
		observe(o.ttft, r.ServerTTFT, ex)
	}
	if over, negative, ok := r.TTFTOverhead(); ok {
		if negative {
			o.negative.Inc()
			over = 0
		}
		observe(o.overhead, over, ex)
	}
}
