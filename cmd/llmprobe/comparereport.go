package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/llmprobe/llmprobe/prober/compare"
)

// writeVerdictText prints a comparison's verdict, its reasons, the rule
// table, the figures and the evidence still missing.
func writeVerdictText(w io.Writer, v *compare.Verdict) {
	fmt.Fprintf(w, "verdict: %s\n", v.Outcome)
	for _, r := range v.Reasons {
		fmt.Fprintf(w, "  %s\n", r)
	}
	fmt.Fprintln(w, "\nrules:")
	for _, r := range v.Rules {
		fmt.Fprintf(w, "  %-13s %-23s %s\n", r.Status, r.Name, r.Detail)
	}
	fmt.Fprintln(w, "\nfigures:")
	for _, f := range v.Figures {
		fmt.Fprintf(w, "  %-13s %-12s %-14s %s\n", f.Status, f.Name, f.Level, f.Detail)
	}
	if len(v.Missing) > 0 {
		fmt.Fprintln(w, "\nevidence still missing:")
		for _, m := range v.Missing {
			fmt.Fprintf(w, "  - %s\n", m)
		}
	}
}

// writeVerdictMarkdown renders the verdict as analysis.md's sections: the
// question (decision, rollback condition, SLO), the verdict, the validity
// checks, the figures, the fingerprint and the evidence still missing.
func writeVerdictMarkdown(w io.Writer, v *compare.Verdict, decision, rollbackIf string, sloMS map[string]float64) {
	writeQuestion(w, decision, rollbackIf, sloMS)
	fmt.Fprintf(w, "## Verdict: **%s**\n\n", v.Outcome)
	for _, r := range v.Reasons {
		fmt.Fprintf(w, "- %s\n", r)
	}
	fmt.Fprintln(w, "\n## Validity checks\n\n| rule | status | detail |\n|---|---|---|")
	for _, r := range v.Rules {
		fmt.Fprintf(w, "| %s | %s | %s |\n", r.Name, r.Status, mdCell(r.Detail))
	}
	fmt.Fprintln(w, "\n## Figures\n\nEach figure pools a side's rounds; the interval is a two-level bootstrap of the "+
		"relative change (rounds drawn with replacement, then requests within each drawn round), so it carries the "+
		"spread between rounds of a side as well as the sampling noise. A figure regresses when the change is worse "+
		"than its limit and the interval excludes no change; an interval that holds 0 is no significant difference.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| figure | level | baseline | candidate | change | interval | limit | rounds (baseline / candidate) | status |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---|---:|---|---|")
	for _, f := range v.Figures {
		if f.Status == compare.StatusNotRecorded && f.NBaseline == 0 {
			fmt.Fprintf(w, "| %s | %s | %s | %s | — | — | %.0f %% | %s / %s | %s: %s |\n", f.Name, f.Level, figNum(f.Baseline, f.Unit),
				figNum(f.Candidate, f.Unit), 100*f.Limit, roundsText(f.BaselineRounds), roundsText(f.CandidateRounds), f.Status, mdCell(f.Detail))
			continue
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %+.1f %% | %+.1f %% … %+.1f %% | %.0f %% | %s / %s | %s |\n", f.Name, f.Level,
			figNum(f.Baseline, f.Unit), figNum(f.Candidate, f.Unit), 100*f.Change, 100*f.CILo, 100*f.CIHi, 100*f.Limit,
			roundsText(f.BaselineRounds), roundsText(f.CandidateRounds), f.Status)
	}
	fmt.Fprintln(w, "\n## Fingerprint\n\n| field | baseline | candidate | status |\n|---|---|---|---|")
	for _, f := range v.Fields {
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", f.Field, mdCell(f.Baseline), mdCell(f.Candidate), f.Status)
	}
	fmt.Fprintln(w, "\n## Evidence still missing")
	fmt.Fprintln(w)
	if len(v.Missing) == 0 {
		fmt.Fprintln(w, "None for this verdict.")
	}
	for _, m := range v.Missing {
		fmt.Fprintf(w, "- %s\n", m)
	}
	fmt.Fprintln(w, "\n## Scope\n\nThis verdict holds for this environment, this workload and these load levels only; "+
		"it says nothing about other request distributions, rates or hardware.")
}

// writeQuestion opens a report with the decision it serves (methodology
// §1): the question, the rollback condition and the SLO.
func writeQuestion(w io.Writer, decision, rollbackIf string, sloMS map[string]float64) {
	fmt.Fprintln(w, "## Decision")
	fmt.Fprintln(w)
	if decision != "" {
		fmt.Fprintf(w, "- Question: %s\n", decision)
	} else {
		fmt.Fprintln(w, "- Question: not-recorded (give --decision \"...\")")
	}
	if rollbackIf != "" {
		fmt.Fprintf(w, "- Roll back if: %s\n", rollbackIf)
	} else {
		fmt.Fprintln(w, "- Roll back if: not-recorded (give --rollback-if \"...\")")
	}
	if len(sloMS) > 0 {
		fmt.Fprintf(w, "- SLO: `%s` (ms, p99 per request)\n", sloText(sloMS))
	} else {
		fmt.Fprintln(w, "- SLO: none given (--goodput); goodput is not compared")
	}
	fmt.Fprintln(w)
}

func figNum(v float64, unit string) string {
	if unit == "ms" {
		return ms(v) + " ms"
	}
	return fmt.Sprintf("%.3g %s", v, unit)
}

func roundsText(xs []float64) string {
	if len(xs) == 0 {
		return "—"
	}
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.3g", x)
	}
	return strings.Join(parts, ", ")
}
