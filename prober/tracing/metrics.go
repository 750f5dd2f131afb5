package tracing

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/exemplar"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	"google.golang.org/grpc/credentials"

	"github.com/llmprobe/llmprobe/prober"
)

// The GenAI client metrics llmprobe exports over OTLP (Metrics), as
// SemconvVersion names them: docs/gen-ai/client-inference.md for the
// durations, docs/gen-ai/gen-ai-token-metrics.md for the token
// histograms. A test pins them.
const (
	MetricDuration           = "gen_ai.client.inference.duration"
	MetricTimeToFirstChunk   = "gen_ai.client.inference.time_to_first_chunk"
	MetricTimePerOutputChunk = "gen_ai.client.inference.time_per_output_chunk"
	MetricInputTokens        = "gen_ai.client.inference.operation.input_tokens"
	MetricOutputTokens       = "gen_ai.client.inference.operation.output_tokens"
)

// The conventions' ExplicitBucketBoundaries, copied from the documents
// of SemconvVersion.
var (
	// DurationBuckets are the bounds of the three duration histograms
	// (seconds).
	DurationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	// TokenBuckets are the bounds of the two token histograms.
	TokenBuckets = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
)

// maxAttrSets bounds the attribute sets one ClientMetrics keeps ready
// (per provider, model, response model and error class seen); past it a
// request builds its set afresh, uncached.
const maxAttrSets = 256

// Metrics is llmprobe's OTLP metrics export of the GenAI client
// histograms: one MeterProvider, one periodic reader (interval:
// OTEL_METRIC_EXPORT_INTERVAL, default 60 s) and one OTLP exporter. Off
// unless built (NewMetrics); a nil *Metrics and a nil *ClientMetrics
// record nothing. It is safe for concurrent use.
type Metrics struct {
	mp  *sdkmetric.MeterProvider
	exp *countingMetricExporter

	duration, ttfc, tpoc metric.Float64Histogram
	inTok, outTok        metric.Int64Histogram
}

// NewMetrics builds the metrics exporter with the options of the trace
// exporter (New): the same endpoint (an HTTP one without a path gets
// /v1/metrics), protocol, headers, TLS and timeout. Endpoint empty reads
// OTEL_EXPORTER_OTLP_METRICS_ENDPOINT / OTEL_EXPORTER_OTLP_ENDPOINT. It
// sends nothing until its first interval ends.
func NewMetrics(ctx context.Context, o Options) (*Metrics, error) {
	o.defaults()
	var exp sdkmetric.Exporter
	switch o.Protocol {
	case "", ProtocolHTTP, "http":
		opts := exporterOptions[otlpmetrichttp.Option]{otlpmetrichttp.WithTimeout, otlpmetrichttp.WithEndpointURL, otlpmetrichttp.WithInsecure,
			otlpmetrichttp.WithHeaders, otlpmetrichttp.WithTLSClientConfig}.of(o, signalURL(o.Endpoint, "http", "/v1/metrics"))
		hc, err := exportClientFor(o, "METRICS") // follows no redirect, bounds the answer
		if err != nil {
			return nil, err
		}
		e, err := otlpmetrichttp.New(ctx, append(opts, otlpmetrichttp.WithHTTPClient(hc))...)
		if err != nil {
			return nil, fmt.Errorf("otlp metrics exporter: %w", err)
		}
		exp = e
	case ProtocolGRPC:
		opts := exporterOptions[otlpmetricgrpc.Option]{otlpmetricgrpc.WithTimeout, otlpmetricgrpc.WithEndpointURL, otlpmetricgrpc.WithInsecure,
			otlpmetricgrpc.WithHeaders, func(c *tls.Config) otlpmetricgrpc.Option {
				return otlpmetricgrpc.WithTLSCredentials(credentials.NewTLS(c))
			}}.of(o, endpointURL(o.Endpoint, "grpc"))
		e, err := otlpmetricgrpc.New(ctx, opts...)
		if err != nil {
			return nil, fmt.Errorf("otlp metrics exporter: %w", err)
		}
		exp = e
	default:
		return nil, fmt.Errorf("tracing protocol must be %q or %q, got %q", ProtocolHTTP, ProtocolGRPC, o.Protocol)
	}
	ce := &countingMetricExporter{Exporter: exp}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attribute.String("service.name", o.ServiceName)))
	if err != nil {
		return nil, fmt.Errorf("metrics resource: %w", err)
	}
	// No exemplars: the per-chunk observations stay cheap (the request's
	// trace id is on the Prometheus exemplars and in the span).
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(sdkmetric.NewPeriodicReader(ce)),
		sdkmetric.WithExemplarFilter(exemplar.AlwaysOffFilter))
	m, err := newMetrics(mp)
	if err != nil {
		return nil, err
	}
	m.exp = ce
	return m, nil
}

