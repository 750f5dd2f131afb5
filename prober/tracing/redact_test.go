package tracing_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/redact"
	"github.com/llmprobe/llmprobe/prober/tracing"
)

// spanText is every string an exported span holds: name, status,
// attributes, events (names and attributes) and links' attributes.
func spanText(s tracetest.SpanStub) string {
	var b strings.Builder
	b.WriteString(s.Name + "\n" + s.Status.Description + "\n")
	attrs := func(kv []attribute.KeyValue) {
		for _, a := range kv {
			b.WriteString(string(a.Key) + "=" + a.Value.Emit() + "\n")
		}
	}
	attrs(s.Attributes)
	for _, e := range s.Events {
		b.WriteString(e.Name + "\n")
		attrs(e.Attributes)
	}
	for _, l := range s.Links {
		attrs(l.Attributes)
	}
	return b.String()
}

// TestRedactingSpan (issue 34 N6): every string written to a span of
// StartRequest, EndRequest and Transport passes through the target's
// redactor, whichever method writes it; a failed status of Transport
// carries the standard status text, never the server's reason phrase.
func TestRedactingSpan(t *testing.T) {
	const secret = "sk-span-canary-0123456789"
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	tr := tp.Tracer("test")
	red := redact.New(secret)

	_, span := tracing.StartRequest(context.Background(), tr, tracing.Request{Operation: tracing.OperationChat, Model: "model-" + secret, RequestID: "req-" + secret}, red)
	span.SetName("renamed " + secret)
	span.AddEvent("event "+secret, trace.WithAttributes(attribute.String("e", secret), attribute.StringSlice("es", []string{"x", secret})))
	span.AddLink(trace.Link{Attributes: []attribute.KeyValue{attribute.String("l", secret)}})
	span.RecordError(errors.New("failed: Bearer "+secret), trace.WithAttributes(attribute.String("r", secret)))
	span.SetAttributes(attribute.String("a", secret), attribute.StringSlice("as", []string{secret}))
	rec := &prober.Record{Target: "t", Probe: "p", Error: prober.ClassHTTP4xx, HTTPStatus: 401,
		ErrorMessage: "401 Unauthorized Bearer " + secret, FinishReason: "stop " + secret, WallStart: time.Now()}
	tracing.EndRequest(span, rec)

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, bw, _ := http.NewResponseController(w).Hijack()
		defer conn.Close()
		bw.WriteString("HTTP/1.1 401 Unauthorized Bearer " + secret + "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		bw.Flush()
	}))
	defer srv.Close()
	hc := &http.Client{Transport: tracing.Transport(http.DefaultTransport, tr, red)}
	resp, err := hc.Get(srv.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if !strings.Contains(resp.Status, secret) {
		t.Fatalf("the server's reason phrase %q lacks the secret: the check proves nothing", resp.Status)
	}

	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	for _, s := range spans {
		text := spanText(s)
		if strings.Contains(text, secret) {
			t.Errorf("span %q holds the secret:\n%s", s.Name, text)
		}
	}
	if text := spanText(spans[0]); strings.Count(text, redact.Redacted) < 10 {
		t.Errorf("the request span has %d redactions, want one per string given (10 and more):\n%s",
			strings.Count(text, redact.Redacted), text)
	}
	if got := spans[1].Status; got.Code != codes.Error || got.Description != "401 Unauthorized" {
		t.Errorf("Transport span status %v %q, want Error \"401 Unauthorized\"", got.Code, got.Description)
	}
	if got := len(spans[0].Events); got < 2 {
		t.Errorf("%d events on the request span, want the added one and the recorded error", got)
	}
}
