package main

import (
	"fmt"
	"strings"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-kit/log/level"

	"github.com/llmprobe/llmprobe/internal/report"
	"github.com/llmprobe/llmprobe/internal/rundir"
	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/prober/redact"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

func init() {
	register(func(app *kingpin.Application) (string, action) {
		f := &rundir.SweepFlags{}
		cmd := app.Command("sweep", "Run a fixed workload at increasing load against an OpenAI-compatible endpoint "+
			"(vLLM first), each step started from an idle server, and find the capacity knee: the highest load at "+
			"which goodput still keeps up with the offered rate and the SLO p99s hold. Writes a run directory with "+
			"manifest.json (fingerprint + SHA-256 of every file), result.json (vllm bench serve keys per step), "+
			"records.jsonl, /metrics snapshots, analysis.md and plots. Without --target it sweeps the built-in "+
			"simulator. See docs/sweep.md.")
		rundir.AddSweepFlags(cmd, f, sweep.SurfaceSweep)
		return cmd.FullCommand(), func(e *env) int { return runSweep(e, f) }
	})
}

// oneLine joins the lines of a (YAML, multi-line) error message with "; ".
func oneLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	return strings.Join(lines, "; ")
}

// runSweep runs the sweep (rundir.Run; without --target against the
// built-in simulator) and pushes its summary with --push.url: exit 0 when
// complete, 130 when interrupted, 2 for a flag refused, 1 otherwise (and
// for a failed push with --push.required; without it a warning).
func runSweep(e *env, f *rundir.SweepFlags) int {
	cfg, code := sweepConfig(e, f)
	if code != 0 {
		return code
	}
	tracer, flush, err := startCLITracing(e, f.Tracing)
	defer flush() // before exiting: the spans of the last requests
	cfg.Tracer = tracer
	if err != nil {
		fmt.Fprintf(e.stderr, "llmprobe: error: %v\n", err)
		return 2
	}
	if cfg.Target == "" {
		stop, url, err := simulator.StartEmbedded(e.logger)
		if err != nil {
			level.Error(e.logger).Log("msg", "cannot start the built-in simulator", "err", err)
			return 1
		}
		defer stop()
		cfg.Target, cfg.Embedded = url, true
		if cfg.Trace == nil { // a trace's capacity is not computed
			cfg.ReferenceCapacity = simulator.EmbeddedCapacity(cfg.Workload)
		}
		level.Info(e.logger).Log("msg", "no --target given: sweeping the built-in vLLM simulator (in-process)", "url", url)
	}
	obs := &report.SweepObserver{Table: e.stdout, Logger: e.logger}
	if !f.NoProgress {
		obs.W = e.stderr
	}
	res, err := rundir.Run(e.ctx, cfg, rundir.Options{
		Logger:       e.logger,
		Args:         append([]string{"llmprobe"}, e.args...),
		Help:         commandHelp("sweep"),
		Observer:     obs,
		ServerLog:    f.ServerLog,
		SaveDetailed: f.SaveDetailed,
	})
	if res != nil && res.Result != nil && f.Push.URL != "" && !pushSweep(e, &f.Push, cfg.Name, res.Result) &&
		f.Push.Required && err == nil && res.Complete {
		return 1
	}
	return sweepExit(e, cfg, res, err)
}

// sweepConfig builds the sweep's config from the flags (rundir.SweepFlags.
// Config) and checks the push flags: a refused flag is one line and exit
// 2, a file that cannot be read exit 1; 0 when the sweep may start.
func sweepConfig(e *env, f *rundir.SweepFlags) (sweep.Config, int) {
	cfg, err := f.Config()
	if err != nil {
		fmt.Fprintf(e.stderr, "llmprobe: error: %s\n", oneLine(redact.Secrets(rundir.FlagErrorText(err), cfg.Secrets()...)))
		if rundir.IsFlagError(err) {
			return cfg, 2
		}
		return cfg, 1
	}
	if err := checkSweepPush(&f.Push); err != nil {
		fmt.Fprintf(e.stderr, "llmprobe: error: %v\n", err)
		return cfg, 2
	}
	if cfg.HasBurst() {
		fmt.Fprintln(e.stderr, "llmprobe: warning: --rates inf sends every request of the step at once: it is a "+
			"burst, not an open loop (no arrival process; latencies include queueing behind the whole burst).")
	}
	return cfg, 0
}

// sweepExit reports how the sweep ended (its error, its run directory)
// and returns the exit code.
func sweepExit(e *env, cfg sweep.Config, res *rundir.Outcome, err error) int {
	if err != nil {
		msg := redact.Secrets(rundir.FlagErrorText(err), cfg.Secrets()...)
		if rundir.IsFlagError(err) {
			// Refused before any load (e.g. the lengths exceed the model's
			// max_model_len): one line naming the flag, exit 2.
			fmt.Fprintf(e.stderr, "llmprobe: error: %s\n", oneLine(msg))
			return 2
		}
		level.Error(e.logger).Log("msg", "sweep failed", "err", msg)
		if res == nil || res.Dir == "" {
			return 1
		}
	}
	if res != nil && res.Dir != "" {
		fmt.Fprintf(e.stdout, "\nrun directory: %s\n", res.Dir)
	}
	switch {
	case err != nil:
		return 1
	case !res.Complete:
		return 130
	}
	return 0
}