// newMetrics creates the instruments on mp, with the conventions' names,
// units, descriptions and bucket bounds.
func newMetrics(mp *sdkmetric.MeterProvider) (*Metrics, error) {
	meter := mp.Meter(tracerName)
	m := &Metrics{mp: mp}
	// Durations in seconds with DurationBuckets, token counts with
	// TokenBuckets.
	seconds := func(name, desc string) (metric.Float64Histogram, error) {
		return meter.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc), metric.WithExplicitBucketBoundaries(DurationBuckets...))
	}
	tokens := func(name, desc string) (metric.Int64Histogram, error) {
		return meter.Int64Histogram(name, metric.WithUnit("{token}"), metric.WithDescription(desc), metric.WithExplicitBucketBoundaries(TokenBuckets...))
	}
	var errs [5]error
	m.duration, errs[0] = seconds(MetricDuration, "GenAI client inference operation duration.")
	m.ttfc, errs[1] = seconds(MetricTimeToFirstChunk, "Time to receive the first chunk, measured from when the client issues the generation request to when the first chunk is received in the response stream.")
	m.tpoc, errs[2] = seconds(MetricTimePerOutputChunk, "Time per output chunk, recorded for each chunk received after the first one, measured as the time elapsed from the end of the previous chunk to the end of the current chunk.")
	m.inTok, errs[3] = tokens(MetricInputTokens, "The number of input (prompt) tokens used per inference operation.")
	m.outTok, errs[4] = tokens(MetricOutputTokens, "The number of output (completion) tokens used per inference operation.")
	if err := errors.Join(errs[:]...); err != nil {
		return nil, fmt.Errorf("gen_ai metrics: %w", err)
	}
	return m, nil
}

// Shutdown exports what was recorded since the last export (within ctx)
// and stops the exporter; nil m: nothing.
func (m *Metrics) Shutdown(ctx context.Context) error {
	if m == nil {
		return nil
	}
	return m.mp.Shutdown(ctx)
}

// ForceFlush exports what was recorded now (within ctx).
func (m *Metrics) ForceFlush(ctx context.Context) error {
	if m == nil {
		return nil
	}
	return m.mp.ForceFlush(ctx)
}

// Exports returns the exports the collector accepted; FailedExports those
// that failed (their data points are lost: the reader does not retry).
func (m *Metrics) Exports() uint64 { return m.exp.ok.Load() }

// FailedExports returns the failed exports (see Exports).
func (m *Metrics) FailedExports() uint64 { return m.exp.failed.Load() }

// countingMetricExporter counts successful and failed exports.
type countingMetricExporter struct {
	sdkmetric.Exporter
	ok, failed atomic.Uint64
}

func (e *countingMetricExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	err := e.Exporter.Export(ctx, rm)
	if err != nil {
		e.failed.Add(1)
	} else {
		e.ok.Add(1)
	}
	return err
}

