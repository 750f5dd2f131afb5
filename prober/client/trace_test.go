package client

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/prober/tracing"
)

// TestTracedRequest sends one traced request to the simulator: the span
// has the GenAI attributes, llmprobe's figures and the first-token event;
// Record.TraceID is the span's trace id; and the simulator received that
// trace id and span id in its traceparent (its trace file). An unsampled
// request carries a traceparent too (flags 00) and has no Record.TraceID.
func TestTracedRequest(t *testing.T) {
	cfg := simtest.Fast()
	cfg.TraceFile = filepath.Join(t.TempDir(), "trace.jsonl")
	url, _ := simtest.Start(t, cfg)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })

	c := newClient(t, Options{BaseURL: url, Tracer: tp.Tracer("test")})
	rec := do(t, context.Background(), c, Request{ID: "traced-1", Prompt: "hello", MaxTokens: 8, IgnoreEOS: true})
	if !rec.OK() {
		t.Fatalf("request failed: %s %s", rec.Error, rec.ErrorMessage)
	}
	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	s := spans[0]
	if rec.TraceID == "" || rec.TraceID != s.SpanContext.TraceID().String() {
		t.Errorf("Record.TraceID %q, span's %s", rec.TraceID, s.SpanContext.TraceID())
	}
	if s.SpanKind != trace.SpanKindClient || !strings.HasPrefix(s.Name, tracing.OperationTextCompletion) {
		t.Errorf("span %q kind %v", s.Name, s.SpanKind)
	}
	attrs := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		attrs[kv.Key] = kv.Value
	}
	for key, want := range map[attribute.Key]any{
		"gen_ai.operation.name":      "text_completion",
		"gen_ai.usage.output_tokens": int64(8),
		"gen_ai.request.max_tokens":  int64(8),
		"llmprobe.request_id":        "traced-1",
	} {
		if got := attrs[key].AsInterface(); got != want {
			t.Errorf("%s = %v, want %v", key, got, want)
		}
	}
	if got := attrs["gen_ai.usage.input_tokens"].AsInt64(); got != int64(rec.PromptTokens) || got <= 0 {
		t.Errorf("gen_ai.usage.input_tokens %d, record %d", got, rec.PromptTokens)
	}
	if got := attrs["gen_ai.response.finish_reasons"].AsStringSlice(); len(got) != 1 || got[0] != "length" {
		t.Errorf("finish reasons %v", got)
	}
	if got := attrs["llmprobe.ttft_seconds"].AsFloat64(); got != rec.TTFT.Seconds() || got <= 0 {
		t.Errorf("ttft %v, record %v", got, rec.TTFT)
	}
	// The GenAI conventions' request and response attributes
	// (tracing.SemconvVersion): the provider (no engine known: openai),
	// the server, the stream flag, the response's id and model and the
	// time to first chunk.
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(url, "http://"))
	wantPort, _ := strconv.Atoi(port)
	for key, want := range map[attribute.Key]any{
		"gen_ai.provider.name":                tracing.ProviderOpenAI,
		"gen_ai.request.model":                nil,
		"gen_ai.request.stream":               true,
		"server.address":                      host,
		"server.port":                         int64(wantPort),
		"gen_ai.response.model":               "llmprobe-sim",
		"gen_ai.response.time_to_first_chunk": rec.TTFT.Seconds(),
	} {
		got, ok := attrs[key]
		if want == nil {
			if ok {
				t.Errorf("%s = %v, want it absent (no model requested)", key, got.AsInterface())
			}
			continue
		}
		if got.AsInterface() != want {
			t.Errorf("%s = %v, want %v", key, got.AsInterface(), want)
		}
	}
	if id := attrs["gen_ai.response.id"].AsString(); id == "" || id != rec.ResponseID {
		t.Errorf("gen_ai.response.id %q, record %q", id, rec.ResponseID)
	}
	if _, ok := attrs["llmprobe.tpot_seconds"]; !ok {
		t.Error("no llmprobe.tpot_seconds")
	}
	if len(s.Events) == 0 || s.Events[0].Name != tracing.EventFirstToken || !s.Events[0].Time.Equal(rec.WallStart.Add(rec.TTFT)) {
		t.Errorf("events %+v, want %s at t0+TTFT", s.Events, tracing.EventFirstToken)
	}

	// The engine, once known, is the provider.
	exp.Reset()
	c3 := newClient(t, Options{BaseURL: url, API: APIChat, Tracer: tp.Tracer("test"), Provider: func() string { return "vllm" }})
	do(t, context.Background(), c3, Request{ID: "traced-3", Prompt: "hello", MaxTokens: 4})
	if sp := exp.GetSpans(); len(sp) != 1 || !hasAttr(sp[0].Attributes, "gen_ai.provider.name", "vllm") || !hasAttr(sp[0].Attributes, "gen_ai.operation.name", "chat") {
		t.Errorf("chat span with a provider: %+v", sp)
	}
	exp.Reset()
	spansBefore := 0

	// The unsampled request.
	never := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()), sdktrace.WithSyncer(exp))
	c2 := newClient(t, Options{BaseURL: url, Tracer: never.Tracer("test")})
	rec2 := do(t, context.Background(), c2, Request{ID: "unsampled-1", Prompt: "hello", MaxTokens: 4})
	if !rec2.OK() || rec2.TraceID != "" || len(exp.GetSpans()) != spansBefore {
		t.Errorf("unsampled: ok %v trace id %q, %d spans exported", rec2.OK(), rec2.TraceID, len(exp.GetSpans()))
	}

	// The simulator writes a trace line as its handler returns.
	got := map[string]string{}
	testutil.Eventually(t, "both requests in the simulator's trace file", func() bool {
		b, err := os.ReadFile(cfg.TraceFile)
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(string(b)) {
			var tr simulator.TraceRecord
			if err := json.Unmarshal([]byte(line), &tr); err != nil {
				return false // a line being written
			}
			got[tr.RequestID] = tr.Traceparent
		}
		return got["traced-1"] != "" && got["unsampled-1"] != ""
	})
	want := "00-" + rec.TraceID + "-" + s.SpanContext.SpanID().String() + "-01"
	if got["traced-1"] != want {
		t.Errorf("simulator saw traceparent %q, want %q", got["traced-1"], want)
	}
	if tp := got["unsampled-1"]; len(tp) != 55 || !strings.HasSuffix(tp, "-00") {
		t.Errorf("unsampled request's traceparent %q, want one with flags 00", tp)
	}
}

func hasAttr(kvs []attribute.KeyValue, key, want string) bool {
	for _, kv := range kvs {
		if string(kv.Key) == key {
			return kv.Value.AsString() == want
		}
	}
	return false
}
