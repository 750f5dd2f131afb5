package main

import (
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/alecthomas/kingpin/v2"

	"github.com/llmprobe/llmprobe/internal/report"
	"github.com/llmprobe/llmprobe/internal/rundir"
	"github.com/llmprobe/llmprobe/prober/compare"
	"github.com/llmprobe/llmprobe/prober/slo"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// analyzeFlags holds the raw flag values of `llmprobe analyze`.
type analyzeFlags struct {
	paths         []string
	goodput       []string
	format        string
	maxRegression string
	vary          string
	seed          uint64
	costPerHour   float64
}

func init() {
	register(func(app *kingpin.Application) (string, action) {
		f := &analyzeFlags{}
		cmd := app.Command("analyze", "Analyze result files offline (no network, no GPU): llmprobe run directories "+
			"(sweep or compare) and their result.json, vllm bench serve --save-result files (with or without "+
			"--save-detailed, either goodput key spelling) and directories of them. For each input: error rate, "+
			"goodput ratio and each SLO's p99 PASS/FAIL. Given two inputs (baseline first), the comparison with "+
			"compare's validity rules on what the files record: missing evidence makes it inconclusive. Exit codes: "+
			"0 pass, 1 fail, 3 inconclusive, 2 bad input. See docs/compare.md (llmprobe analyze).")
		cmd.Arg("path", "Run directories or result files (two: baseline, then candidate).").Required().StringsVar(&f.paths)
		cmd.Flag("goodput", "SLO thresholds in ms, vllm bench serve's syntax (--goodput ttft:800 tpot:50). "+
			"Default: the input's own (result.json's goodput_ms, a foreign file's slo_ms).").StringsVar(&f.goodput)
		cmd.Flag("format", "Output format: text, json or markdown.").Default("text").EnumVar(&f.format, "text", "json", "markdown")
		cmd.Flag("max-regression", "With two inputs: the compared figures and the largest regression allowed "+
			"(latency percentiles ttft_pNN, tpot_pNN, e2el_pNN; goodput; throughput).").
			Default(compare.DefaultThresholds).StringVar(&f.maxRegression)
		cmd.Flag("vary", "With two inputs: the fingerprint fields allowed to differ ("+strings.Join(compare.FieldNames, ", ")+").").
			Default(strings.Join(compare.DefaultVary, ",")).StringVar(&f.vary)
		cmd.Flag("bootstrap-seed", "Seed of the bootstrap interval on the difference.").Default("0").Uint64Var(&f.seed)
		cmd.Flag("cost-per-hour", "Price of the serving in USD per hour: each step's cost per million good output tokens "+
			"(and, with two inputs, the cost figure of --max-regression cost=5%). Default: the price an llmprobe run recorded.").
			Default("0").Float64Var(&f.costPerHour)
		return cmd.FullCommand(), func(e *env) int { return runAnalyze(e, f) }
	})
}

// goodputPair matches a --goodput KEY:VALUE pair given after the flag.
var goodputPair = regexp.MustCompile(`^(?i)(ttft|tpot|e2el):[0-9.]+$`)

func runAnalyze(e *env, f *analyzeFlags) int {
	// `--goodput ttft:800 tpot:50`: kingpin takes tpot:50 as a path.
	var paths []string
	for _, p := range f.paths {
		if _, err := os.Stat(p); len(f.goodput) > 0 && goodputPair.MatchString(p) && err != nil {
			f.goodput = append(f.goodput, p)
			continue
		}
		paths = append(paths, p)
	}
	bad := func(flag string, err error) int {
		fmt.Fprintf(e.stderr, "llmprobe: error: --%s: %v\n", flag, err)
		return compare.ExitBadInput
	}
	o := rundir.AnalyzeOptions{Seed: f.seed, CostPerHour: f.costPerHour, Given: compare.Given{Thresholds: flagGiven(e.args, "max-regression"),
		Vary: flagGiven(e.args, "vary"), SLO: flagGiven(e.args, "goodput"), Seed: flagGiven(e.args, "bootstrap-seed")}}
	var err error
	if len(f.goodput) > 0 {
		if o.SLO, err = slo.ParseGoodput(f.goodput); err != nil {
			return bad("goodput", err)
		}
	}
	if o.Thresholds, err = compare.ParseThresholds(f.maxRegression); err != nil {
		return bad("max-regression", err)
	}
	if o.Vary, err = compare.ParseVary(f.vary); err != nil {
		return bad("vary", err)
	}
	if err := sweep.CheckCostPerHour(f.costPerHour); err != nil {
		return bad("cost-per-hour", err)
	}
	out, err := rundir.Analyze(paths, o)
	if err != nil {
		errs := []error{err}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			errs = j.Unwrap()
		}
		for _, err := range errs {
			fmt.Fprintf(e.stderr, "llmprobe: error: %s\n", oneLine(err.Error()))
		}
		return compare.ExitBadInput
	}
	for _, p := range slices.Sorted(maps.Keys(out.Unverified)) {
		fmt.Fprintf(e.stderr, "llmprobe: warning: %s: %s\n", p, out.Unverified[p])
	}
	if err := report.WriteAnalyze(e.stdout, f.format, out); err != nil {
		fmt.Fprintf(e.stderr, "llmprobe: error: %v\n", err)
		return 1
	}
	return out.ExitCode()
}

// flagGiven reports whether --name was given on the command line.
func flagGiven(args []string, name string) bool {
	for _, a := range args {
		if a == "--"+name || strings.HasPrefix(a, "--"+name+"=") {
			return true
		}
	}
	return false
}
