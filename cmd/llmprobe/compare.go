package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-kit/log/level"

	"github.com/llmprobe/llmprobe/internal/report"
	"github.com/llmprobe/llmprobe/internal/rundir"
	"github.com/llmprobe/llmprobe/prober/compare"
	"github.com/llmprobe/llmprobe/prober/fingerprint"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// The sides of a comparison and the orders of its rounds (--order).
const (
	sideBaseline  = compare.SideBaseline
	sideCandidate = compare.SideCandidate
	orderABBA     = compare.OrderABBA
	orderRandom   = compare.OrderRandom
)

// compareFlags holds the raw flag values of `llmprobe compare`: the sweep's
// workload, load and SLO flags, and each side's target.
type compareFlags struct {
	sw                                sweepFlags
	baseline, candidate               string
	baselineModel, candidateModel     string
	baselineKeyFile, candidateKeyFile string
	baselineMetrics, candidateMetrics string
	baselineHTTP, candidateHTTP       string // --baseline-http-config-file, --candidate-http-config-file
	order, maxRegression, vary        string
	maxRegressionSet                  bool
	decision, rollbackIf              string
	bootstrapIters                    int
	cost                              compareCostFlags // --baseline-cost-per-hour, --candidate-cost-per-hour (comparecost.go)
}

func init() {
	register(func(app *kingpin.Application) (string, action) {
		f := &compareFlags{}
		cmd := app.Command("compare", "A/B canary check of two OpenAI-compatible endpoints (vLLM first): the same "+
			"workload and load run on a baseline and a candidate in --rounds rounds (A/B/B/A), each round a sweep "+
			"from an idle server with its warmups, then the methodology's validity rules (fingerprints differ only in "+
			"--vary, comparable success counts, output tokens and finish reasons, no error class on one side only, "+
			"client not saturated, idle proof, enough samples, at least 2 rounds per side) and a bootstrap interval on "+
			"each compared figure. Prints pass (exit 0), fail (exit 1, naming each regression) or inconclusive (exit 3, "+
			"listing the evidence still missing); bad input exits 2. Writes a run directory with every round's sweep "+
			"run directory, result.json, analysis.md and manifest.json. See docs/compare.md.")
		addSweepFlags(cmd, &f.sw, sweep.SurfaceCompare)
		cmd.Flag("baseline", "Base URL of the baseline server, without /v1.").Required().StringVar(&f.baseline)
		cmd.Flag("candidate", "Base URL of the candidate server, without /v1.").Required().StringVar(&f.candidate)
		cmd.Flag("baseline-model", "Model id requested from the baseline (default --model, else its first /v1/models entry).").
			StringVar(&f.baselineModel)
		cmd.Flag("candidate-model", "Model id requested from the candidate (default --model, else its first /v1/models entry).").
			StringVar(&f.candidateModel)
		cmd.Flag("baseline-api-key-file", "File holding the baseline's API key (default --api-key-file).").StringVar(&f.baselineKeyFile)
		cmd.Flag("candidate-api-key-file", "File holding the candidate's API key (default --api-key-file).").StringVar(&f.candidateKeyFile)
		cmd.Flag("baseline-http-config-file", "The baseline's HTTP client configuration file (TLS, credentials, "+
			"headers; default --http.config.file).").StringVar(&f.baselineHTTP)
		cmd.Flag("candidate-http-config-file", "The candidate's HTTP client configuration file (default "+
			"--http.config.file).").StringVar(&f.candidateHTTP)
		cmd.Flag("baseline-metrics-url", "The baseline's /metrics (default --baseline + /metrics).").StringVar(&f.baselineMetrics)
		cmd.Flag("candidate-metrics-url", "The candidate's /metrics (default --candidate + /metrics).").StringVar(&f.candidateMetrics)
		cmd.Flag("order", "Order of the rounds: abba (A/B/B/A/A/B/B/A...) or random (each pair A/B or B/A by --seed).").
			Default(orderABBA).StringVar(&f.order)
		cmd.Flag("max-regression", "Compared figures and the largest regression allowed: latency percentiles "+
			"(ttft_pNN, tpot_pNN, e2el_pNN: an increase), goodput or throughput (a drop) and cost (the cost per million "+
			"good output tokens: an increase; needs both sides' price). goodput needs --goodput; without it the default drops goodput.").Default(compare.DefaultThresholds).
			IsSetByUser(&f.maxRegressionSet).StringVar(&f.maxRegression)
		cmd.Flag("vary", "Fingerprint fields allowed to differ between the sides ("+strings.Join(compare.FieldNames, ", ")+").").
			Default(strings.Join(compare.DefaultVary, ",")).StringVar(&f.vary)
		cmd.Flag("bootstrap-iters", "Resamples of the bootstrap interval on each difference.").
			Default(fmt.Sprint(compare.DefaultIters)).IntVar(&f.bootstrapIters)
		addCompareCostFlags(cmd, &f.cost)
		return cmd.FullCommand(), func(e *env) int { return runCompare(e, f) }
	})
}

