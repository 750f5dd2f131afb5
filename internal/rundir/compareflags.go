package rundir

import (
	"errors"
	"fmt"
	"strings"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/llmprobe/llmprobe/internal/report"
	"github.com/llmprobe/llmprobe/prober/compare"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// CompareFlags holds the raw flag values of `llmprobe compare`: the sweep's
// workload, load and SLO flags (Sweep), and each side's target; Procedure
// turns them into a compare.Procedure.
type CompareFlags struct {
	Sweep                          SweepFlags
	baseline, candidate            compareSide
	order, maxRegression, vary     string
	maxRegressionSet               bool
	bootstrapIters                 int
	answerLowMargin, answerMaxDrop float64 // --answer-low-margin, --answer-max-drop
	answerRepeats                  int     // --answer-repeats
}

// compareSide is one side's own flags (--baseline, --baseline-model, ...;
// --candidate, ...): each but the URL defaults to the shared sweep flag
// (--model, --api-key-file, --http.config.file, --cost-per-hour).
type compareSide struct {
	name, url, model, key, metrics, http string
	gpu, gpuSel                          string // --<side>-gpu-metrics-url, --<side>-gpu-selector
	cost                                 float64
	costSet                              bool
}

// AddCompareFlags adds compare's flags to cmd: the sweep settings the
// compare surface takes (AddSweepFlags), then each side's target, the
// order of the rounds, the thresholds, the fingerprint fields allowed to
// differ, the bootstrap and each side's price.
func AddCompareFlags(cmd *kingpin.CmdClause, f *CompareFlags) {
	AddSweepFlags(cmd, &f.Sweep, sweep.SurfaceCompare)
	b, c := &f.baseline, &f.candidate
	b.name, c.name = compare.SideBaseline, compare.SideCandidate
	cmd.Flag("baseline", "Base URL of the baseline server, without /v1.").Required().StringVar(&b.url)
	cmd.Flag("candidate", "Base URL of the candidate server, without /v1.").Required().StringVar(&c.url)
	cmd.Flag("baseline-model", "Model id requested from the baseline (default --model, else its first /v1/models entry).").
		StringVar(&b.model)
	cmd.Flag("candidate-model", "Model id requested from the candidate (default --model, else its first /v1/models entry).").
		StringVar(&c.model)
	cmd.Flag("baseline-api-key-file", "File holding the baseline's API key (default --api-key-file).").StringVar(&b.key)
	cmd.Flag("candidate-api-key-file", "File holding the candidate's API key (default --api-key-file).").StringVar(&c.key)
	cmd.Flag("baseline-http-config-file", "The baseline's HTTP client configuration file (TLS, credentials, "+
		"headers; default --http.config.file).").StringVar(&b.http)
	cmd.Flag("candidate-http-config-file", "The candidate's HTTP client configuration file (default "+
		"--http.config.file).").StringVar(&c.http)
	cmd.Flag("baseline-metrics-url", "The baseline's /metrics (default --baseline + /metrics).").StringVar(&b.metrics)
	cmd.Flag("candidate-metrics-url", "The candidate's /metrics (default --candidate + /metrics).").StringVar(&c.metrics)
	cmd.Flag("baseline-gpu-metrics-url", "The baseline's DCGM exporter /metrics: each round's GPU energy, for the joules per good "+
		"output token of each side (docs/measurement.md). Default: none (energy not-recorded).").StringVar(&b.gpu)
	cmd.Flag("candidate-gpu-metrics-url", "The candidate's DCGM exporter /metrics (default: none).").StringVar(&c.gpu)
	cmd.Flag("baseline-gpu-selector", "Label selector choosing the baseline's GPUs on --baseline-gpu-metrics-url, e.g. "+
		"pod=\"vllm-a-0\" (default: every GPU).").StringVar(&b.gpuSel)
	cmd.Flag("candidate-gpu-selector", "Label selector choosing the candidate's GPUs on --candidate-gpu-metrics-url "+
		"(default: every GPU).").StringVar(&c.gpuSel)
	cmd.Flag("order", "Order of the rounds: abba (A/B/B/A/A/B/B/A...) or random (each pair A/B or B/A by --seed).").
		Default(compare.OrderABBA).StringVar(&f.order)
	cmd.Flag("max-regression", "Compared figures and the largest regression allowed: latency percentiles "+
		"(ttft_pNN, tpot_pNN, e2el_pNN: an increase), goodput or throughput (a drop) and cost (the cost per million "+
		"good output tokens: an increase; needs both sides' price) and energy (the joules per good output token: an increase; needs "+
		"both sides' --<side>-gpu-metrics-url). goodput needs --goodput; without it the default drops goodput.").Default(compare.DefaultThresholds).
		IsSetByUser(&f.maxRegressionSet).StringVar(&f.maxRegression)
	cmd.Flag("vary", "Fingerprint fields allowed to differ between the sides ("+strings.Join(compare.FieldNames, ", ")+").").
		Default(strings.Join(compare.DefaultVary, ",")).StringVar(&f.vary)
	cmd.Flag("bootstrap-iters", "Resamples of the bootstrap interval on each difference.").
		Default(fmt.Sprint(compare.DefaultIters)).IntVar(&f.bootstrapIters)
	cmd.Flag("baseline-cost-per-hour", "Price of the baseline's serving in USD per hour (default --cost-per-hour).").
		IsSetByUser(&b.costSet).Float64Var(&b.cost)
	cmd.Flag("candidate-cost-per-hour", "Price of the candidate's serving in USD per hour (default --cost-per-hour). "+
		"With both prices, --max-regression cost=5% judges the cost per million good output tokens (an increase is a regression).").
		IsSetByUser(&c.costSet).Float64Var(&c.cost)
	cmd.Flag("answer-low-margin", "With --answer-checks: replies that first differ at a token where the baseline's top-2 "+
		"log-probability margin is under this many nats count as low_margin (batch variance), not as a mismatch.").
		Default(fmt.Sprint(compare.DefaultLowMargin)).Float64Var(&f.answerLowMargin)
	cmd.Flag("answer-max-drop", "With --answer-checks: the largest drop of the candidate's pass rate allowed, a fraction "+
		"(0.05: 5 points); the quality section fails when its interval lies beyond it.").
		Default(fmt.Sprint(compare.DefaultQualityTolerance)).Float64Var(&f.answerMaxDrop)
	cmd.Flag("answer-repeats", "With --answer-checks: how many times the set is sent to each side (a check's sends are "+
		"averaged: one unit of the interval).").Default(fmt.Sprint(compare.DefaultAnswerRepeats)).IntVar(&f.answerRepeats)
}

// Procedure checks the flags and builds the comparison: both sides' sweep
// configs, the thresholds (goodput dropped, with a warning on logger, when
// there is no SLO and --max-regression was not given), the fields allowed
// to vary. Args, Observer and Logger are left to the caller. An error
// names its flag (FlagErrorText spells it); once both sides' configs are
// built, p holds them even on an error, so that their Secrets can redact
// its text.
func (f *CompareFlags) Procedure(logger log.Logger) (p *compare.Procedure, err error) {
	cfgs, err := f.sides()
	if err != nil {
		return nil, err
	}
	base, cand := cfgs[compare.SideBaseline], cfgs[compare.SideCandidate]
	p = &compare.Procedure{Baseline: base, Candidate: cand, Order: f.order, Rounds: f.Sweep.num("rounds"), Seed: f.Sweep.num64("seed"),
		MaxRegression: f.maxRegression, Iters: f.bootstrapIters,
		Decision: base.Metadata[report.MetaDecision], RollbackIf: base.Metadata[report.MetaRollbackIf]}
	if p.Thresholds, err = compare.ParseThresholds(f.maxRegression); err != nil {
		return p, fmt.Errorf("--max-regression: %v", err)
	}
	if base.SLO.IsZero() && compare.HasFigure(p.Thresholds, compare.FigureGoodput) {
		if f.maxRegressionSet {
			return p, errors.New("--max-regression: goodput needs an SLO: give --goodput (e.g. --goodput ttft:800 tpot:50)")
		}
		p.Thresholds = compare.DropGoodput(p.Thresholds)
		level.Warn(logger).Log("msg", "no --goodput: goodput is not compared")
	}
	if compare.HasFigure(p.Thresholds, compare.FigureCost) && !(base.CostPerHour > 0 && cand.CostPerHour > 0) {
		return p, errors.New("--max-regression: cost needs the price per hour of both sides: give --cost-per-hour " +
			"(or --baseline-cost-per-hour and --candidate-cost-per-hour)")
	}
	if compare.HasFigure(p.Thresholds, compare.FigureEnergy) && (base.GPUMetricsURL == "" || cand.GPUMetricsURL == "") {
		return p, errors.New("--max-regression: energy needs the GPU energy of both sides: give --baseline-gpu-metrics-url " +
			"and --candidate-gpu-metrics-url")
	}
	if p.Vary, err = compare.ParseVary(f.vary); err != nil {
		return p, fmt.Errorf("--vary: %v", err)
	}
	if p.Budget, err = compare.ParseBudget(f.Sweep.str("budget")); err != nil {
		return p, &FlagError{Flag: "budget", Err: err}
	}
	return p, f.quality(p)
}

// quality sets p's answer checks from --answer-checks (a sweep setting:
// each side's config loaded the set and Validate checked that the side's
// API can send every check) and their settings (none: no quality section).
// Compare sends the set itself after the rounds, so the sides' configs
// drop it: no round's sweep sends it.
func (f *CompareFlags) quality(p *compare.Procedure) error {
	switch {
	case !(f.answerLowMargin > 0 && f.answerLowMargin <= compare.MaxLowMargin):
		return &FlagError{Flag: "answer-low-margin", Err: fmt.Errorf("must be > 0 and at most %v nats, got %v", compare.MaxLowMargin, f.answerLowMargin)}
	case !(f.answerMaxDrop > 0 && f.answerMaxDrop < 1):
		return &FlagError{Flag: "answer-max-drop", Err: fmt.Errorf("must be a fraction > 0 and < 1 (0.05: 5 points), got %v", f.answerMaxDrop)}
	case f.answerRepeats < 1 || f.answerRepeats > compare.MaxAnswerRepeats:
		return &FlagError{Flag: "answer-repeats", Err: fmt.Errorf("must be 1 to %d, got %d", compare.MaxAnswerRepeats, f.answerRepeats)}
	case p.Baseline.AnswerChecks == nil:
		return nil
	}
	p.AnswerChecks, p.LowMargin, p.QualityTolerance, p.AnswerRepeats = p.Baseline.AnswerChecks, f.answerLowMargin, f.answerMaxDrop, f.answerRepeats
	p.Baseline.AnswerChecks, p.Candidate.AnswerChecks = nil, nil
	return nil
}

// check checks the flags that compare takes otherwise than
// sweep, before either side's config is built.
func (f *CompareFlags) check() error {
	sw := &f.Sweep
	switch {
	case !sw.isSet("rates") && !sw.isSet("concurrency"):
		return &FlagError{Flag: "rates", Err: errors.New("give one rate or a short ladder (e.g. --rates 4 or 2,4,8), or --concurrency")}
	case sw.str("target") != "":
		return &FlagError{Flag: "target", Err: errors.New("compare has no single target: give --baseline and --candidate")}
	case sw.str("metrics-url") != "":
		return &FlagError{Flag: "metrics-url", Err: errors.New("give --baseline-metrics-url and --candidate-metrics-url")}
	case sw.str("gpu-metrics-url") != "":
		return &FlagError{Flag: "gpu-metrics-url", Err: errors.New("each side has its own GPUs: give --baseline-gpu-metrics-url and --candidate-gpu-metrics-url")}
	case sw.str("gpu-selector") != "":
		return &FlagError{Flag: "gpu-selector", Err: errors.New("each side has its own GPUs: give --baseline-gpu-selector and --candidate-gpu-selector")}
	case sw.num("rounds") < 2 || sw.num("rounds")%2 != 0:
		return &FlagError{Flag: "rounds", Err: fmt.Errorf("must be even and >= 2 (both sides alike), got %d", sw.num("rounds"))}
	case f.order != compare.OrderABBA && f.order != compare.OrderRandom:
		return &FlagError{Flag: "order", Err: fmt.Errorf("must be abba or random, got %q", f.order)}
	case f.bootstrapIters < 100:
		return &FlagError{Flag: "bootstrap-iters", Err: fmt.Errorf("must be >= 100, got %d", f.bootstrapIters)}
	}
	return nil
}

// sides builds both sides' sweep configs from the flags.
func (f *CompareFlags) sides() (map[string]sweep.Config, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	out := map[string]sweep.Config{}
	for _, side := range []compareSide{f.baseline, f.candidate} {
		cfg, err := f.side(side)
		if err != nil {
			return nil, err
		}
		out[side.name] = cfg
	}
	return out, nil
}

// side builds one side's sweep config: the shared flags with the side's
// own over them; an error about a side's own setting names its flag.
func (f *CompareFlags) side(side compareSide) (sweep.Config, error) {
	sf := f.Sweep.clone()
	sf.set("target", side.url)
	sf.set("metrics-url", side.metrics)
	sf.set("gpu-metrics-url", side.gpu)
	sf.set("gpu-selector", side.gpuSel)
	sf.setValue("rounds", 1)
	if side.costSet {
		sf.setValue("cost-per-hour", side.cost)
	}
	for flag, v := range map[string]string{"model": side.model, "api-key-file": side.key, "http.config.file": side.http} {
		if v != "" {
			sf.set(flag, v)
		}
	}
	if side.url == "" {
		return sweep.Config{}, &FlagError{Flag: side.name, Err: errors.New("must not be empty")}
	}
	cfg, err := sf.Config()
	if err != nil {
		var fe *FlagError
		if tf, ok := errors.AsType[*sweep.FieldError](err); ok && tf.Field == "Target" {
			return cfg, &FlagError{Flag: side.name, Err: tf.Err}
		}
		if errors.As(err, &fe) && fe.Flag == "http.config.file" && side.http != "" {
			return cfg, &FlagError{Flag: side.name + "-http-config-file", Err: fe.Err}
		}
		var ce *sweep.FieldError
		if errors.As(err, &ce) && ce.Field == "CostPerHour" && side.costSet {
			return cfg, &FlagError{Flag: side.name + "-cost-per-hour", Err: ce.Err}
		}
		if gpuFlags := map[string]string{"GPUMetricsURL": side.name + "-gpu-metrics-url", "GPUSelector": side.name + "-gpu-selector"}; errors.As(err, &ce) && gpuFlags[ce.Field] != "" {
			// The side's own flags, in the flag and in the reason.
			reason := ce.Reason(func(field string) string {
				if fl := gpuFlags[field]; fl != "" {
					return "--" + fl
				}
				return sweep.FlagSpelling(field)
			})
			return cfg, &FlagError{Flag: gpuFlags[ce.Field], Err: errors.New(reason)}
		}
		return cfg, err
	}
	if cfg.Auto {
		return cfg, &FlagError{Flag: "rates", Err: errors.New("auto is not offered by compare: give one rate or a short ladder")}
	}
	return cfg, nil
}
