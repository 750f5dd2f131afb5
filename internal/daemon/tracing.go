package daemon

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	promconfig "github.com/prometheus/common/config"
	"go.opentelemetry.io/otel"

	"github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/redact"
	"github.com/llmprobe/llmprobe/prober/tracing"
)

// Tracing is `serve --tracing.*` and the config file's tracing block:
// OpenTelemetry tracing of every probe request (prober/tracing,
// docs/tracing.md). Off unless Enabled, Endpoint or File.Endpoint is set.
// A flag overrides the file's key; the standard OTEL_EXPORTER_OTLP_*
// variables fill in what neither sets (the exporters read them).
type Tracing struct {
	// Enabled turns tracing on (--tracing.enabled: the collector from the
	// file's tracing block or the standard OTEL_EXPORTER_OTLP_* variables).
	Enabled bool
	// Endpoint, Protocol and Insecure are tracing.Options'; empty (false)
	// takes the file's. An empty Endpoint in both reads
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / OTEL_EXPORTER_OTLP_ENDPOINT.
	Endpoint, Protocol string
	Insecure           bool
	// SampleRatio is the share of probe requests traced, 0 < r <= 1; 0:
	// the file's sample_ratio, then 1 (every one).
	SampleRatio float64
	// Metrics turns on the OTLP export of the GenAI client histograms
	// (--tracing.metrics; tracing.Metrics, docs/tracing.md "Metrics over
	// OTLP") to the collector the spans go to; on its own (tracing off),
	// to OTEL_EXPORTER_OTLP_METRICS_ENDPOINT / OTEL_EXPORTER_OTLP_ENDPOINT.
	Metrics bool
	// File is the config file's tracing block (headers, tls_config,
	// timeout, and the keys no flag sets), read at start; Run fills it in
	// from ConfigFile.
	File config.TracingConfig
}

// MinSampleRatio bounds Tracing.SampleRatio from below (one request in a
// million); its upper bound is 1.
const MinSampleRatio = config.MinTracingSampleRatio

// On reports whether tracing is on.
func (t Tracing) On() bool { return t.Enabled || t.Endpoint != "" || t.File.Endpoint != "" }

// Resolved returns t with what the flags leave unset taken from File, and
// the defaults (http/protobuf, ratio 1).
func (t Tracing) Resolved() Tracing {
	t.Endpoint = cmp.Or(t.Endpoint, t.File.Endpoint)
	t.Protocol = cmp.Or(t.Protocol, t.File.Protocol, tracing.ProtocolHTTP)
	t.Insecure = t.Insecure || t.File.Insecure
	t.SampleRatio = cmp.Or(t.SampleRatio, t.File.SampleRatio, 1)
	return t
}

// Validate checks the flags of t (the error names the flag; the file's
// block was checked at load). A SampleRatio of 0 is unset.
func (t Tracing) Validate() error {
	if t.SampleRatio != 0 && (t.SampleRatio < MinSampleRatio || t.SampleRatio > 1) || math.IsNaN(t.SampleRatio) {
		return fmt.Errorf("--tracing.sample-ratio must be in [%g, 1], got %g", MinSampleRatio, t.SampleRatio)
	}
	if t.Protocol != "" && t.Protocol != tracing.ProtocolHTTP && t.Protocol != tracing.ProtocolGRPC {
		return fmt.Errorf("--tracing.protocol must be %s or %s, got %q", tracing.ProtocolHTTP, tracing.ProtocolGRPC, t.Protocol)
	}
	return nil
}

