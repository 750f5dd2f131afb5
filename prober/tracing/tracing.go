// Package tracing owns llmprobe's OpenTelemetry tracing: the tracer
// provider that exports spans over OTLP (HTTP or gRPC, through a batch
// processor with a bounded queue, so an unreachable collector never blocks
// a probe), the W3C trace context put on every request llmprobe sends
// (generation, discovery, /tokenize: Inject, Transport), and the client
// span of a generation request with OpenTelemetry's GenAI semantic
// conventions and llmprobe's own figures (StartRequest, EndRequest); and,
// opt-in, the conventions' GenAI client histograms over OTLP (Metrics,
// metrics.go), from the same measurement of each request.
//
// Tracing is off unless a Provider is built: callers hold a nil
// trace.Tracer then and skip every call of this package, so an untraced
// request costs nothing. docs/tracing.md describes the spans and how to
// join them with vLLM's own (--otlp-traces-endpoint).
package tracing

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/credentials"
)

// Protocols of Options.Protocol.
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// Bounds and defaults.
const (
	// DefaultMaxQueueSize is the default Options.MaxQueueSize: spans wait
	// for export in a queue of this many; a full queue drops spans, it
	// never blocks a request. The SDK (v1.47) keeps its count of dropped
	// spans private: Provider.Ended minus Exported and Failed is the spans
	// queued or dropped.
	DefaultMaxQueueSize = 2048
	// maxQueueSize bounds Options.MaxQueueSize.
	maxQueueSize = 1 << 20
	// DefaultExportTimeout bounds one export to the collector.
	DefaultExportTimeout = 10 * time.Second
	// tracerName is the instrumentation scope of llmprobe's spans.
	tracerName = "github.com/llmprobe/llmprobe/prober/tracing"
)

// Options configures a Provider. Endpoint empty means the standard
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / OTEL_EXPORTER_OTLP_ENDPOINT
// variables (as the OTLP exporters read them, with
// OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_CERTIFICATE, ...).
type Options struct {
	// Endpoint is the collector's URL (http://host:4318 for HTTP; host:4317
	// or http(s)://host:4317 for gRPC); empty: the OTEL_EXPORTER_OTLP_*
	// variables, then the exporters' defaults (localhost).
	Endpoint string
	// Protocol is ProtocolHTTP (default when empty) or ProtocolGRPC.
	Protocol string
	// Insecure sends without TLS (an http:// Endpoint does too).
	Insecure bool
	// Headers are sent with every export (e.g. a tenant or an API key);
	// they never appear in logs.
	Headers map[string]string
	// TLS is the TLS configuration of both exporters (nil: the
	// OTEL_EXPORTER_OTLP_CERTIFICATE* variables, then the system's roots).
	TLS *tls.Config
	// Timeout bounds one export (0: DefaultExportTimeout).
	Timeout time.Duration
	// ServiceName is the resource's service.name (default "llmprobe").
	ServiceName string
	// MaxQueueSize bounds the spans waiting for export (default
	// DefaultMaxQueueSize, at most maxQueueSize).
	MaxQueueSize int
}

// Provider is llmprobe's tracer provider: one OTLP exporter and one batch
// processor, shared by the tracers of every sampling ratio. It is safe for
// concurrent use.
type Provider struct {
	exp     *countingExporter
	bsp     *countingProcessor
	res     *resource.Resource
	mu      sync.Mutex
	byRatio map[float64]*sdktrace.TracerProvider
}

// defaults fills the service name ("llmprobe") and the export timeout
// (DefaultExportTimeout) when unset.
func (o *Options) defaults() {
	o.ServiceName = cmp.Or(o.ServiceName, "llmprobe")
	if o.Timeout <= 0 {
		o.Timeout = DefaultExportTimeout
	}
}

