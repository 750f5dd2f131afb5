package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/report"
	"github.com/llmprobe/llmprobe/internal/rundir"
	"github.com/llmprobe/llmprobe/prober/compare"
	"github.com/llmprobe/llmprobe/prober/fingerprint"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// The sides of a comparison.
const (
	sideBaseline  = "baseline"
	sideCandidate = "candidate"
)

// Orders of the rounds (--order).
const (
	orderABBA   = "abba"
	orderRandom = "random"
)

// compareResultSchema is the version of a compare run's result.json.
const compareResultSchema = 1

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

// roundOrder returns the side of each of n rounds.
func roundOrder(order string, n int, seed int64) []string {
	out := make([]string, 0, n)
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6f72646572)) // "order"
	for pair := 0; pair < n/2; pair++ {
		ab := pair%2 == 0
		if order == orderRandom {
			ab = rng.IntN(2) == 0
		}
		if ab {
			out = append(out, sideBaseline, sideCandidate)
		} else {
			out = append(out, sideCandidate, sideBaseline)
		}
	}
	return out
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

// compareRound is one round of a compare run, as its result.json lists it.
type compareRound struct {
	Round int    `json:"round"`
	Side  string `json:"side"`
	Seed  int64  `json:"seed"`
	// Dir is the round's sweep run directory, relative to the compare run
	// directory.
	Dir      string    `json:"dir"`
	Complete bool      `json:"complete"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
}

// compareSide identifies one side in result.json.
type compareSide struct {
	Target string `json:"target"`
	Model  string `json:"model"`
	// CostPerHour is the side's price in USD per hour (0: none).
	CostPerHour float64 `json:"cost_per_hour_usd,omitempty"`
}

// side returns the identification of the named side.
func (cr *compareResult) side(name string) *compareSide {
	if name == sideCandidate {
		return &cr.Candidate
	}
	return &cr.Baseline
}

// compareResult is a compare run directory's result.json.
type compareResult struct {
	Schema         int                `json:"llmprobe_compare_schema"`
	Verdict        string             `json:"verdict"`
	ExitCode       int                `json:"exit_code"`
	Complete       bool               `json:"complete"`
	Decision       string             `json:"decision,omitempty"`
	RollbackIf     string             `json:"rollback_if,omitempty"`
	Baseline       compareSide        `json:"baseline"`
	Candidate      compareSide        `json:"candidate"`
	Order          string             `json:"order"`
	Seed           int64              `json:"seed"`
	MaxRegression  string             `json:"max_regression"`
	Vary           []string           `json:"vary"`
	SLO            map[string]float64 `json:"goodput_ms"`
	BootstrapIters int                `json:"bootstrap_iters"`
	Rounds         []compareRound     `json:"rounds"`
	Result         *compare.Verdict   `json:"result"`
}

// options are the comparison settings the run used, unless analyze's
// command line args gives its own.
func (cr *compareResult) options(o compare.Options, args []string) compare.Options {
	if !flagGiven(args, "max-regression") {
		if th, err := compare.ParseThresholds(cr.MaxRegression); err == nil {
			o.Thresholds = th
		}
	}
	if !flagGiven(args, "vary") && cr.Vary != nil {
		o.Vary = cr.Vary
	}
	if !flagGiven(args, "goodput") && len(cr.SLO) > 0 {
		var pairs []string
		for k, v := range cr.SLO {
			pairs = append(pairs, fmt.Sprintf("%s:%v", k, v))
		}
		slices.Sort(pairs)
		if s, err := sweep.ParseGoodput(pairs); err == nil {
			o.SLO = s
		}
	}
	if cr.BootstrapIters > 0 {
		o.Iters = cr.BootstrapIters
	}
	if !flagGiven(args, "bootstrap-seed") {
		o.Seed = uint64(cr.Seed)
	}
	return o
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
	if base.SLO.IsZero() && slices.ContainsFunc(th, func(t compare.Threshold) bool { return t.Metric == compare.FigureGoodput }) {
		if f.maxRegressionSet {
			return fail("--max-regression: goodput needs an SLO: give --goodput (e.g. --goodput ttft:800 tpot:50)")
		}
		th = dropGoodput(th)
		level.Warn(e.logger).Log("msg", "no --goodput: goodput is not compared")
	}
	if costThreshold(th) && !(base.CostPerHour > 0 && cand.CostPerHour > 0) {
		return fail("--max-regression: cost needs the price per hour of both sides: give --cost-per-hour " +
			"(or --baseline-cost-per-hour and --candidate-cost-per-hour)")
	}
	vary, err := compare.ParseVary(f.vary)
	if err != nil {
		return fail("--vary: %v", err)
	}
	args := append([]string{"llmprobe"}, e.args...)

	// Both targets must answer before any load is sent.
	for _, side := range []string{sideBaseline, sideCandidate} {
		p, err := sweep.Prepare(e.ctx, cfgs[side], sweep.Options{Logger: log.With(e.logger, "side", side), Args: args})
		if err != nil {
			return fail("%s: %s", side, sweepErrorText(err))
		}
		p.Close()
	}
	now := time.Now()
	run, err := artifacts.Create(f.sw.out, f.sw.name, now)
	if err != nil {
		return fail("--out: %v", err)
	}
	cr := &compareResult{
		Schema: compareResultSchema, Decision: base.Metadata[report.MetaDecision], RollbackIf: base.Metadata[report.MetaRollbackIf],
		Baseline:  compareSide{Target: fingerprint.RedactText(base.Target), Model: base.Model, CostPerHour: base.CostPerHour},
		Candidate: compareSide{Target: fingerprint.RedactText(cand.Target), Model: cand.Model, CostPerHour: cand.CostPerHour},
		Order:     f.order, Seed: f.sw.seed, MaxRegression: f.maxRegression, Vary: vary, SLO: sloMS(base.SLO),
		BootstrapIters: f.bootstrapIters, Rounds: []compareRound{},
	}
	fp := fingerprint.New(args, now)
	cmdText := fingerprint.ShellJoin(fingerprint.Redact(args)) + "\n"
	if err := errors.Join(run.WriteFile(artifacts.CommandFile, []byte(cmdText)), run.WriteFile(artifacts.HelpFile, []byte(compareHelp()))); err != nil {
		_ = run.Finish(artifacts.Manifest{Fingerprint: fp, InterruptedReason: "failed: " + err.Error()}, false)
		return fail("%v", err)
	}
	fmt.Fprintf(e.stderr, "llmprobe: compare run directory %s\n", run.Dir())

	sides := map[string]*compare.Evidence{}
	order := roundOrder(f.order, f.sw.rounds, f.sw.seed)
	complete, stopReason := true, ""
	obs := newCompareObserver(e.logger)
	if !f.sw.noProgress {
		obs.stderr = e.stderr
	}
	for i, side := range order {
		round := i + 1
		cfg := cfgs[side]
		cfg.OutDir = run.Dir()
		cfg.Name = fmt.Sprintf("r%d-%s", round, side)
		cfg.Seed = f.sw.seed + int64(i/2)
		obs.round, obs.rounds, obs.side = round, len(order), side
		level.Info(e.logger).Log("msg", "compare round starting", "round", round, "of", len(order), "side", side, "seed", cfg.Seed)
		out, err := rundir.Run(e.ctx, cfg, rundir.Options{Logger: log.With(e.logger, "round", round, "side", side), Args: args, Observer: obs,
			SaveDetailed: f.sw.saveDetailed})
		if out != nil && out.Result != nil {
			rel, rerr := filepath.Rel(run.Dir(), out.Dir)
			if rerr != nil {
				rel = out.Dir
			}
			r := compareRound{Round: round, Side: side, Seed: cfg.Seed, Dir: filepath.ToSlash(rel), Complete: out.Complete,
				Start: out.Result.Fingerprint.Start, End: out.Result.Fingerprint.End}
			cr.Rounds = append(cr.Rounds, r)
			fp.Steps = append(fp.Steps, fingerprint.StepWindow{Index: i, Label: cfg.Name, Start: r.Start, End: r.End, Requests: requestsOf(out.Result)})
			if i == 0 {
				fp.Workload, fp.Load = out.Result.Fingerprint.Workload, out.Result.Fingerprint.Load
				fp.Load.Rounds, fp.Load.Seed = len(order), f.sw.seed
			}
			if s := cr.side(side); s.Model == "" {
				s.Model = out.Result.ModelID
			}
			ev, lerr := loadRunDir(out.Dir)
			if lerr != nil {
				err = errors.Join(err, lerr)
			} else {
				for j := range ev.Steps {
					ev.Steps[j].Order = round
				}
				ev.Name = side
				if sides[side] == nil {
					sides[side] = ev
				} else {
					sides[side].Merge(ev)
				}
			}
		}
		switch {
		case e.ctx.Err() != nil:
			complete, stopReason = false, fmt.Sprintf("interrupted during round %d (%s)", round, side)
		case err != nil:
			complete, stopReason = false, fmt.Sprintf("round %d (%s) failed: %s", round, side, fingerprint.RedactSecrets(sweepErrorText(err), secrets...))
		case out == nil || !out.Complete:
			complete, stopReason = false, fmt.Sprintf("round %d (%s) did not complete", round, side)
		}
		if !complete {
			level.Error(e.logger).Log("msg", "compare stopped", "reason", stopReason)
			break
		}
	}

	var v *compare.Verdict
	if sides[sideBaseline] != nil && sides[sideCandidate] != nil {
		v = compare.Compare(sides[sideBaseline], sides[sideCandidate], compare.Options{
			Thresholds: th, Vary: vary, SLO: base.SLO, Iters: f.bootstrapIters, Seed: uint64(f.sw.seed),
		})
	} else {
		v = &compare.Verdict{Outcome: compare.OutcomeInconclusive, Rules: []compare.Rule{}, Figures: []compare.Figure{},
			Reasons: []string{"no round of one side was measured"}, Missing: []string{}}
	}
	if !complete {
		v.Outcome = compare.OutcomeInconclusive
		v.Reasons = append([]string{stopReason}, v.Reasons...)
		v.Missing = append([]string{"every round of the comparison, complete"}, v.Missing...)
	}
	cr.Verdict, cr.ExitCode, cr.Complete, cr.Result = v.Outcome, v.ExitCode(), complete, v
	fp.End = time.Now().UTC()
	fp.Metadata = compareMetadata(f, cr, base.Metadata)

	var md bytes.Buffer
	fmt.Fprintf(&md, "# llmprobe compare: %s\n\n", v.Outcome)
	fmt.Fprintf(&md, "Baseline `%s` (model %s), candidate `%s` (model %s); %d rounds in %s order, seed %d.\n\n",
		cr.Baseline.Target, orNR(cr.Baseline.Model), cr.Candidate.Target, orNR(cr.Candidate.Model), f.sw.rounds, f.order, f.sw.seed)
	writeVerdictMarkdown(&md, v, verdictReport{decision: cr.Decision, rollbackIf: cr.RollbackIf, sloMS: cr.SLO,
		prices: [2]float64{cr.Baseline.CostPerHour, cr.Candidate.CostPerHour},
		rounds: func(w io.Writer) {
			fmt.Fprintln(w, "### Rounds\n\n| round | side | seed | run directory | complete |\n|---:|---|---:|---|---|")
			for _, r := range cr.Rounds {
				fmt.Fprintf(w, "| %d | %s | %d | [%s](%s/analysis.md) | %v |\n", r.Round, r.Side, r.Seed, r.Dir, r.Dir, r.Complete)
			}
			fmt.Fprintln(w)
		}})
	werr := errors.Join(run.WriteJSON(artifacts.ResultFile, cr), run.WriteFile(artifacts.AnalysisFile, md.Bytes()))
	reason := stopReason
	if werr != nil && reason == "" {
		reason = "failed: " + werr.Error()
	}
	if err := run.Finish(artifacts.Manifest{Fingerprint: fp, InterruptedReason: reason}, complete && werr == nil); err != nil {
		werr = errors.Join(werr, err)
	}

	writeVerdictText(e.stdout, v, cr.SLO)
	fmt.Fprintf(e.stdout, "\nrun directory: %s\n", run.Dir())
	if werr != nil {
		level.Error(e.logger).Log("msg", "cannot write the compare run directory", "err", werr)
		return compare.ExitInconclusive
	}
	if e.ctx.Err() != nil {
		return 130
	}
	return v.ExitCode()
}

func orNR(s string) string { return fingerprint.OrNotRecorded(s) }

func requestsOf(res *sweep.Result) int {
	n := 0
	for _, s := range res.Steps {
		n += s.Stats.Requests
	}
	return n
}

// compareMetadata records the comparison's settings in the manifest.
func compareMetadata(f *compareFlags, cr *compareResult, user map[string]string) map[string]string {
	m := map[string]string{}
	for k, v := range user {
		m[k] = v
	}
	m["compare.baseline"] = cr.Baseline.Target
	m["compare.candidate"] = cr.Candidate.Target
	m["compare.baseline_model"] = orNR(cr.Baseline.Model)
	m["compare.candidate_model"] = orNR(cr.Candidate.Model)
	m["compare.order"] = f.order
	m["compare.rounds"] = fmt.Sprint(f.sw.rounds)
	m["compare.vary"] = strings.Join(cr.Vary, ",")
	m["compare.max_regression"] = f.maxRegression
	for _, s := range []struct {
		key   string
		price float64
	}{{"compare.baseline_cost_per_hour_usd", cr.Baseline.CostPerHour}, {"compare.candidate_cost_per_hour_usd", cr.Candidate.CostPerHour}} {
		if s.price > 0 {
			m[s.key] = strconv.FormatFloat(s.price, 'g', -1, 64)
		}
	}
	return m
}

// compareObserver prints a progress bar per step (stderr; nil: none) and a
// line per finished step naming its round and side.
type compareObserver struct {
	stepProgress
	logger log.Logger

	round, rounds int
	side          string
}

// newCompareObserver returns a compareObserver whose progress bars name the
// round and side.
func newCompareObserver(logger log.Logger) *compareObserver {
	o := &compareObserver{logger: logger}
	o.label = func(st *sweep.Step) string {
		return fmt.Sprintf("round %d/%d %s %s", o.round, o.rounds, o.side, st.Label)
	}
	return o
}

// StepDone implements sweep.Observer.
func (o *compareObserver) StepDone(st *sweep.Step) {
	o.stepProgress.StepDone(st)
	valid := "valid"
	if !st.Validity.Valid {
		valid = "invalid: " + strings.Join(st.Validity.Flags, ", ")
	}
	level.Info(o.logger).Log("msg", "compare step done", "round", o.round, "side", o.side, "step", st.Label,
		"requests", st.Stats.Requests, "failed", st.Stats.Failed, "ttft_p99_ms", ms(st.Stats.TTFT.P99),
		"tpot_p99_ms", ms(st.Stats.TPOT.P99), "validity", valid)
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