// compareConfigs builds both sides' sweep configs from the flags.
func compareConfigs(f *compareFlags) (map[string]sweep.Config, error) {
	if !f.sw.isSet("rates") && !f.sw.isSet("concurrency") {
		return nil, &flagError{flag: "rates", err: errors.New("give one rate or a short ladder (e.g. --rates 4 or 2,4,8), or --concurrency")}
	}
	if f.sw.str("target") != "" {
		return nil, &flagError{flag: "target", err: errors.New("compare has no single target: give --baseline and --candidate")}
	}
	if f.sw.str("metrics-url") != "" {
		return nil, &flagError{flag: "metrics-url", err: errors.New("give --baseline-metrics-url and --candidate-metrics-url")}
	}
	if f.sw.rounds < 2 || f.sw.rounds%2 != 0 {
		return nil, &flagError{flag: "rounds", err: fmt.Errorf("must be even and >= 2 (both sides alike), got %d", f.sw.rounds)}
	}
	if f.order != orderABBA && f.order != orderRandom {
		return nil, &flagError{flag: "order", err: fmt.Errorf("must be abba or random, got %q", f.order)}
	}
	if f.bootstrapIters < 100 {
		return nil, &flagError{flag: "bootstrap-iters", err: fmt.Errorf("must be >= 100, got %d", f.bootstrapIters)}
	}
	out := map[string]sweep.Config{}
	for _, side := range []struct {
		name, url, model, key, metrics, http string
	}{
		{sideBaseline, f.baseline, f.baselineModel, f.baselineKeyFile, f.baselineMetrics, f.baselineHTTP},
		{sideCandidate, f.candidate, f.candidateModel, f.candidateKeyFile, f.candidateMetrics, f.candidateHTTP},
	} {
		sf := f.sw.clone()
		sf.set("target", side.url)
		sf.set("metrics-url", side.metrics)
		sf.rounds = 1
		sf.costPerHour = f.cost.price(side.name, f.sw.costPerHour)
		for flag, v := range map[string]string{"model": side.model, "api-key-file": side.key, "http.config.file": side.http} {
			if v != "" {
				sf.set(flag, v)
			}
		}
		if side.url == "" {
			return nil, &flagError{flag: side.name, err: errors.New("must not be empty")}
		}
		cfg, err := buildSweepConfig(sf)
		if err != nil {
			var fe *flagError
			if tf, ok := errors.AsType[*sweep.FieldError](err); ok && tf.Field == "Target" {
				return nil, &flagError{flag: side.name, err: tf.Err}
			}
			if errors.As(err, &fe) && fe.flag == "http.config.file" && side.http != "" {
				return nil, &flagError{flag: side.name + "-http-config-file", err: fe.err}
			}
			var ce *sweep.FieldError
			if errors.As(err, &ce) && ce.Field == "CostPerHour" && f.cost.set(side.name) {
				return nil, &flagError{flag: side.name + "-cost-per-hour", err: ce.Err}
			}
			return nil, err
		}
		if cfg.Auto {
			return nil, &flagError{flag: "rates", err: errors.New("auto is not offered by compare: give one rate or a short ladder")}
		}
		out[side.name] = cfg
	}
	return out, nil
}

