package probemetrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/llmprobe/llmprobe/prober"
)

// TestServerTimingObserved: the server's queue and TTFT and the overhead
// are observed for successful streamed requests that reported them; a
// negative overhead is observed as 0 and counted; a non-streamed request,
// a failed one and one without the figures observe nothing.
func TestServerTimingObserved(t *testing.T) {
	const ms = time.Millisecond
	reg, m := newMetrics()
	base := prober.Record{Target: "t", Probe: "p", TTFT: 100 * ms, E2E: 200 * ms, Events: 2, HTTPStatus: 200,
		HasServerQueue: true, HasServerTTFT: true}
	ok := base
	ok.ServerQueueTime, ok.ServerTTFT = 30*ms, 60*ms // overhead 10ms
	negative := base
	negative.ServerQueueTime, negative.ServerTTFT = 70*ms, 40*ms // 10ms more than the TTFT
	noStream := ok
	noStream.NoStream = true
	failed := ok
	failed.Error = prober.ClassStream
	plain := prober.Record{Target: "t", Probe: "q", TTFT: 100 * ms, E2E: 200 * ms, Events: 2, HTTPStatus: 200}
	observeAll(m, verdict(true), []prober.Record{ok, negative, noStream, failed, plain})
	if n := testutil.CollectAndCount(m.serverTiming.queue); n != 1 {
		t.Errorf("%d queue series, want 1 (probe q reported nothing)", n)
	}
	if got := testutil.ToFloat64(m.serverTiming.negative.WithLabelValues("t", "p")); got != 1 {
		t.Errorf("negative overheads %v, want 1", got)
	}
	h := gatherFamily(t, reg, NameTTFTOverhead).GetMetric()[0].GetHistogram()
	if h.GetSampleCount() != 2 || h.GetSampleSum() < 0.0099 || h.GetSampleSum() > 0.0101 {
		t.Errorf("overhead count %d sum %v, want 2 observations summing to 10ms (the negative one as 0)", h.GetSampleCount(), h.GetSampleSum())
	}
	q := gatherFamily(t, reg, NameServerQueue).GetMetric()[0].GetHistogram()
	if q.GetSampleCount() != 2 || q.GetSampleSum() < 0.0999 || q.GetSampleSum() > 0.1001 {
		t.Errorf("queue count %d sum %v, want 2 summing to 100ms", q.GetSampleCount(), q.GetSampleSum())
	}
}
