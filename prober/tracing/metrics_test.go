package tracing

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/redact"
)

// otlpReceiver is an OTLP/HTTP metrics collector: it decodes every
// export's protobuf body and keeps it.
type otlpReceiver struct {
	srv   *httptest.Server
	mu    sync.Mutex
	paths []string
	reqs  []*colmetricpb.ExportMetricsServiceRequest
	errs  []string
}

// metrics is a Metrics exporting to r over plain HTTP, shut down at the
// end of the test.
func (r *otlpReceiver) metrics(t testing.TB) *Metrics {
	t.Helper()
	m, err := NewMetrics(context.Background(), Options{Endpoint: r.srv.URL, Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Shutdown(context.Background()) })
	return m
}

func newOTLPReceiver(t testing.TB) *otlpReceiver {
	r := &otlpReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(io.LimitReader(req.Body, 16<<20))
		r.mu.Lock()
		defer r.mu.Unlock()
		r.paths = append(r.paths, req.URL.Path)
		var m colmetricpb.ExportMetricsServiceRequest
		if err == nil {
			err = proto.Unmarshal(body, &m)
		}
		if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
			r.errs = append(r.errs, "content type "+ct)
		}
		if err != nil {
			r.errs = append(r.errs, err.Error())
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.reqs = append(r.reqs, &m)
		w.Header().Set("Content-Type", "application/x-protobuf")
		b, _ := proto.Marshal(&colmetricpb.ExportMetricsServiceResponse{})
		_, _ = w.Write(b)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// last returns the metrics of the last export by name (cumulative: the
// last export holds every observation).
func (r *otlpReceiver) last(t testing.TB) map[string]*metricpb.Metric {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.errs) > 0 {
		t.Fatalf("receiver: %v", r.errs)
	}
	if len(r.reqs) == 0 {
		t.Fatal("no export received")
	}
	out := map[string]*metricpb.Metric{}
	for _, rm := range r.reqs[len(r.reqs)-1].ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				out[m.Name] = m
			}
		}
	}
	return out
}

// attrMap is a data point's attributes as strings and ints.
func attrMap(kvs []*commonpb.KeyValue) map[string]any {
	out := map[string]any{}
	for _, kv := range kvs {
		switch v := kv.Value.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			out[kv.Key] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			out[kv.Key] = v.IntValue
		default:
			out[kv.Key] = kv.Value.String()
		}
	}
	return out
}

// TestMetricsNames pins the names and buckets to the conventions of
// SemconvVersion (client-inference.md, gen-ai-token-metrics.md).
func TestMetricsNames(t *testing.T) {
	if SemconvVersion != "semantic-conventions-genai@024a4f9" {
		t.Errorf("SemconvVersion %q: check every name and bucket below against the new version", SemconvVersion)
	}
	for got, want := range map[string]string{
		MetricDuration:           "gen_ai.client.inference.duration",
		MetricTimeToFirstChunk:   "gen_ai.client.inference.time_to_first_chunk",
		MetricTimePerOutputChunk: "gen_ai.client.inference.time_per_output_chunk",
		MetricInputTokens:        "gen_ai.client.inference.operation.input_tokens",
		MetricOutputTokens:       "gen_ai.client.inference.operation.output_tokens",
	} {
		if got != want {
			t.Errorf("metric name %q, want %q", got, want)
		}
	}
	if want := []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}; !slices.Equal(DurationBuckets, want) {
		t.Errorf("duration buckets %v, want %v", DurationBuckets, want)
	}
	if want := []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}; !slices.Equal(TokenBuckets, want) {
		t.Errorf("token buckets %v, want %v", TokenBuckets, want)
	}
}

