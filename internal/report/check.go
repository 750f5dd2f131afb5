package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/llmprobe/llmprobe/prober/compare"
	"github.com/llmprobe/llmprobe/prober/slo"
)

// AnalyzeOutput is analyze's --format json document.
type AnalyzeOutput struct {
	Inputs     []*compare.Check   `json:"inputs"`
	Comparison *compare.Verdict   `json:"comparison,omitempty"`
	SLO        map[string]float64 `json:"comparison_slo_ms,omitempty"`
	Decision   string             `json:"decision,omitempty"`
	RollbackIf string             `json:"rollback_if,omitempty"`
	// Unverified maps each input read without a manifest to check it
	// against to why (an llmprobe run directory loads only when it
	// verifies).
	Unverified map[string]string `json:"unverified,omitempty"`
	// Prices are the compared sides' USD per hour (markdown only).
	Prices [2]float64 `json:"-"`
	// Sequential holds a compare run directory's looks, as compare
	// recorded them (nil: none); the verdict is re-derived at the last.
	Sequential *compare.Sequential `json:"sequential,omitempty"`
}

// ExitCode is analyze's exit code: the comparison's verdict when there is
// one, else the worst input's (fail over inconclusive over pass).
func (out *AnalyzeOutput) ExitCode() int {
	if out.Comparison != nil {
		return out.Comparison.ExitCode()
	}
	code := compare.ExitPass
	rank := map[int]int{compare.ExitPass: 0, compare.ExitInconclusive: 1, compare.ExitFail: 2}
	for _, c := range out.Inputs {
		if rank[c.ExitCode()] > rank[code] {
			code = c.ExitCode()
		}
	}
	return code
}

// WriteAnalyze writes analyze's output in format: "json" (the document
// itself), "markdown" (each input's check, then the comparison's sections)
// or "text".
func WriteAnalyze(w io.Writer, format string, out *AnalyzeOutput) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	case "markdown":
		for _, c := range out.Inputs {
			WriteCheckMarkdown(w, c)
		}
		if out.Comparison != nil {
			WriteVerdictMarkdown(w, out.Comparison, VerdictReport{Decision: out.Decision, RollbackIf: out.RollbackIf, SLOMS: out.SLO, Prices: out.Prices})
		}
		return nil
	}
	for i, c := range out.Inputs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		WriteCheckText(w, c)
	}
	if out.Comparison != nil {
		if len(out.Inputs) > 0 {
			fmt.Fprintln(w)
		}
		WriteLooksText(w, out.Sequential)
		WriteVerdictText(w, out.Comparison, out.SLO)
	}
	return nil
}

// msText formats milliseconds: at most one decimal, no trailing zeros.
func msText(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "—"
	}
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
}

func pctOrNR(v *float64) string {
	if v == nil {
		return "not-recorded"
	}
	return fmt.Sprintf("%.2f %%", 100**v)
}

func sloMSText(m map[string]float64) string {
	var parts []string
	for _, k := range slo.Names {
		if v, ok := m[k]; ok {
			parts = append(parts, k+":"+msText(v))
		}
	}
	return strings.Join(parts, " ")
}

func checkLine(r compare.SLOResult) string {
	name := strings.ToUpper(r.Metric) + " p99"
	switch r.Status {
	case compare.StatusNotRecorded:
		return fmt.Sprintf("%s not-recorded (threshold %s): %s", name, msText(r.ThresholdMS), r.Detail)
	case compare.StatusOK:
		v, th := cmpText(r.ValueMS, r.ThresholdMS)
		return fmt.Sprintf("%s %s <= %s PASS", name, v, th)
	}
	v, th := cmpText(r.ValueMS, r.ThresholdMS)
	return fmt.Sprintf("%s %s > %s FAIL", name, v, th)
}

// cmpText formats a value and the threshold it is compared with as msText
// does, with more decimals when that rounding would make them read equal
// although they differ (35.0129 against 35 reads "35.013 > 35", never
// "35 > 35").
func cmpText(v, th float64) (string, string) {
	if math.IsNaN(v) || math.IsInf(v, 0) || math.IsNaN(th) || math.IsInf(th, 0) || v == th {
		return msText(v), msText(th)
	}
	for d := 1; d <= 9; d++ {
		p := math.Pow(10, float64(d))
		a, b := math.Round(v*p)/p, math.Round(th*p)/p
		if a != b && (a < b) == (v < th) {
			return strconv.FormatFloat(a, 'f', -1, 64), strconv.FormatFloat(b, 'f', -1, 64)
		}
	}
	return strconv.FormatFloat(v, 'g', -1, 64), strconv.FormatFloat(th, 'g', -1, 64)
}

