package client

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/tracing"
)

// TestMetricsOverOTLP sends a streamed and a non-streamed request to the
// simulator with Options.Metrics and reads the GenAI histograms back from
// an OTLP/HTTP receiver: counts and sums are the records' (duration: E2E;
// time to first chunk: TTFT; time per output chunk: each ITL gap; tokens:
// the usage), with the client's operation, server and provider.
func TestMetricsOverOTLP(t *testing.T) {
	var mu sync.Mutex
	var last *colmetricpb.ExportMetricsServiceRequest
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
		var m colmetricpb.ExportMetricsServiceRequest
		if err == nil {
			err = proto.Unmarshal(body, &m)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		last = &m
		mu.Unlock()
	}))
	t.Cleanup(rcv.Close)
	m, err := tracing.NewMetrics(context.Background(), tracing.Options{Endpoint: rcv.URL, Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Shutdown(context.Background()) })

	base, _ := simtest.Start(t, simtest.Fast())
	c := newClient(t, Options{BaseURL: base, Model: "llmprobe-sim", Metrics: m, Provider: func() string { return "vllm" }})
	streamed := do(t, context.Background(), c, Request{ID: "m-1", Prompt: "hello", MaxTokens: 8, IgnoreEOS: true})
	unary := do(t, context.Background(), c, Request{ID: "m-2", Prompt: "hello", MaxTokens: 8, IgnoreEOS: true, NoStream: true})
	for _, r := range []*prober.Record{&streamed, &unary} {
		if !r.OK() {
			t.Fatalf("request failed: %s %s", r.Error, r.ErrorMessage)
		}
	}
	if len(streamed.ITL) == 0 || streamed.TTFT <= 0 {
		t.Fatalf("streamed record has no TTFT/ITL: %v %v", streamed.TTFT, streamed.ITL)
	}
	if err := m.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if last == nil {
		t.Fatal("no export received")
	}
	u, _ := url.Parse(base)
	var itl time.Duration
	for _, g := range streamed.ITL {
		itl += g
	}
	// both: the metric has a point from each record (the unary one has
	// no chunks). A count cannot tell: a streamed answer whose tokens came
	// in three chunks on a busy host has two ITL gaps.
	want := map[string]struct {
		count uint64
		sum   float64
		both  bool
	}{
		tracing.MetricDuration:           {2, (streamed.E2E + unary.E2E).Seconds(), true},
		tracing.MetricTimeToFirstChunk:   {1, streamed.TTFT.Seconds(), false},
		tracing.MetricTimePerOutputChunk: {uint64(len(streamed.ITL)), itl.Seconds(), false},
		tracing.MetricInputTokens:        {2, float64(streamed.PromptTokens + unary.PromptTokens), true},
		tracing.MetricOutputTokens:       {2, float64(streamed.CompletionTokens + unary.CompletionTokens), true},
	}
	seen := 0
	for _, rm := range last.ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			for _, mt := range sm.Metrics {
				w, ok := want[mt.Name]
				if !ok {
					t.Errorf("unexpected metric %s", mt.Name)
					continue
				}
				seen++
				// One point per attribute set: the two records differ
				// where one has a gen_ai.response.model the other lacks.
				pts := mt.GetHistogram().GetDataPoints()
				var count uint64
				var sum float64
				models := map[string]bool{}
				for _, dp := range pts {
					count += dp.Count
					sum += dp.GetSum()
					attrs := pointAttrs(t, mt.Name, dp, u)
					models[attrs["gen_ai.response.model"]] = true
				}
				if count != w.count || sum < w.sum-1e-9 || sum > w.sum+1e-9 {
					t.Errorf("%s: count %d sum %v, want %d %v", mt.Name, count, sum, w.count, w.sum)
				}
				if !models[streamed.ResponseModel] || (w.both && !models[unary.ResponseModel]) {
					t.Errorf("%s: response models %v, records' %q %q", mt.Name, models, streamed.ResponseModel, unary.ResponseModel)
				}
				if mt.GetHistogram().AggregationTemporality != metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE {
					t.Errorf("temporality %v", mt.GetHistogram().AggregationTemporality)
				}
			}
		}
	}
	if seen != len(want) {
		t.Errorf("%d of %d metrics exported", seen, len(want))
	}
}

// pointAttrs checks the client's attributes on dp and returns them.
func pointAttrs(t *testing.T, name string, dp *metricpb.HistogramDataPoint, u *url.URL) map[string]string {
	t.Helper()
	attrs := map[string]string{}
	for _, kv := range dp.Attributes {
		attrs[kv.Key] = kv.Value.GetStringValue()
		if kv.Key == "server.port" && kv.Value.GetIntValue() != int64(mustPort(t, u)) {
			t.Errorf("%s server.port %v", name, kv.Value)
		}
	}
	if attrs["gen_ai.operation.name"] != tracing.OperationTextCompletion || attrs["gen_ai.provider.name"] != "vllm" ||
		attrs["server.address"] != u.Hostname() || attrs["gen_ai.request.model"] != "llmprobe-sim" {
		t.Errorf("%s attributes %v", name, attrs)
	}
	if _, ok := attrs["server.port"]; !ok {
		t.Errorf("%s has no server.port", name)
	}
	return attrs
}

func mustPort(t *testing.T, u *url.URL) int {
	t.Helper()
	var p int
	for _, ch := range u.Port() {
		p = p*10 + int(ch-'0')
	}
	if p == 0 {
		t.Fatalf("no port in %s", u)
	}
	return p
}