// Options returns the exporter's options of a resolved t: the file's
// headers, TLS (read now: its files were checked at load) and timeout; an
// ErrUsage when t is not valid (Validate) or its TLS cannot be built.
func (t Tracing) Options() (tracing.Options, error) {
	if err := t.Validate(); err != nil {
		return tracing.Options{}, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	o := tracing.Options{Endpoint: t.Endpoint, Protocol: t.Protocol, Insecure: t.Insecure,
		Headers: t.File.StringHeaders(), Timeout: t.File.Timeout}
	if tc := t.File.TLSConfig; tc != (promconfig.TLSConfig{}) {
		c, err := promconfig.NewTLSConfig(&tc)
		if err != nil {
			return o, fmt.Errorf("%w: tracing.tls_config: %w", ErrUsage, err)
		}
		o.TLS = c
	}
	return o, nil
}

// loggedEndpoint is the collector's URL for logging, without its userinfo
// or query (never a secret): the flag's, else the signal's environment
// variable signalEnv, else OTEL_EXPORTER_OTLP_ENDPOINT.
func (t Tracing) loggedEndpoint(signalEnv string) string {
	return redactURL(cmp.Or(t.Endpoint, os.Getenv(signalEnv), os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT")))
}

// logSDKErrors routes the OpenTelemetry SDK's errors (failed exports) to
// logger as warnings, with the headers' values redacted.
func (t Tracing) logSDKErrors(logger log.Logger) {
	red := redact.New()
	for _, v := range t.File.HeaderValues() {
		red.AddCredential(v)
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		level.Warn(logger).Log("msg", "tracing: OpenTelemetry error", "err", red.Redact(err.Error()))
	}))
}

// StartTracing builds the tracer provider of a resolved t when tracing is
// on (nil, nil when off; serve, sweep and compare), and routes the OpenTelemetry SDK's errors (failed
// exports) to logger as warnings, with the headers' values redacted.
func StartTracing(ctx context.Context, t Tracing, logger log.Logger) (*tracing.Provider, error) {
	if !t.On() {
		return nil, nil
	}
	opts, err := t.Options()
	if err != nil {
		return nil, err
	}
	p, err := tracing.New(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("%w: --tracing: %w", ErrUsage, err)
	}
	t.logSDKErrors(logger)
	// The headers' names only are logged, never their values.
	level.Info(logger).Log("msg", "tracing on", "endpoint", t.loggedEndpoint("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), "protocol", t.Protocol,
		"sample_ratio", t.SampleRatio, "headers", strings.Join(t.File.HeaderNames(), ","),
		"tls_config", t.File.TLSConfig != (promconfig.TLSConfig{}))
	return p, nil
}

// StartMetrics builds the OTLP metrics exporter of a resolved t when
// t.Metrics is set (nil, nil when not): the same collector, protocol,
// headers and TLS as the spans'. The SDK's errors go to the handler
// StartTracing set, or to logger when tracing is off.
func StartMetrics(ctx context.Context, t Tracing, logger log.Logger) (*tracing.Metrics, error) {
	if !t.Metrics {
		return nil, nil
	}
	opts, err := t.Options()
	if err != nil {
		return nil, err
	}
	m, err := tracing.NewMetrics(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("%w: --tracing.metrics: %w", ErrUsage, err)
	}
	if !t.On() {
		t.logSDKErrors(logger)
	}
	level.Info(logger).Log("msg", "OTLP metrics on", "endpoint", t.loggedEndpoint("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"), "protocol", t.Protocol,
		"semconv", tracing.SemconvVersion, "interval", cmp.Or(os.Getenv("OTEL_METRIC_EXPORT_INTERVAL"), "60000"))
	return m, nil
}

// counter is a counter read from a running exporter.
type counter struct {
	Name, Help string
	Value      func() uint64
}

// registerCounters registers each counter as a CounterFunc.
func registerCounters(reg prometheus.Registerer, cs ...counter) {
	for _, c := range cs {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: c.Name, Help: c.Help},
			func() float64 { return float64(c.Value()) }))
	}
}

// registerMetrics exports the OTLP metrics exports that succeeded and
// failed.
func registerMetrics(reg prometheus.Registerer, m *tracing.Metrics) {
	registerCounters(reg,
		counter{Name: "llmprobe_tracing_metric_exports_total",
			Help: "OTLP metrics exports (--tracing.metrics) the collector accepted.", Value: m.Exports},
		counter{Name: "llmprobe_tracing_metric_exports_failed_total",
			Help: "OTLP metrics exports (--tracing.metrics) that failed; their data points are lost, cumulative histograms catch up at the next export.", Value: m.FailedExports},
	)
}

// shutdownWithin runs shutdown with a context that ends after timeout.
func shutdownWithin(shutdown func(context.Context) error, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return shutdown(ctx)
}

// StopMetrics exports what was recorded since the last export (within
// timeout) and stops the exporter; nil m: nothing.
func StopMetrics(m *tracing.Metrics, timeout time.Duration, logger log.Logger) {
	if m == nil {
		return
	}
	if err := shutdownWithin(m.Shutdown, timeout); err != nil {
		level.Warn(logger).Log("msg", "tracing: metrics not exported at shutdown", "err", err)
	}
}

// registerTracing exports the spans p queued, sent and failed to send.
func registerTracing(reg prometheus.Registerer, p *tracing.Provider) {
	registerCounters(reg,
		counter{Name: "llmprobe_tracing_spans_exported_total",
			Help: "Spans the OTLP collector accepted (--tracing.endpoint).", Value: p.Exported},
		counter{Name: "llmprobe_tracing_spans_ended_total",
			Help: "Sampled spans handed to the export queue; minus exported and failed: those still queued (at most the queue, 2048, and one batch) or dropped from a full queue.", Value: p.Ended},
		counter{Name: "llmprobe_tracing_spans_failed_total",
			Help: "Spans of OTLP exports that failed (collector unreachable, refusing or too slow); they are dropped.", Value: p.Failed},
	)
}

// StopTracing flushes the spans still queued (within timeout) and stops
// the exporter; nil p: nothing. A collector that is down or slow costs at
// most timeout and a warning.
func StopTracing(p *tracing.Provider, timeout time.Duration, logger log.Logger) {
	if p == nil {
		return
	}
	if err := shutdownWithin(p.Shutdown, timeout); err != nil {
		level.Warn(logger).Log("msg", "tracing: spans not flushed at shutdown", "err", err)
	}
	// Once flushed, the spans neither exported nor failed were dropped from
	// a full queue (or are still queued when the flush timed out).
	ended, ok, failed := p.Ended(), p.Exported(), p.Failed()
	if failed > 0 || ended > ok+failed {
		level.Warn(logger).Log("msg", "tracing: spans lost", "ended", ended, "exported", ok, "failed", failed,
			"not_exported", ended-ok-failed)
	}
}

// redactURL drops a URL's userinfo and query (logged endpoints).
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "<unparsable>"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}