// WriteCheckText prints a single input's SLO check: its warnings, the SLO,
// each step's counts, error rate, goodput ratio, cost and SLO lines, what
// it does not record and the outcome.
func WriteCheckText(w io.Writer, c *compare.Check) {
	fmt.Fprintf(w, "%s (%s)\n", c.Name, c.Format)
	for _, x := range c.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", x)
	}
	if len(c.SLO) > 0 {
		fmt.Fprintf(w, "  SLO: %s (from %s)\n", sloMSText(c.SLO), c.SLOSource)
	} else {
		fmt.Fprintln(w, "  SLO: none (give --goodput ttft:MS tpot:MS to check one)")
	}
	for _, st := range c.Steps {
		label := st.Label
		if st.Round > 1 {
			label += fmt.Sprintf(" round %d", st.Round)
		}
		fmt.Fprintf(w, "  %s: %d requests, %d completed, %d failed\n", label, st.Completed+st.Failed, st.Completed, st.Failed)
		for _, p := range st.Problems {
			fmt.Fprintf(w, "    not trusted    %s\n", p)
		}
		for _, x := range st.Invalid {
			fmt.Fprintf(w, "    invalid        %s (decides nothing)\n", x)
		}
		fmt.Fprintf(w, "    error rate     %s\n", pctOrNR(st.ErrorRate))
		fmt.Fprintf(w, "    goodput ratio  %s (%s)\n", pctOrNR(st.GoodputRatio), st.GoodputNote)
		if c.CostPerHour > 0 {
			fmt.Fprintf(w, "    cost           %s\n", stepCostText(c.CostPerHour, st))
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
	if c.OutcomeReason != "" {
		fmt.Fprintf(w, "  outcome: %s (%s)\n", c.Outcome, c.OutcomeReason)
		return
	}
	fmt.Fprintf(w, "  outcome: %s\n", c.Outcome)
}

// WriteCheckMarkdown renders a single input's SLO check as a Markdown
// section with a table of its steps.
func WriteCheckMarkdown(w io.Writer, c *compare.Check) {
	fmt.Fprintf(w, "## %s\n\nFormat: %s.", c.Name, c.Format)
	if len(c.SLO) > 0 {
		fmt.Fprintf(w, " SLO: `%s` (from %s).", sloMSText(c.SLO), c.SLOSource)
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
			cost = " " + cell(stepCostText(c.CostPerHour, st)) + " |"
		}
		for _, p := range st.Problems {
			checks = append(checks, "not trusted: "+p)
		}
		for _, x := range st.Invalid {
			checks = append(checks, "invalid, decides nothing: "+x)
		}
		fmt.Fprintf(w, "| %s | %d | %d | %s | %s | %s |%s\n", label, st.Completed+st.Failed, st.Failed, pctOrNR(st.ErrorRate),
			pctOrNR(st.GoodputRatio), cell(strings.Join(checks, "; ")), cost)
	}
	fmt.Fprintln(w)
	if len(c.Missing) > 0 {
		fmt.Fprintf(w, "Not recorded: %s.\n\n", strings.Join(c.Missing, "; "))
	}
	if c.OutcomeReason != "" {
		fmt.Fprintf(w, "Outcome: **%s** (%s).\n\n", c.Outcome, c.OutcomeReason)
		return
	}
	fmt.Fprintf(w, "Outcome: **%s**.\n\n", c.Outcome)
}

// cell escapes text for a Markdown table cell ("—" for none).
func cell(s string) string {
	if s == "" {
		return "—"
	}
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// stepCostText states a step's cost per million good output tokens at price.
func stepCostText(price float64, st compare.StepCheck) string {
	if st.CostPerMillion == nil {
		return "not-recorded: " + st.CostNote
	}
	return fmt.Sprintf("%s USD per million good output tokens (%s USD/h at %s good output tokens/s; %s)",
		compare.Num(*st.CostPerMillion), compare.Num(price), compare.Num(*st.GoodOutputThroughput), st.CostNote)
}
