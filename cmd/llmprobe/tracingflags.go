package main

import (
	"github.com/alecthomas/kingpin/v2"

	"github.com/llmprobe/llmprobe/internal/daemon"
)

// addTracingFlags defines the --tracing.* flags of cmd into tr: the one
// definition of serve's, sweep's and compare's (docs/tracing.md). what
// names the requests traced ("probe request"); ratioDefault says what an
// unset --tracing.sample-ratio means. A flag left out is empty (0, false),
// so that the config file's tracing block and the defaults apply
// (daemon.Tracing.Resolved).
func addTracingFlags(cmd *kingpin.CmdClause, tr *daemon.Tracing, what, ratioDefault string) {
	cmd.Flag("tracing.endpoint", "Trace every "+what+" with OpenTelemetry and export the spans over OTLP to this collector "+
		"(http://host:4318 for http/protobuf, host:4317 for grpc); each request carries its W3C traceparent (docs/tracing.md). "+
		"Off by default. Overrides the config file's tracing.endpoint.").StringVar(&tr.Endpoint)
	cmd.Flag("tracing.enabled", "Trace as --tracing.endpoint does, with the collector from the config file's tracing block or "+
		"the standard OTEL_EXPORTER_OTLP_* variables.").BoolVar(&tr.Enabled)
	cmd.Flag("tracing.protocol", "OTLP protocol of the exporter: http/protobuf (default) or grpc. Overrides the config file's "+
		"tracing.protocol.").PlaceHolder("http/protobuf").EnumVar(&tr.Protocol, "http/protobuf", "grpc")
	cmd.Flag("tracing.insecure", "Export spans without TLS (an http:// endpoint never uses it).").BoolVar(&tr.Insecure)
	cmd.Flag("tracing.sample-ratio", "Share of "+what+"s traced, in [1e-6, 1] (default "+ratioDefault+"); a sampled request's "+
		"trace id is on its exemplars, records and the landing page.").PlaceHolder("RATIO").Float64Var(&tr.SampleRatio)
}
