package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/alecthomas/kingpin/v2"

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
			"0 pass, 1 fail, 3 inconclusive, 2 bad input. See docs/analyze.md.")
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
		if len(f.goodput) > 0 && goodputPair.MatchString(p) && !exists(p) {
			f.goodput = append(f.goodput, p)
			continue
		}
		paths = append(paths, p)
	}
	var s slo.SLO
	if len(f.goodput) > 0 {
		var err error
		if s, err = slo.ParseGoodput(f.goodput); err != nil {
			fmt.Fprintf(e.stderr, "llmprobe: error: --goodput: %v\n", err)
			return compare.ExitBadInput
		}
	}
	th, err := compare.ParseThresholds(f.maxRegression)
	if err != nil {
		fmt.Fprintf(e.stderr, "llmprobe: error: --max-regression: %v\n", err)
		return compare.ExitBadInput
	}
	vary, err := compare.ParseVary(f.vary)
	if err != nil {
		fmt.Fprintf(e.stderr, "llmprobe: error: --vary: %v\n", err)
		return compare.ExitBadInput
	}
	if err := sweep.CheckCostPerHour(f.costPerHour); err != nil {
		fmt.Fprintf(e.stderr, "llmprobe: error: --cost-per-hour: %v\n", err)
		return compare.ExitBadInput
	}
	var ins []*input
	bad := false
	for _, p := range paths {
		in, err := loadInput(p)
		if err != nil {
			fmt.Fprintf(e.stderr, "llmprobe: error: %s\n", oneLine(err.Error()))
			bad = true
			continue
		}
		in.setPrice(f.costPerHour)
		ins = append(ins, in)
	}
	if bad {
		return compare.ExitBadInput
	}
	out := analysisOutput{Inputs: []*compare.Check{}}
	code := compare.ExitPass
	worst := func(c int) {
		rank := map[int]int{compare.ExitPass: 0, compare.ExitInconclusive: 1, compare.ExitFail: 2}
		if rank[c] > rank[code] {
			code = c
		}
	}
	var pair *comparePair
	switch {
	case len(ins) == 1 && ins[0].pair != nil:
		pair = ins[0].pair
	case len(ins) == 2 && ins[0].pair == nil && ins[1].pair == nil:
		pair = &comparePair{baseline: ins[0].ev, candidate: ins[1].ev}
	}
	for _, in := range ins {
		if in.pair != nil {
			if len(ins) > 1 {
				fmt.Fprintf(e.stderr, "llmprobe: error: %s: a compare run directory is analyzed alone\n", in.path)
				return compare.ExitBadInput
			}
			continue
		}
		c := compare.CheckSLO(in.ev, s)
		out.Inputs = append(out.Inputs, c)
		if pair == nil {
			worst(c.ExitCode())
		}
	}
	if pair != nil {
		o := compare.Options{Thresholds: th, Vary: vary, SLO: s, Seed: f.seed}
		if o.SLO.IsZero() {
			// Both inputs' own SLO, when they agree.
			if pair.baseline.SLO == pair.candidate.SLO {
				o.SLO = pair.baseline.SLO
			}
		}
		if o.SLO.IsZero() && !flagGiven(e.args, "max-regression") {
			o.Thresholds = dropGoodput(o.Thresholds)
		}
		if pair.stored != nil {
			o = pair.stored.options(o, e.args)
		}
		v := compare.Compare(pair.baseline, pair.candidate, o)
		out.Comparison = v
		out.prices = [2]float64{pair.baseline.CostPerHour, pair.candidate.CostPerHour}
		out.SLO = sloMS(o.SLO)
		code = v.ExitCode()
		if pair.stored != nil {
			out.Decision, out.RollbackIf = pair.stored.Decision, pair.stored.RollbackIf
		}
	}
	if err := writeAnalysis(e.stdout, f.format, &out); err != nil {
		fmt.Fprintf(e.stderr, "llmprobe: error: %v\n", err)
		return 1
	}
	return code
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

// dropGoodput removes the goodput figure (no SLO to count good requests).
func dropGoodput(ths []compare.Threshold) []compare.Threshold {
	var out []compare.Threshold
	for _, t := range ths {
		if t.Metric != compare.FigureGoodput {
			out = append(out, t)
		}
	}
	return out
}

func sloMS(s slo.SLO) map[string]float64 {
	out := map[string]float64{}
	for _, t := range s.Thresholds() {
		out[t.Name] = float64(t.Value) / 1e6
	}
	return out
}

// analysisOutput is analyze's --format json document.
type analysisOutput struct {
	Inputs     []*compare.Check   `json:"inputs"`
	Comparison *compare.Verdict   `json:"comparison,omitempty"`
	SLO        map[string]float64 `json:"comparison_slo_ms,omitempty"`
	Decision   string             `json:"decision,omitempty"`
	RollbackIf string             `json:"rollback_if,omitempty"`
	// prices are the compared sides' USD per hour (markdown only).
	prices [2]float64
}

func writeAnalysis(w io.Writer, format string, out *analysisOutput) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	case "markdown":
		for _, c := range out.Inputs {
			writeCheckMarkdown(w, c)
		}
		if out.Comparison != nil {
			writeVerdictMarkdown(w, out.Comparison, verdictReport{decision: out.Decision, rollbackIf: out.RollbackIf, sloMS: out.SLO, prices: out.prices})
		}
		return nil
	}
	for i, c := range out.Inputs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		writeCheckText(w, c)
	}
	if out.Comparison != nil {
		if len(out.Inputs) > 0 {
			fmt.Fprintln(w)
		}
		writeVerdictText(w, out.Comparison, out.SLO)
	}
	return nil
}

