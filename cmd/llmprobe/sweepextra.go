package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmprobe/llmprobe/collector/probemetrics"
	"github.com/llmprobe/llmprobe/internal/daemon"
	"github.com/llmprobe/llmprobe/internal/rundir"
	"github.com/llmprobe/llmprobe/prober/redact"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// checkSweepPush validates the sweep's push flags before any load is sent.
func checkSweepPush(p *rundir.PushFlags) error {
	if p.Method != "POST" && p.Method != "PUT" {
		return &rundir.FlagError{Flag: "push.method", Err: fmt.Errorf("must be POST or PUT, got %q", p.Method)}
	}
	if err := daemon.ValidatePushLabels(p.ExtraLabels); err != nil {
		return &rundir.FlagError{Flag: "push.extra-label", Err: err}
	}
	if p.URL != "" && !strings.HasPrefix(p.URL, "http://") && !strings.HasPrefix(p.URL, "https://") {
		return &rundir.FlagError{Flag: "push.url", Err: fmt.Errorf("must be an http:// or https:// URL")}
	}
	return nil
}

// pushSweep pushes res's summary metrics once (pushResult) and logs how it
// went: a failure is an error with --push.required, a warning without;
// false when the push failed.
func pushSweep(e *env, p *rundir.PushFlags, name string, res *sweep.Result) bool {
	url := redact.Text(p.URL)
	if err := pushResult(context.WithoutCancel(e.ctx), p, name, res); err != nil {
		if p.Required {
			level.Error(e.logger).Log("msg", "push failed (--push.required)", "url", url, "err", err)
		} else {
			level.Warn(e.logger).Log("msg", "push failed; the sweep's results are in its run directory (add --push.required to exit 1)",
				"url", url, "err", err)
		}
		return false
	}
	level.Info(e.logger).Log("msg", "pushed the run's summary metrics", "url", url)
	return true
}

// pushResult pushes res's summary metrics (probemetrics.ResultCollector,
// labelled run=name) once to p.URL.
func pushResult(ctx context.Context, p *rundir.PushFlags, name string, res *sweep.Result) error {
	reg := prometheus.NewRegistry()
	if err := reg.Register(probemetrics.NewResultCollector(name, res)); err != nil {
		return err
	}
	return daemon.PushOnce(ctx, daemon.Push{URL: p.URL, ExtraLabels: p.ExtraLabels, Method: p.Method}, p.Timeout, reg)
}
