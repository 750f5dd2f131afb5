package tracing

import (
	"cmp"
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/llmprobe/llmprobe/prober"
)

// propagator writes traceparent and tracestate (W3C Trace Context): the
// headers vLLM reads (--otlp-traces-endpoint) to parent its own spans.
var propagator = propagation.TraceContext{}

// Operation names of gen_ai.operation.name (OpenTelemetry GenAI semantic
// conventions).
const (
	OperationChat           = "chat"
	OperationTextCompletion = "text_completion"
	OperationEmbeddings     = "embeddings"
	// OperationRerank has no predefined value in the conventions; it is
	// the API's own name, as they recommend for a system-specific one.
	OperationRerank = "rerank"
)

// SemconvVersion names the OpenTelemetry GenAI semantic conventions the
// generation spans follow: the span gen_ai.client.inference of
// open-telemetry/semantic-conventions-genai, docs/gen-ai/client-inference.md
// at commit 024a4f944a1291fcb627c9c47da69e79868dd15e (the conventions
// moved there from semantic-conventions v1.37). A test pins the attribute
// names.
const SemconvVersion = "semantic-conventions-genai@024a4f9"

// ProviderOpenAI is gen_ai.provider.name when the engine behind an
// OpenAI-compatible API is not known: the telemetry flavour is OpenAI's
// (the conventions' discriminator), whoever serves it.
const ProviderOpenAI = "openai"

// The span event names of a generation span. The conventions define the
// time to first chunk as an attribute (gen_ai.response.time_to_first_chunk)
// and no event: these are llmprobe's, in its own namespace.
const (
	// EventFirstToken is at TTFT: the first event with a non-empty choices
	// array (Record.TTFT).
	EventFirstToken = "llmprobe.first_token"
	// EventFirstAnswerToken is at the first event with non-empty text
	// (Record.TTFTText), when it differs from the first token.
	EventFirstAnswerToken = "llmprobe.first_answer_token"
)

// Request describes the generation request a span is for.
type Request struct {
	// Operation is gen_ai.operation.name (OperationChat, ...).
	Operation string
	// Model is the model requested (gen_ai.request.model); "" when the
	// server's default is used.
	Model string
	// Provider is gen_ai.provider.name: the engine when known (vllm,
	// sglang, tgi, llamacpp, ollama), else ProviderOpenAI.
	Provider string
	// RequestID is llmprobe's request id (llmprobe.request_id).
	RequestID string
	// Server is the URL the request goes to: server.address and
	// server.port (the scheme's default port when the URL has none).
	Server *url.URL
	// Stream is true for a streamed request (gen_ai.request.stream is set
	// only then, as the conventions say).
	Stream bool
}

// StartRequest starts the client span of one generation request
// ("<operation> <model>", kind client) under ctx's span, if any, with the
// conventions' request attributes. Every string the span is given, here
// and later, passes through red (the target's redactor; Redacting). The
// caller puts its context on the request with Inject and ends the span
// with EndRequest.
func StartRequest(ctx context.Context, t trace.Tracer, r Request, red Redactor) (context.Context, trace.Span) {
	name := r.Operation
	if r.Model != "" {
		name += " " + r.Model
	}
	provider := cmp.Or(r.Provider, ProviderOpenAI)
	attrs := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", r.Operation),
		attribute.String("gen_ai.provider.name", provider),
		attribute.String("llmprobe.request_id", r.RequestID),
	}
	if r.Model != "" {
		attrs = append(attrs, attribute.String("gen_ai.request.model", r.Model))
	}
	if r.Stream {
		attrs = append(attrs, attribute.Bool("gen_ai.request.stream", true))
	}
	if u := r.Server; u != nil && u.Hostname() != "" {
		attrs = append(attrs, attribute.String("server.address", u.Hostname()))
		if port := serverPort(u); port > 0 {
			attrs = append(attrs, attribute.Int("server.port", port))
		}
	}
	return start(ctx, t, red, name, trace.SpanKindClient, attrs...)
}

// serverPort is u's port, or its scheme's default.
func serverPort(u *url.URL) int {
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil {
			return 0
		}
		return n
	}
	switch u.Scheme {
	case "https":
		return 443
	case "http":
		return 80
	}
	return 0
}

// Inject writes ctx's span context to h as traceparent (and tracestate
// when the context carries one). A context without a valid span writes
// nothing.
func Inject(ctx context.Context, h http.Header) {
	propagator.Inject(ctx, propagation.HeaderCarrier(h))
}

// TraceID returns the trace id of span as 32 hex digits when the span is
// sampled (recorded and exported), else "".
func TraceID(span trace.Span) string {
	sc := span.SpanContext()
	if !sc.IsSampled() {
		return ""
	}
	return sc.TraceID().String()
}