// ClientMetrics records the requests of one client (one target's
// endpoint and API) into m: the operation, server address and port are
// fixed when it is built, and the attribute sets of each (provider,
// model, response model, error class) are built once and kept (at most
// maxAttrSets), so a request costs the histograms' own recording.
type ClientMetrics struct {
	m    *Metrics
	red  Redactor
	base []attribute.KeyValue
	n    atomic.Int32
	mu   sync.RWMutex
	sets map[attrKey][]metric.RecordOption
}

type attrKey struct {
	provider, model, responseModel string
	err                            prober.ErrorClass
}

// Client returns the recorder of one client's requests: operation is
// gen_ai.operation.name, server the URL the requests go to (server.address
// and server.port), red the target's redactor, which every string
// attribute passes through, as on spans. A nil m returns nil, which
// records nothing.
func (m *Metrics) Client(operation string, server *url.URL, red Redactor) *ClientMetrics {
	if m == nil {
		return nil
	}
	if red == nil {
		red = shapes{}
	}
	base := []attribute.KeyValue{attribute.String("gen_ai.operation.name", operation)}
	if server != nil && server.Hostname() != "" {
		base = append(base, attribute.String("server.address", server.Hostname()))
		if port := serverPort(server); port > 0 {
			base = append(base, attribute.Int("server.port", port))
		}
	}
	return &ClientMetrics{m: m, red: red, base: base, sets: map[attrKey][]metric.RecordOption{}}
}

// Record records one finished generation request rec, sent by a client
// whose engine is provider ("": ProviderOpenAI): its duration (E2E; a
// failed request too, with error.type), for a successful streamed
// request the time to first chunk (TTFT) and one time per output chunk
// for each chunk after the first (ITL) — the observations
// llmprobe_ttft_seconds and llmprobe_itl_seconds get — and the prompt and
// completion tokens the server reported (0 when none). A request that
// was never sent records nothing. A nil c records nothing.
func (c *ClientMetrics) Record(ctx context.Context, provider string, rec *prober.Record) {
	if c == nil || rec.NotSent {
		return
	}
	provider = cmp.Or(provider, ProviderOpenAI)
	// A slice built once: passed as opts... it costs no allocation.
	opts := c.attrs(attrKey{provider: provider, model: rec.Model, responseModel: rec.ResponseModel, err: rec.Error})
	c.m.duration.Record(ctx, rec.E2E.Seconds(), opts...)
	if rec.OK() && !rec.NoStream {
		c.m.ttfc.Record(ctx, rec.TTFT.Seconds(), opts...)
		for _, gap := range rec.ITL {
			c.m.tpoc.Record(ctx, gap.Seconds(), opts...)
		}
	}
	c.m.inTok.Record(ctx, int64(max(rec.PromptTokens, 0)), opts...)
	c.m.outTok.Record(ctx, int64(max(rec.CompletionTokens, 0)), opts...)
}

// attrs returns the record options of k's attribute set, built once.
func (c *ClientMetrics) attrs(k attrKey) []metric.RecordOption {
	c.mu.RLock()
	opt, ok := c.sets[k]
	c.mu.RUnlock()
	if ok {
		return opt
	}
	kv := make([]attribute.KeyValue, 0, len(c.base)+4)
	kv = append(kv, c.base...)
	kv = append(kv, attribute.String("gen_ai.provider.name", k.provider))
	if k.model != "" {
		kv = append(kv, attribute.String("gen_ai.request.model", k.model))
	}
	if k.responseModel != "" {
		kv = append(kv, attribute.String("gen_ai.response.model", k.responseModel))
	}
	if k.err != prober.ClassNone {
		kv = append(kv, attribute.String("error.type", string(k.err)))
	}
	set := attribute.NewSet(redactAttributes(c.red, kv)...)
	opt = []metric.RecordOption{metric.WithAttributeSet(set)}
	if c.n.Load() < maxAttrSets {
		c.mu.Lock()
		if _, ok := c.sets[k]; !ok && len(c.sets) < maxAttrSets {
			c.sets[k] = opt
			c.n.Add(1)
		}
		c.mu.Unlock()
	}
	return opt
}