// TestMetricsExport records four requests and reads them back from an
// OTLP/HTTP receiver: names, units, bucket bounds, attributes (the
// target's secret redacted) and counts and sums equal to the records'.
func TestMetricsExport(t *testing.T) {
	rcv := newOTLPReceiver(t)
	m := rcv.metrics(t)
	const secret = "sk-metrics-secret-123456"
	red := redact.New(secret)
	server, _ := url.Parse("http://llm.example:8000")
	c := m.Client(OperationChat, server, red)

	ms := time.Millisecond
	ok := prober.Record{Model: "m", ResponseModel: "m-0613", E2E: 1500 * ms, TTFT: 300 * ms,
		ITL: []time.Duration{50 * ms, 70 * ms, 200 * ms}, PromptTokens: 100, CompletionTokens: 4}
	ok2 := ok
	ok2.E2E, ok2.TTFT, ok2.ITL, ok2.PromptTokens, ok2.CompletionTokens = 900*ms, 100*ms, []time.Duration{30 * ms}, 20, 2
	failed := prober.Record{Model: "m", E2E: 2 * time.Second, Error: prober.ClassTimeout, TTFT: 400 * ms}
	unary := prober.Record{Model: "m", ResponseModel: "m-0613", E2E: 500 * ms, NoStream: true, PromptTokens: 7, CompletionTokens: 9}
	notSent := prober.Record{Model: "m", E2E: time.Second, Error: prober.ClassConnect, NotSent: true}
	leaky := prober.Record{Model: "ft-" + secret, E2E: 100 * ms, NoStream: true}
	for _, r := range []*prober.Record{&ok, &ok2, &failed, &unary, &notSent, &leaky} {
		c.Record(context.Background(), "vllm", r)
	}
	if err := m.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := rcv.last(t)
	rcv.mu.Lock()
	if rcv.paths[0] != "/v1/metrics" {
		t.Errorf("export path %q, want /v1/metrics", rcv.paths[0])
	}
	rcv.mu.Unlock()
	if m.Exports() == 0 || m.FailedExports() != 0 {
		t.Errorf("exports %d, failed %d", m.Exports(), m.FailedExports())
	}

	base := map[string]any{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "vllm",
		"server.address": "llm.example", "server.port": int64(8000), "gen_ai.request.model": "m"}
	with := func(extra map[string]any) string {
		a := map[string]any{}
		for k, v := range base {
			a[k] = v
		}
		for k, v := range extra {
			a[k] = v
		}
		return fmtAttrs(a)
	}
	okSet := with(map[string]any{"gen_ai.response.model": "m-0613"})
	errSet := with(map[string]any{"error.type": "timeout"})
	leakSet := with(map[string]any{"gen_ai.request.model": "ft-<redacted>"})
	type want struct {
		count uint64
		sum   float64
	}
	secs := func(ds ...time.Duration) (s float64) {
		for _, d := range ds {
			s += d.Seconds()
		}
		return s
	}
	for _, tc := range []struct {
		name, unit string
		bounds     []float64
		points     map[string]want
	}{
		{MetricDuration, "s", DurationBuckets, map[string]want{
			okSet:   {3, secs(ok.E2E, ok2.E2E, unary.E2E)},
			errSet:  {1, failed.E2E.Seconds()},
			leakSet: {1, leaky.E2E.Seconds()}}},
		{MetricTimeToFirstChunk, "s", DurationBuckets, map[string]want{
			okSet: {2, secs(ok.TTFT, ok2.TTFT)}}},
		{MetricTimePerOutputChunk, "s", DurationBuckets, map[string]want{
			okSet: {4, secs(append(slices.Clone(ok.ITL), ok2.ITL...)...)}}},
		{MetricInputTokens, "{token}", TokenBuckets, map[string]want{
			okSet: {3, 127}, errSet: {1, 0}, leakSet: {1, 0}}},
		{MetricOutputTokens, "{token}", TokenBuckets, map[string]want{
			okSet: {3, 15}, errSet: {1, 0}, leakSet: {1, 0}}},
	} {
		mt := got[tc.name]
		if mt == nil {
			t.Errorf("%s not exported (got %d metrics)", tc.name, len(got))
			continue
		}
		if mt.Unit != tc.unit {
			t.Errorf("%s unit %q, want %q", tc.name, mt.Unit, tc.unit)
		}
		h := mt.GetHistogram()
		if h == nil {
			t.Errorf("%s is not a histogram: %T", tc.name, mt.Data)
			continue
		}
		if h.AggregationTemporality != metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE {
			t.Errorf("%s temporality %v", tc.name, h.AggregationTemporality)
		}
		seen := map[string]bool{}
		for _, dp := range h.DataPoints {
			key := fmtAttrs(attrMap(dp.Attributes))
			seen[key] = true
			w, ok := tc.points[key]
			if !ok {
				t.Errorf("%s: unexpected point %s", tc.name, key)
				continue
			}
			if !slices.Equal(dp.ExplicitBounds, tc.bounds) {
				t.Errorf("%s bounds %v, want %v", tc.name, dp.ExplicitBounds, tc.bounds)
			}
			if dp.Count != w.count || dp.GetSum() < w.sum-1e-9 || dp.GetSum() > w.sum+1e-9 {
				t.Errorf("%s %s: count %d sum %v, want %d %v", tc.name, key, dp.Count, dp.GetSum(), w.count, w.sum)
			}
		}
		for key := range tc.points {
			if !seen[key] {
				t.Errorf("%s: no point %s", tc.name, key)
			}
		}
	}
}

// fmtAttrs is a stable text of an attribute map.
func fmtAttrs(a map[string]any) string {
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	s := ""
	for _, k := range keys {
		s += k + "=" + fmtValue(a[k]) + ","
	}
	return s
}

func fmtValue(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return time.Duration(x).String() // any stable text
	}
	return "?"
}

// TestMetricsNil: a nil Metrics and ClientMetrics record nothing.
func TestMetricsNil(t *testing.T) {
	var m *Metrics
	c := m.Client(OperationChat, nil, nil)
	if c != nil {
		t.Fatal("nil Metrics gave a ClientMetrics")
	}
	c.Record(context.Background(), "", &prober.Record{E2E: time.Second})
	if err := m.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkMetricsRecord is the cost a streamed request with 64 chunks
// adds to the request path with --tracing.metrics (the SDK's recording;
// the attribute set is built once per client).
func BenchmarkMetricsRecord(b *testing.B) {
	rcv := newOTLPReceiver(b)
	m := rcv.metrics(b)
	server, _ := url.Parse("http://llm.example:8000")
	c := m.Client(OperationChat, server, redact.New("sk-x"))
	rec := prober.Record{Model: "m", ResponseModel: "m", E2E: time.Second, TTFT: 100 * time.Millisecond,
		PromptTokens: 100, CompletionTokens: 64}
	for i := range 63 {
		rec.ITL = append(rec.ITL, time.Duration(10+i)*time.Millisecond)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	cpu := testutil.ProcessCPU()
	for range b.N {
		c.Record(ctx, "vllm", &rec)
	}
	b.ReportMetric(float64(testutil.ProcessCPU()-cpu)/float64(b.N), "cpu-ns/op")
}