// EndRequest sets the measurement of rec on span (the GenAI usage and
// finish reason, llmprobe's TTFT, TPOT, E2E, send lag and error class),
// adds the first-token events at their measured times and ends the span.
// A span that is not recording is only ended.
func EndRequest(span trace.Span, rec *prober.Record) {
	if !span.IsRecording() {
		span.End()
		return
	}
	attrs := make([]attribute.KeyValue, 0, 16)
	attrs = append(attrs,
		attribute.String("llmprobe.target", rec.Target),
		attribute.String("llmprobe.probe", rec.Probe),
		attribute.Int("gen_ai.request.max_tokens", rec.OutputTokensRequested),
		attribute.Int("llmprobe.input_tokens_requested", rec.InputTokens),
		attribute.Float64("llmprobe.send_lag_seconds", rec.SendLag.Seconds()),
	)
	if rec.HTTPStatus != 0 {
		attrs = append(attrs, attribute.Int("http.response.status_code", rec.HTTPStatus))
	}
	if rec.PromptTokens > 0 {
		attrs = append(attrs, attribute.Int("gen_ai.usage.input_tokens", rec.PromptTokens))
	}
	if rec.CompletionTokens > 0 || rec.OK() {
		attrs = append(attrs, attribute.Int("gen_ai.usage.output_tokens", rec.CompletionTokens))
	}
	if rec.FinishReason != "" {
		attrs = append(attrs, attribute.StringSlice("gen_ai.response.finish_reasons", []string{rec.FinishReason}))
	}
	if rec.CachedTokensReported {
		attrs = append(attrs, attribute.Int("gen_ai.usage.cache_read.input_tokens", rec.CachedTokens))
	}
	if rec.ResponseID != "" {
		attrs = append(attrs, attribute.String("gen_ai.response.id", rec.ResponseID))
	}
	if rec.ResponseModel != "" {
		attrs = append(attrs, attribute.String("gen_ai.response.model", rec.ResponseModel))
	}
	if rec.ReasoningTokens > 0 {
		attrs = append(attrs, attribute.Int("gen_ai.usage.reasoning.output_tokens", rec.ReasoningTokens))
	}
	if !rec.NoStream && rec.TTFT > 0 {
		attrs = append(attrs,
			attribute.Float64("gen_ai.response.time_to_first_chunk", rec.TTFT.Seconds()),
			attribute.Float64("llmprobe.ttft_seconds", rec.TTFT.Seconds()))
		span.AddEvent(EventFirstToken, trace.WithTimestamp(rec.WallStart.Add(rec.TTFT)))
		if rec.TTFTText > 0 && rec.TTFTText != rec.TTFT {
			span.AddEvent(EventFirstAnswerToken, trace.WithTimestamp(rec.WallStart.Add(rec.TTFTText)))
		}
	}
	if tpot, ok := rec.TPOT(); ok {
		attrs = append(attrs, attribute.Float64("llmprobe.tpot_seconds", tpot.Seconds()))
	}
	if rec.E2E > 0 {
		attrs = append(attrs, attribute.Float64("llmprobe.e2e_seconds", rec.E2E.Seconds()))
	}
	if rec.Retry != prober.RetryNone {
		attrs = append(attrs, attribute.String("llmprobe.retry", string(rec.Retry)))
	}
	if !rec.OK() {
		attrs = append(attrs,
			attribute.String("error.type", string(rec.Error)),
			attribute.String("llmprobe.error_class", string(rec.Error)))
		span.SetStatus(codes.Error, rec.ErrorMessage)
	}
	span.SetAttributes(attrs...)
	span.End()
}

// Transport returns a RoundTripper that sends each request of base in a
// client span of its own ("<method> <path>", named after the request's
// path, e.g. GET /v1/models or POST /tokenize) with its traceparent, for
// the requests besides generation: discovery, engine info, /tokenize.
// Every string a span is given passes through red (Redacting); a failed
// status carries the status code and its standard text, never the
// server's reason phrase. A nil t returns base.
func Transport(base http.RoundTripper, t trace.Tracer, red Redactor) http.RoundTripper {
	if t == nil {
		return base
	}
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{base: base, t: t, red: red}
}

type transport struct {
	base http.RoundTripper
	t    trace.Tracer
	red  Redactor
}

func (tr *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, span := start(req.Context(), tr.t, tr.red, req.Method+" "+req.URL.Path, trace.SpanKindClient,
		attribute.String("http.request.method", req.Method),
		attribute.String("url.path", req.URL.Path),
		attribute.String("server.address", req.URL.Hostname()),
	)
	defer span.End()
	r2 := req.Clone(ctx)
	Inject(ctx, r2.Header)
	start := time.Now()
	resp, err := tr.base.RoundTrip(r2)
	if err != nil {
		span.SetStatus(codes.Error, "request failed")
		span.SetAttributes(attribute.String("error.type", "connect"))
		return nil, err
	}
	span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode),
		attribute.Float64("llmprobe.headers_seconds", time.Since(start).Seconds()))
	if resp.StatusCode >= 400 {
		span.SetStatus(codes.Error, statusText(resp.StatusCode))
		span.SetAttributes(attribute.String("error.type", string(prober.ClassForStatus(resp.StatusCode))))
	}
	return resp, nil
}

// statusText is a failed status as a span's status description: the code
// and its standard text ("401 Unauthorized"), never the reason phrase the
// server sent, which may echo a credential.
func statusText(code int) string {
	if t := http.StatusText(code); t != "" {
		return strconv.Itoa(code) + " " + t
	}
	return strconv.Itoa(code)
}
