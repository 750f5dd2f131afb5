package daemon

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmprobe/llmprobe/prober/tracing"
)

// Tracing is `serve --tracing.*`: OpenTelemetry tracing of every probe
// request (prober/tracing, docs/tracing.md). Off unless Enabled.
type Tracing struct {
	// Enabled turns tracing on (--tracing.endpoint, or --tracing.enabled
	// with the standard OTEL_EXPORTER_OTLP_* variables).
	Enabled bool
	// Endpoint, Protocol and Insecure are tracing.Options'; an empty
	// Endpoint reads OTEL_EXPORTER_OTLP_TRACES_ENDPOINT /
	// OTEL_EXPORTER_OTLP_ENDPOINT (headers, certificates and timeouts
	// always come from the OTEL_EXPORTER_OTLP_* variables when set).
	Endpoint, Protocol string
	Insecure           bool
	// SampleRatio is the share of probe requests traced, 0 < r <= 1
	// (default 1: every one).
	SampleRatio float64
}

// MinSampleRatio bounds Tracing.SampleRatio from below (one request in a
// million); its upper bound is 1.
const MinSampleRatio = 1e-6

// Validate checks t (the error names the flag).
func (t Tracing) Validate() error {
	if !t.Enabled && t.Endpoint == "" {
		return nil
	}
	if t.SampleRatio < MinSampleRatio || t.SampleRatio > 1 {
		return fmt.Errorf("--tracing.sample-ratio must be in [%g, 1], got %g", MinSampleRatio, t.SampleRatio)
	}
	if t.Protocol != "" && t.Protocol != tracing.ProtocolHTTP && t.Protocol != tracing.ProtocolGRPC {
		return fmt.Errorf("--tracing.protocol must be %s or %s, got %q", tracing.ProtocolHTTP, tracing.ProtocolGRPC, t.Protocol)
	}
	return nil
}

// startTracing builds the tracer provider when tracing is on (nil, nil
// when off).
func startTracing(ctx context.Context, t Tracing, logger log.Logger) (*tracing.Provider, error) {
	if !t.Enabled && t.Endpoint == "" {
		return nil, nil
	}
	if err := t.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	p, err := tracing.New(ctx, tracing.Options{Endpoint: t.Endpoint, Protocol: t.Protocol, Insecure: t.Insecure})
	if err != nil {
		return nil, fmt.Errorf("%w: --tracing: %w", ErrUsage, err)
	}
	endpoint := t.Endpoint
	if endpoint == "" {
		endpoint = firstEnv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	// The endpoint is logged without its userinfo or query (never a secret);
	// headers are never logged.
	level.Info(logger).Log("msg", "tracing on", "endpoint", redactURL(endpoint), "protocol", orDefault(t.Protocol, tracing.ProtocolHTTP), "sample_ratio", t.SampleRatio)
	return p, nil
}

// registerTracing exports the spans p sent and failed to send.
func registerTracing(reg prometheus.Registerer, p *tracing.Provider) {
	reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "llmprobe_tracing_spans_exported_total",
			Help: "Spans the OTLP collector accepted (--tracing.endpoint).",
		}, func() float64 { return float64(p.Exported()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "llmprobe_tracing_spans_failed_total",
			Help: "Spans of OTLP exports that failed (collector unreachable, refusing or too slow); they are dropped.",
		}, func() float64 { return float64(p.Failed()) }),
	)
}

// stopTracing flushes the spans still queued (within timeout) and stops
// the exporter; nil p: nothing.
func stopTracing(p *tracing.Provider, timeout time.Duration, logger log.Logger) {
	if p == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		level.Warn(logger).Log("msg", "tracing: spans not flushed at shutdown", "err", err)
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

func firstEnv(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
