package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/VictoriaMetrics/metrics"
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