// ms formats milliseconds: at most one decimal, no trailing zeros.
func ms(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "—"
	}
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
}

func pct(v *float64) string {
	if v == nil {
		return "not-recorded"
	}
	return fmt.Sprintf("%.2f %%", 100**v)
}

func sloText(m map[string]float64) string {
	var parts []string
	for _, k := range slo.Names {
		if v, ok := m[k]; ok {
			parts = append(parts, k+":"+ms(v))
		}
	}
	return strings.Join(parts, " ")
}

func checkLine(r compare.SLOResult) string {
	name := strings.ToUpper(r.Metric) + " p99"
	switch r.Status {
	case compare.StatusNotRecorded:
		return fmt.Sprintf("%s not-recorded (threshold %s): %s", name, ms(r.ThresholdMS), r.Detail)
	case compare.StatusOK:
		return fmt.Sprintf("%s %s <= %s PASS", name, ms(r.ValueMS), ms(r.ThresholdMS))
	}
	return fmt.Sprintf("%s %s > %s FAIL", name, ms(r.ValueMS), ms(r.ThresholdMS))
}

func writeCheckText(w io.Writer, c *compare.Check) {
	fmt.Fprintf(w, "%s (%s)\n", c.Name, c.Format)
	for _, x := range c.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", x)
	}
	if len(c.SLO) > 0 {
		fmt.Fprintf(w, "  SLO: %s (from %s)\n", sloText(c.SLO), c.SLOSource)
	} else {
		fmt.Fprintln(w, "  SLO: none (give --goodput ttft:MS tpot:MS to check one)")
	}
	for _, st := range c.Steps {
		label := st.Label
		if st.Round > 1 {
			label += fmt.Sprintf(" round %d", st.Round)
		}
		fmt.Fprintf(w, "  %s: %d requests, %d completed, %d failed\n", label, st.Completed+st.Failed, st.Completed, st.Failed)
		fmt.Fprintf(w, "    error rate     %s\n", pct(st.ErrorRate))
		fmt.Fprintf(w, "    goodput ratio  %s (%s)\n", pct(st.GoodputRatio), st.GoodputNote)
		if c.CostPerHour > 0 {
			fmt.Fprintf(w, "    cost           %s\n", costText(c.CostPerHour, st))
		}
		for _, r := range st.SLO {
			line := checkLine(r)
			if r.Detail != "" && r.Status != compare.StatusNotRecorded {
				line += " (" + r.Detail + ")"
			}
			fmt.Fprintf(w, "    %s\n", line)
		}
	}
	if len(c.Missing) > 0 {
		fmt.Fprintf(w, "  not recorded: %s\n", strings.Join(c.Missing, "; "))
	}
	fmt.Fprintf(w, "  outcome: %s\n", c.Outcome)
}

func writeCheckMarkdown(w io.Writer, c *compare.Check) {
	fmt.Fprintf(w, "## %s\n\nFormat: %s.", c.Name, c.Format)
	if len(c.SLO) > 0 {
		fmt.Fprintf(w, " SLO: `%s` (from %s).", sloText(c.SLO), c.SLOSource)
	} else {
		fmt.Fprint(w, " No SLO given.")
	}
	fmt.Fprint(w, "\n\n")
	for _, x := range c.Warnings {
		fmt.Fprintf(w, "> **Warning:** %s\n\n", x)
	}
	costCol, costSep := "", ""
	if c.CostPerHour > 0 {
		costCol, costSep = fmt.Sprintf(" cost per million good output tokens (at %s USD/h) |", compare.Num(c.CostPerHour)), "---|"
	}
	fmt.Fprintln(w, "| step | requests | failed | error rate | goodput ratio | SLO checks |"+costCol)
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---|"+costSep)
	for _, st := range c.Steps {
		var checks []string
		for _, r := range st.SLO {
			checks = append(checks, checkLine(r))
		}
		label := st.Label
		if st.Round > 1 {
			label += fmt.Sprintf(" round %d", st.Round)
		}
		cost := ""
		if c.CostPerHour > 0 {
			cost = " " + mdCell(costText(c.CostPerHour, st)) + " |"
		}
		fmt.Fprintf(w, "| %s | %d | %d | %s | %s | %s |%s\n", label, st.Completed+st.Failed, st.Failed, pct(st.ErrorRate),
			pct(st.GoodputRatio), mdCell(strings.Join(checks, "; ")), cost)
	}
	fmt.Fprintln(w)
	if len(c.Missing) > 0 {
		fmt.Fprintf(w, "Not recorded: %s.\n\n", strings.Join(c.Missing, "; "))
	}
	fmt.Fprintf(w, "Outcome: **%s**.\n\n", c.Outcome)
}

func mdCell(s string) string {
	if s == "" {
		return "—"
	}
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// costText states a step's cost per million good output tokens at price.
func costText(price float64, st compare.StepCheck) string {
	if st.CostPerMillion == nil {
		return "not-recorded: " + st.CostNote
	}
	return fmt.Sprintf("%s USD per million good output tokens (%s USD/h at %s good output tokens/s; %s)",
		compare.Num(*st.CostPerMillion), compare.Num(price), compare.Num(*st.GoodOutputThroughput), st.CostNote)
}
