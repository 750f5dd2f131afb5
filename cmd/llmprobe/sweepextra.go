package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmprobe/llmprobe/collector/probemetrics"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// sweepExtraFlags are the sweep flags for evidence and results leaving the
// run directory: --server-log and --push.*.
type sweepExtraFlags struct {
	serverLog       string
	pushURL         string
	pushExtraLabels []string
	pushMethod      string
	pushTimeout     time.Duration
}

func addSweepExtraFlags(cmd *kingpin.CmdClause, f *sweepExtraFlags) {
	cmd.Flag("server-log", "The server's log file (a local setup): the lines it gains during each step are copied into "+
		"server.log in the run directory (without it the manifest says not-recorded).").StringVar(&f.serverLog)
	cmd.Flag("push.url", "Push the run's summary metrics (knee, max goodput, per-step goodput and p99s, labelled "+
		"run=<--name>) in Prometheus text format to this URL when the sweep ends, through the same push code as "+
		"serve --push.url (VictoriaMetrics /api/v1/import/prometheus, vmagent, a Pushgateway /metrics/job/<job>).").
		StringVar(&f.pushURL)
	cmd.Flag("push.extra-label", "Extra label added to every pushed series, as name=value. Repeatable.").StringsVar(&f.pushExtraLabels)
	cmd.Flag("push.method", "HTTP method of the push (PUT replaces a Pushgateway group as a whole).").Default("POST").StringVar(&f.pushMethod)
	cmd.Flag("push.timeout", "Time limit of the push.").Default("30s").DurationVar(&f.pushTimeout)
}

// checkSweepExtraFlags validates the push flags before any load is sent.
func checkSweepExtraFlags(f *sweepExtraFlags) error {
	if f.pushMethod != "POST" && f.pushMethod != "PUT" {
		return &flagError{flag: "push.method", err: fmt.Errorf("must be POST or PUT, got %q", f.pushMethod)}
	}
	if err := validatePushLabels(f.pushExtraLabels); err != nil {
		return &flagError{flag: "push.extra-label", err: err}
	}
	if f.pushURL != "" && !strings.HasPrefix(f.pushURL, "http://") && !strings.HasPrefix(f.pushURL, "https://") {
		return &flagError{flag: "push.url", err: fmt.Errorf("must be an http:// or https:// URL")}
	}
	return nil
}

// pushResult pushes res's summary metrics (probemetrics.ResultCollector,
// labelled run=name) once to f.pushURL.
func pushResult(ctx context.Context, f *sweepExtraFlags, name string, res *sweep.Result) error {
	reg := prometheus.NewRegistry()
	if err := reg.Register(probemetrics.NewResultCollector(name, res)); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, f.pushTimeout)
	defer cancel()
	return metrics.PushMetricsExt(ctx, f.pushURL, func(w io.Writer) { writeText(w, reg) }, &metrics.PushOptions{
		ExtraLabels: strings.Join(quotePushLabels(f.pushExtraLabels), ","),
		Method:      f.pushMethod,
	})
}
