package main

import (
	"time"

	"github.com/alecthomas/kingpin/v2"
	"go.opentelemetry.io/otel/trace"

	"github.com/llmprobe/llmprobe/internal/daemon"
	"github.com/llmprobe/llmprobe/internal/rundir"
)

// tracingFlush bounds the flush of the spans still queued when sweep or
// compare ends: a collector that is down costs at most this and a warning.
const tracingFlush = 5 * time.Second

// addTracingFlags defines serve's --tracing.* flags into tr. Their help is
// the sweep settings table's, where sweep's and compare's are defined
// (rundir.TracingFlags): one text for the three commands. A flag left out
// is empty (0, false), so that the config file's tracing block and the
// defaults apply (daemon.Tracing.Resolved).
func addTracingFlags(cmd *kingpin.CmdClause, tr *daemon.Tracing) {
	doc := func(flag string) string { return rundir.LookupFlag(flag).Doc }
	cmd.Flag("tracing.endpoint", doc("tracing.endpoint")+" Overrides the config file's tracing.endpoint.").StringVar(&tr.Endpoint)
	cmd.Flag("tracing.enabled", doc("tracing.enabled")).BoolVar(&tr.Enabled)
	cmd.Flag("tracing.protocol", doc("tracing.protocol")+" Overrides the config file's tracing.protocol.").
		PlaceHolder("http/protobuf").EnumVar(&tr.Protocol, "http/protobuf", "grpc")
	cmd.Flag("tracing.insecure", doc("tracing.insecure")).BoolVar(&tr.Insecure)
	cmd.Flag("tracing.metrics", "Also export the OpenTelemetry GenAI client histograms (gen_ai.client.inference.*: "+
		"duration, time to first chunk, time per output chunk, tokens) over OTLP to the tracing collector (or "+
		"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT), every OTEL_METRIC_EXPORT_INTERVAL (default 60s); off by default.").
		BoolVar(&tr.Metrics)
	cmd.Flag("tracing.sample-ratio", "Share of probe requests traced, in [1e-6, 1] (default 1, or the config file's "+
		"tracing.sample_ratio); a sampled request's trace id is on its exemplars and the landing page.").
		PlaceHolder("RATIO").Float64Var(&tr.SampleRatio)
}

// startCLITracing starts the exporter of sweep's or compare's --tracing.*
// flags (no config file: headers and TLS from OTEL_EXPORTER_OTLP_*): the
// tracer to give the sweep configs (nil when tracing is off) and the func
// that flushes the spans within tracingFlush, to call before the command
// exits (a no-op on error). A collector that is down never fails the
// command; a refused flag does.
func startCLITracing(e *env, f rundir.TracingFlags) (func(float64) trace.Tracer, func(), error) {
	t := daemon.Tracing{Enabled: f.Enabled, Endpoint: f.Endpoint, Protocol: f.Protocol, Insecure: f.Insecure}
	if err := t.Validate(); err != nil {
		return nil, func() {}, err
	}
	p, err := daemon.StartTracing(e.ctx, t.Resolved(), e.logger)
	if err != nil || p == nil {
		return nil, func() {}, err
	}
	return p.Tracer, func() { daemon.StopTracing(p, tracingFlush, e.logger) }, nil
}
