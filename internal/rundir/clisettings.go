package rundir

import "github.com/llmprobe/llmprobe/prober/sweep"

// cliSetting is a setting of the sweep and compare commands alone: no
// sweep.Config field holds it (the progress bar, the run's decision, the
// push, the exporter, a replay's block size), so it lives with the
// commands, not in the engine's settings table. after places its flag in
// --help after the table's setting of that flag; bind, when set, is the
// SweepFlags field it fills (nil: a value of its kind, read by name).
type cliSetting struct {
	sweep.Setting
	after string
	bind  func(f *SweepFlags) any
}

// cliSettings are the commands' own settings, in --help order after the
// settings table's row each names.
var cliSettings = []cliSetting{
	{Setting: sweep.Setting{Flag: "budget", Kind: sweep.KindString, Default: sweep.DefaultCompareBudget, Surfaces: sweep.SurfaceCompare,
		Doc: "Sequential rounds: blocks of --rounds rounds are added, and after the first block and then every few (at most " +
			"20 looks) every figure is judged at group-sequential boundaries (O'Brien-Fleming-type alpha spending over all " +
			"looks: 2.5 % for fail, 5 % for pass, an equivalence test), until the verdict decides or the next block would " +
			"pass this budget: a wall time (20m), measured requests per side (5000) or both (20m,5000); at most 400 rounds; " +
			"off: one look of --rounds rounds (docs/compare.md)."}, after: "rounds"},
	{Setting: sweep.Setting{Flag: "no-progress", Kind: sweep.KindBool, Surfaces: sweep.SurfaceSweep | sweep.SurfaceCompare,
		Doc: "No progress bar, plain log lines (the default when stderr is not a terminal)."}, after: "metadata", bind: func(f *SweepFlags) any { return &f.NoProgress }},
	{Setting: sweep.Setting{Flag: "decision", Kind: sweep.KindString, Surfaces: sweep.SurfaceSweep | sweep.SurfaceCompare,
		Doc: "The decision this run serves (methodology §1), e.g. \"ship TP=2 if goodput at 8 req/s " +
			"rises\": written as metadata key decision (result.json, the manifest) and opening analysis.md with the SLO."}, after: "metadata"},
	{Setting: sweep.Setting{Flag: "rollback-if", Kind: sweep.KindString, Surfaces: sweep.SurfaceSweep | sweep.SurfaceCompare,
		Doc: "The condition that rolls the decision back, written as metadata key rollback_if beside it."}, after: "metadata"},
	{Setting: sweep.Setting{Flag: "save-detailed", Kind: sweep.KindBool, Surfaces: sweep.SurfaceSweep | sweep.SurfaceCompare,
		Doc: "Write vllm bench serve's --save-detailed arrays (input_lens, output_lens, ttfts, itls, " +
			"start_times, errors) into the vLLM-form file of every step (vllm/ in the run directory)."}, after: "answer-checks", bind: func(f *SweepFlags) any { return &f.SaveDetailed }},
	{Setting: sweep.Setting{Flag: "server-log", Kind: sweep.KindString, Surfaces: sweep.SurfaceSweep,
		Doc: "The server's log file (a local setup): the lines it gains during each step are copied into " +
			"server.log in the run directory (without it the manifest says not-recorded)."}, after: "answer-checks", bind: func(f *SweepFlags) any { return &f.ServerLog }},
	{Setting: sweep.Setting{Flag: "push.url", Kind: sweep.KindString, Surfaces: sweep.SurfaceSweep,
		Doc: "Push the run's summary metrics (knee, max goodput, per-step goodput and p99s, labelled " +
			"run=<--name>) in Prometheus text format to this URL when the sweep ends, through the same push code as " +
			"serve --push.url (VictoriaMetrics /api/v1/import/prometheus, vmagent, a Pushgateway /metrics/job/<job>)."}, after: "answer-checks", bind: func(f *SweepFlags) any { return &f.Push.URL }},
	{Setting: sweep.Setting{Flag: "push.extra-label", Kind: sweep.KindStrings, Surfaces: sweep.SurfaceSweep,
		Doc: "Extra label added to every pushed series, as name=value. Repeatable."}, after: "answer-checks", bind: func(f *SweepFlags) any { return &f.Push.ExtraLabels }},
	{Setting: sweep.Setting{Flag: "push.method", Kind: sweep.KindString, Default: "POST", Surfaces: sweep.SurfaceSweep,
		Doc: "HTTP method of the push (PUT replaces a Pushgateway group as a whole)."}, after: "answer-checks", bind: func(f *SweepFlags) any { return &f.Push.Method }},
	{Setting: sweep.Setting{Flag: "push.timeout", Kind: sweep.KindDuration, Default: "30s", Surfaces: sweep.SurfaceSweep,
		Doc: "Time limit of the push."}, after: "answer-checks", bind: func(f *SweepFlags) any { return &f.Push.Timeout }},
	{Setting: sweep.Setting{Flag: "push.required", Kind: sweep.KindBool, Surfaces: sweep.SurfaceSweep,
		Doc: "Exit 1 when the --push.url push fails. Without it a failed push is a logged warning and the " +
			"exit code is the sweep's own (the run directory holds every result): a Kubernetes Job's pod " +
			"succeeds although no push receiver answers."}, after: "answer-checks", bind: func(f *SweepFlags) any { return &f.Push.Required }},
	{Setting: sweep.Setting{Flag: "tracing.endpoint", Kind: sweep.KindString, Surfaces: sweep.SurfaceSweep | sweep.SurfaceCompare,
		Doc: "Trace the requests with OpenTelemetry and export the spans over OTLP to this collector " +
			"(http://host:4318 for http/protobuf, host:4317 for grpc); each request carries its W3C traceparent " +
			"(docs/tracing.md). Off by default."}, after: "answer-checks", bind: func(f *SweepFlags) any { return &f.Tracing.Endpoint }},
	{Setting: sweep.Setting{Flag: "tracing.enabled", Kind: sweep.KindBool, Surfaces: sweep.SurfaceSweep | sweep.SurfaceCompare,
		Doc: "Trace as --tracing.endpoint does, with the collector, headers and TLS from the standard " +
			"OTEL_EXPORTER_OTLP_* variables (serve: or its config file's tracing block)."}, after: "answer-checks", bind: func(f *SweepFlags) any { return &f.Tracing.Enabled }},
	{Setting: sweep.Setting{Flag: "tracing.protocol", Kind: sweep.KindString, Surfaces: sweep.SurfaceSweep | sweep.SurfaceCompare,
		Doc: "OTLP protocol of the exporter: http/protobuf (default) or grpc."}, after: "answer-checks", bind: func(f *SweepFlags) any { return &f.Tracing.Protocol }},
	{Setting: sweep.Setting{Flag: "tracing.insecure", Kind: sweep.KindBool, Surfaces: sweep.SurfaceSweep | sweep.SurfaceCompare,
		Doc: "Export spans without TLS (an http:// endpoint never uses it)."}, after: "answer-checks", bind: func(f *SweepFlags) any { return &f.Tracing.Insecure }},
	{Setting: sweep.Setting{Flag: "trace-block-size", Kind: sweep.KindInt, Default: "512", Unit: "tokens", Surfaces: sweep.SurfaceSweep,
		Doc: "With --trace: the tokens one hash id stands for (512 in Mooncake's traces)."}, after: "trace-speed"},
}

// flagSettings returns every setting with a flag of the sweep and compare
// commands: the settings table's rows and cliSettings, in --help order.
func flagSettings() []cliSetting {
	var all []cliSetting
	for _, s := range sweep.Settings() {
		if s.Flag == "" || s.Internal {
			continue
		}
		all = append(all, cliSetting{Setting: s})
		for _, c := range cliSettings {
			if c.after == s.Flag {
				all = append(all, c)
			}
		}
	}
	return all
}

// LookupFlag returns the setting of a flag of the sweep and compare
// commands (the settings table's or the commands' own; nil when none).
func LookupFlag(flag string) *sweep.Setting {
	if s := sweep.LookupFlag(flag); s != nil {
		return s
	}
	for i := range cliSettings {
		if cliSettings[i].Flag == flag {
			return &cliSettings[i].Setting
		}
	}
	return nil
}