// New builds the exporter and the batch processor; it sends nothing until
// the first span ends (the exporters connect lazily), so a collector that
// is down at start is no error.
func New(ctx context.Context, o Options) (*Provider, error) {
	o.MaxQueueSize = cmp.Or(o.MaxQueueSize, DefaultMaxQueueSize)
	if o.MaxQueueSize < 1 || o.MaxQueueSize > maxQueueSize {
		return nil, fmt.Errorf("tracing queue size must be 1..%d, got %d", maxQueueSize, o.MaxQueueSize)
	}
	o.defaults()
	var client otlptrace.Client
	switch o.Protocol {
	case "", ProtocolHTTP, "http":
		opts := exporterOptions[otlptracehttp.Option]{otlptracehttp.WithTimeout, otlptracehttp.WithEndpointURL, otlptracehttp.WithInsecure,
			otlptracehttp.WithHeaders, otlptracehttp.WithTLSClientConfig}.of(o, endpointURL(o.Endpoint, "http"))
		hc, err := exportClient(o) // exportclient.go: follows no redirect
		if err != nil {
			return nil, err
		}
		client = otlptracehttp.NewClient(append(opts, otlptracehttp.WithHTTPClient(hc))...)
	case ProtocolGRPC:
		opts := exporterOptions[otlptracegrpc.Option]{otlptracegrpc.WithTimeout, otlptracegrpc.WithEndpointURL, otlptracegrpc.WithInsecure,
			otlptracegrpc.WithHeaders, func(c *tls.Config) otlptracegrpc.Option {
				return otlptracegrpc.WithTLSCredentials(credentials.NewTLS(c))
			}}.of(o, endpointURL(o.Endpoint, "grpc"))
		client = otlptracegrpc.NewClient(opts...)
	default:
		return nil, fmt.Errorf("tracing protocol must be %q or %q, got %q", ProtocolHTTP, ProtocolGRPC, o.Protocol)
	}
	exp, err := otlptrace.New(ctx, client)
	if err != nil {
		return nil, fmt.Errorf("otlp exporter: %w", err)
	}
	ce := &countingExporter{SpanExporter: exp}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attribute.String("service.name", o.ServiceName)))
	if err != nil {
		return nil, fmt.Errorf("tracing resource: %w", err)
	}
	return &Provider{
		exp:     ce,
		bsp:     &countingProcessor{SpanProcessor: sdktrace.NewBatchSpanProcessor(ce, sdktrace.WithMaxQueueSize(o.MaxQueueSize))},
		res:     res,
		byRatio: map[float64]*sdktrace.TracerProvider{},
	}, nil
}

// endpointURL makes a bare host:port a URL (http:// for scheme "http";
// for gRPC an https:// one unless insecure is asked for elsewhere). For
// HTTP, a URL without a path gets OTLP's /v1/traces, as the exporters do
// with OTEL_EXPORTER_OTLP_ENDPOINT.
func endpointURL(s, scheme string) string { return signalURL(s, scheme, "/v1/traces") }

// signalURL is endpointURL with the signal's OTLP path (/v1/traces,
// /v1/metrics) for an HTTP URL without one.
func signalURL(s, scheme, path string) string {
	if !strings.Contains(s, "://") {
		if scheme == "grpc" {
			return "https://" + s
		}
		s = "http://" + s
	}
	if scheme == "http" {
		if u, err := url.Parse(s); err == nil && (u.Path == "" || u.Path == "/") {
			u.Path = path
			return u.String()
		}
	}
	return s
}

// Tracer returns the tracer that samples ratio of its root spans (0 < ratio
// <= 1; 1 samples every one); a span with a sampled parent is always
// sampled. Tracers of the same ratio are one.
func (p *Provider) Tracer(ratio float64) trace.Tracer {
	p.mu.Lock()
	defer p.mu.Unlock()
	tp := p.byRatio[ratio]
	if tp == nil {
		sampler := sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))
		if ratio >= 1 {
			sampler = sdktrace.ParentBased(sdktrace.AlwaysSample())
		}
		tp = sdktrace.NewTracerProvider(sdktrace.WithSampler(sampler), sdktrace.WithSpanProcessor(p.bsp), sdktrace.WithResource(p.res))
		p.byRatio[ratio] = tp
	}
	return tp.Tracer(tracerName)
}

// Shutdown flushes the spans in the queue (within ctx) and stops the
// exporter. Spans that end afterwards are dropped.
func (p *Provider) Shutdown(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	// The providers share the processor: the first shutdown flushes and
	// stops it, the others find it stopped.
	for _, tp := range p.byRatio {
		errs = append(errs, tp.Shutdown(ctx))
	}
	errs = append(errs, p.bsp.Shutdown(ctx))
	return errors.Join(errs...)
}

// ForceFlush exports the spans in the queue now (within ctx).
func (p *Provider) ForceFlush(ctx context.Context) error { return p.bsp.ForceFlush(ctx) }

// Exported returns the spans the collector accepted; Failed those of the
// exports that failed (the collector unreachable, refusing, too slow).
func (p *Provider) Exported() uint64 { return p.exp.ok.Load() }

// Failed returns the spans of failed exports (see Exported).
func (p *Provider) Failed() uint64 { return p.exp.failed.Load() }

// Ended returns the sampled spans that ended and were handed to the batch
// queue (before Shutdown). Ended - Exported - Failed is the spans still
// queued (at most the queue size plus one batch of 512) or dropped from a
// full queue: the SDK does not say which.
func (p *Provider) Ended() uint64 { return p.bsp.ended.Load() }

// countingProcessor counts the sampled spans handed to the batch processor.
type countingProcessor struct {
	sdktrace.SpanProcessor
	ended atomic.Uint64
}

func (c *countingProcessor) OnEnd(s sdktrace.ReadOnlySpan) {
	if s.SpanContext().IsSampled() {
		c.ended.Add(1)
	}
	c.SpanProcessor.OnEnd(s)
}

// countingExporter counts the spans of successful and failed exports.
type countingExporter struct {
	sdktrace.SpanExporter
	ok, failed atomic.Uint64
}

func (e *countingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := e.SpanExporter.ExportSpans(ctx, spans)
	if err != nil {
		e.failed.Add(uint64(len(spans)))
	} else {
		e.ok.Add(uint64(len(spans)))
	}
	return err
}
