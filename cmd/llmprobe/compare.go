package main

import (
	"errors"
	"fmt"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-kit/log/level"

	"github.com/llmprobe/llmprobe/internal/report"
	"github.com/llmprobe/llmprobe/internal/rundir"
	"github.com/llmprobe/llmprobe/prober/compare"
	"github.com/llmprobe/llmprobe/prober/redact"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

func init() {
	register(func(app *kingpin.Application) (string, action) {
		f := &rundir.CompareFlags{}
		cmd := app.Command("compare", "A/B canary check of two OpenAI-compatible endpoints (vLLM first): the same "+
			"workload and load run on a baseline and a candidate in --rounds rounds (A/B/B/A), each round a sweep "+
			"from an idle server with its warmups, then the methodology's validity rules (fingerprints differ only in "+
			"--vary, comparable success counts, output tokens and finish reasons, no error class on one side only, "+
			"client not saturated, idle proof, enough samples, at least 2 rounds per side) and a bootstrap interval on "+
			"each compared figure. Prints pass (exit 0), fail (exit 1, naming each regression) or inconclusive (exit 3, "+
			"listing the evidence still missing); bad input exits 2. Writes a run directory with every round's sweep "+
			"run directory, result.json, analysis.md and manifest.json. See docs/compare.md.")
		rundir.AddCompareFlags(cmd, f)
		return cmd.FullCommand(), func(e *env) int { return runCompare(e, f) }
	})
}

// runCompare runs the comparison (rundir.CompareFlags.Procedure,
// rundir.RunCompare) and prints its verdict: exit 0 pass, 1 fail, 3
// inconclusive, 2 bad input, 130 interrupted.
func runCompare(e *env, f *rundir.CompareFlags) int {
	p, err := f.Procedure(e.logger)
	var secrets []string
	if p != nil {
		secrets = append(p.Baseline.Secrets(), p.Candidate.Secrets()...)
	}
	fail := func(msg string) int {
		fmt.Fprintf(e.stderr, "llmprobe: error: %s\n", oneLine(redact.Secrets(msg, secrets...)))
		return compare.ExitBadInput
	}
	if err != nil {
		return fail(rundir.FlagErrorText(err))
	}
	tracer, flush, err := startCLITracing(e, f.Sweep.Tracing)
	defer flush() // before exiting: the spans of the last requests
	p.Baseline.Tracer, p.Candidate.Tracer = tracer, tracer
	if err != nil {
		return fail(err.Error())
	}
	p.Logger, p.Args, p.Observer = e.logger, append([]string{"llmprobe"}, e.args...), compareProgress(e, f.Sweep.NoProgress)
	out, err := rundir.RunCompare(e.ctx, p, rundir.CompareOptions{Help: commandHelp("compare"), SaveDetailed: f.Sweep.SaveDetailed,
		Started: func(dir string) { fmt.Fprintf(e.stderr, "llmprobe: compare run directory %s\n", dir) }})
	var od *rundir.OutDirError
	switch {
	case errors.As(err, &od):
		return fail(fmt.Sprintf("--out: %v", od.Err))
	case out == nil:
		return fail(rundir.FlagErrorText(err))
	}
	report.WriteLooksText(e.stdout, out.Result.Sequential)
	report.WriteVerdictText(e.stdout, out.Result.Result, out.Result.SLO)
	fmt.Fprintf(e.stdout, "\nrun directory: %s\n", out.Dir)
	if err != nil {
		level.Error(e.logger).Log("msg", "cannot write the compare run directory", "err", err)
		return compare.ExitInconclusive
	}
	if e.ctx.Err() != nil {
		return 130
	}
	return out.Result.ExitCode
}

// compareProgress draws a progress bar per step on stderr, naming its
// round and side (none with --no-progress).
func compareProgress(e *env, off bool) func(compare.Round, int) sweep.Observer {
	return func(r compare.Round, n int) sweep.Observer {
		if off {
			return nil
		}
		return &report.StepProgress{W: e.stderr, Label: func(st *sweep.Step) string {
			return fmt.Sprintf("round %d/%d %s %s", r.Round, n, r.Side, st.Label)
		}}
	}
}
