package tracing

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/llmprobe/llmprobe/prober/redact"
)

// Redactor removes secrets from text: a target's *redact.Redactor
// (a nil one still removes what redact.Text does).
type Redactor interface {
	Redact(string) string
}

// Redacting returns span with every string written to it passed through
// red: its name, attributes (strings and string slices), events' names and
// attributes, links' attributes, recorded errors and status description.
// So a span carries nothing a server echoed unredacted, whichever call
// site writes it (issue 34 N6: a reason phrase "401 Unauthorized Bearer
// sk-..." as the status description). A nil red redacts with
// redact.Text (the shapes: Bearer, Basic, URL userinfo).
func Redacting(span trace.Span, red Redactor) trace.Span {
	if red == nil {
		red = shapes{}
	}
	return redactingSpan{Span: span, red: red}
}

// shapes is the Redactor that knows no literal secret.
type shapes struct{}

func (shapes) Redact(s string) string { return redact.Text(s) }

type redactingSpan struct {
	trace.Span
	red Redactor
}

func (s redactingSpan) SetName(name string) { s.Span.SetName(s.red.Redact(name)) }

func (s redactingSpan) SetStatus(code codes.Code, description string) {
	s.Span.SetStatus(code, s.red.Redact(description))
}

func (s redactingSpan) SetAttributes(kv ...attribute.KeyValue) {
	s.Span.SetAttributes(redactAttributes(s.red, kv)...)
}

func (s redactingSpan) AddEvent(name string, options ...trace.EventOption) {
	s.Span.AddEvent(s.red.Redact(name), redactEvent(s.red, options)...)
}

func (s redactingSpan) AddLink(link trace.Link) {
	link.Attributes = redactAttributes(s.red, link.Attributes)
	s.Span.AddLink(link)
}

func (s redactingSpan) RecordError(err error, options ...trace.EventOption) {
	if err == nil {
		return
	}
	s.Span.RecordError(errors.New(s.red.Redact(err.Error())), redactEvent(s.red, options)...)
}

// redactEvent returns options with their attributes redacted, keeping
// their timestamp and stack trace setting.
func redactEvent(red Redactor, options []trace.EventOption) []trace.EventOption {
	if len(options) == 0 {
		return nil
	}
	cfg := trace.NewEventConfig(options...)
	out := []trace.EventOption{trace.WithTimestamp(cfg.Timestamp()), trace.WithStackTrace(cfg.StackTrace())}
	if attrs := cfg.Attributes(); len(attrs) > 0 {
		out = append(out, trace.WithAttributes(redactAttributes(red, attrs)...))
	}
	return out
}

// redactAttributes returns kv with string and string-slice values
// redacted (a new slice; kv is not changed).
func redactAttributes(red Redactor, kv []attribute.KeyValue) []attribute.KeyValue {
	out := make([]attribute.KeyValue, len(kv))
	for i, a := range kv {
		switch a.Value.Type() {
		case attribute.STRING:
			a = attribute.String(string(a.Key), red.Redact(a.Value.AsString()))
		case attribute.STRINGSLICE:
			ss := a.Value.AsStringSlice()
			for j := range ss {
				ss[j] = red.Redact(ss[j])
			}
			a = attribute.StringSlice(string(a.Key), ss)
		}
		out[i] = a
	}
	return out
}

// start starts a span named name with attrs through red: the name and
// attributes redacted before the span holds them, the span returned
// Redacting.
func start(ctx context.Context, t trace.Tracer, red Redactor, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if red == nil {
		red = shapes{}
	}
	ctx, span := t.Start(ctx, red.Redact(name), trace.WithSpanKind(kind), trace.WithAttributes(redactAttributes(red, attrs)...))
	return ctx, Redacting(span, red)
}