// compareHelp renders `llmprobe compare --help` of this build (help.txt).
func compareHelp() string {
	var b bytes.Buffer
	app, _, _ := newApp(&b, io.Discard)
	app.Terminate(func(int) {})
	_, _ = app.Parse([]string{"compare", "--help"})
	return b.String()
}

func runCompare(e *env, f *compareFlags) int {
	cfgs, err := compareConfigs(f)
	if err != nil {
		var secrets []string
		for _, c := range cfgs {
			secrets = append(secrets, c.Secrets()...)
		}
		fmt.Fprintf(e.stderr, "llmprobe: error: %s\n", oneLine(fingerprint.RedactSecrets(sweepErrorText(err), secrets...)))
		return compare.ExitBadInput
	}
	base, cand := cfgs[sideBaseline], cfgs[sideCandidate]
	secrets := append(base.Secrets(), cand.Secrets()...)
	fail := func(format string, args ...any) int {
		fmt.Fprintf(e.stderr, "llmprobe: error: %s\n", oneLine(fingerprint.RedactSecrets(fmt.Sprintf(format, args...), secrets...)))
		return compare.ExitBadInput
	}
	th, err := compare.ParseThresholds(f.maxRegression)
	if err != nil {
		return fail("--max-regression: %v", err)
	}
	if base.SLO.IsZero() && compare.HasFigure(th, compare.FigureGoodput) {
		if f.maxRegressionSet {
			return fail("--max-regression: goodput needs an SLO: give --goodput (e.g. --goodput ttft:800 tpot:50)")
		}
		th = compare.DropGoodput(th)
		level.Warn(e.logger).Log("msg", "no --goodput: goodput is not compared")
	}
	if compare.HasFigure(th, compare.FigureCost) && !(base.CostPerHour > 0 && cand.CostPerHour > 0) {
		return fail("--max-regression: cost needs the price per hour of both sides: give --cost-per-hour " +
			"(or --baseline-cost-per-hour and --candidate-cost-per-hour)")
	}
	vary, err := compare.ParseVary(f.vary)
	if err != nil {
		return fail("--vary: %v", err)
	}
	p := &compare.Procedure{Baseline: base, Candidate: cand, Order: f.order, Rounds: f.sw.rounds, Seed: f.sw.seed,
		Thresholds: th, MaxRegression: f.maxRegression, Vary: vary, Iters: f.bootstrapIters,
		Decision: base.Metadata[report.MetaDecision], RollbackIf: base.Metadata[report.MetaRollbackIf],
		Logger: e.logger, Args: append([]string{"llmprobe"}, e.args...), Observer: compareProgress(e, f.sw.noProgress)}
	out, err := rundir.RunCompare(e.ctx, p, rundir.CompareOptions{Help: compareHelp(), SaveDetailed: f.sw.saveDetailed,
		Started: func(dir string) { fmt.Fprintf(e.stderr, "llmprobe: compare run directory %s\n", dir) }})
	var od *rundir.OutDirError
	switch {
	case errors.As(err, &od):
		return fail("--out: %v", od.Err)
	case out == nil:
		return fail("%s", sweepErrorText(err))
	}
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
		return &stepProgress{stderr: e.stderr, label: func(st *sweep.Step) string {
			return fmt.Sprintf("round %d/%d %s %s", r.Round, n, r.Side, st.Label)
		}}
	}
}

// addDecision records --decision and --rollback-if as metadata (redacted
// like every metadata value); a --metadata pair of the same key is an
// error naming the flag.
func addDecision(md map[string]string, decision, rollbackIf string) error {
	for _, kv := range []struct{ flag, key, v string }{{"decision", report.MetaDecision, decision}, {"rollback-if", report.MetaRollbackIf, rollbackIf}} {
		if kv.v == "" {
			continue
		}
		if _, dup := md[kv.key]; dup {
			return &flagError{flag: kv.flag, err: fmt.Errorf("also given as --metadata %s=...", kv.key)}
		}
		md[kv.key] = fingerprint.RedactText(kv.v)
	}
	return nil
}
