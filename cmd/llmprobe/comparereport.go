package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/llmprobe/llmprobe/internal/report"
	"github.com/llmprobe/llmprobe/prober/compare"
)

// verdictSLO is the SLO written beside a verdict: "under SLO ttft:800
// tpot:50 (ms, p99 per request)", or that none was given.
func verdictSLO(sloMS map[string]float64) string {
	if len(sloMS) == 0 {
		return "with no SLO (--goodput): goodput not compared"
	}
	return "under SLO " + sloText(sloMS) + " (ms, p99 per request)"
}

// writeVerdictText prints a comparison's verdict with its SLO, its
// reasons, the rule table, the figures and the evidence still missing.
func writeVerdictText(w io.Writer, v *compare.Verdict, sloMS map[string]float64) {
	fmt.Fprintf(w, "verdict: %s %s\n", v.Outcome, verdictSLO(sloMS))
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

// verdictReport is what a comparison's analysis.md says beside the
// verdict: the question, the SLO, the prices and (for a compare run) the
// rounds.
type verdictReport struct {
	decision, rollbackIf string
	sloMS                map[string]float64
	// prices are the baseline's and candidate's USD per hour (0: none).
	prices [2]float64
	// rounds writes the compare run's rounds table (nil: none, analyze).
	rounds func(io.Writer)
}

// writeVerdictMarkdown renders the verdict in the sections of
// docs/templates/experiment-report.md (report.Sections): decision and SLO
// with the answer, the fingerprint, the workload distributions, the
// figures (and rounds), the validity checks, the conclusion limited to
// this environment and workload, the rollback condition and the evidence
// still missing.
func writeVerdictMarkdown(w io.Writer, v *compare.Verdict, q verdictReport) {
	h := func(name string) { fmt.Fprintf(w, "## %s\n\n", name) }
	h(report.SectionDecision)
	if q.decision != "" {
		fmt.Fprintf(w, "- Question: %s\n", q.decision)
	} else {
		fmt.Fprintln(w, "- Question: not-recorded (give --decision \"...\")")
	}
	if len(q.sloMS) > 0 {
		fmt.Fprintf(w, "- SLO: `%s` (ms, p99 per request)\n", sloText(q.sloMS))
	} else {
		fmt.Fprintln(w, "- SLO: none given (--goodput); goodput is not compared")
	}
	if q.prices[0] > 0 || q.prices[1] > 0 {
		fmt.Fprintf(w, "- Price: baseline %s, candidate %s USD per hour (the cost figure is per million good output tokens)\n",
			priceText(q.prices[0]), priceText(q.prices[1]))
	}
	fmt.Fprintf(w, "- Answer: **%s** %s (see Conclusion)\n\n", v.Outcome, verdictSLO(q.sloMS))

	h(report.SectionFingerprint)
	fmt.Fprintln(w, "| field | baseline | candidate | status |\n|---|---|---|---|")
	for _, f := range v.Fields {
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", f.Field, mdCell(f.Baseline), mdCell(f.Candidate), f.Status)
	}
	fmt.Fprintln(w)

	h(report.SectionWorkload)
	for _, f := range v.Fields {
		if f.Field == compare.FieldWorkload {
			fmt.Fprintf(w, "Workload: baseline %s, candidate %s (%s).\n\n", mdCell(f.Baseline), mdCell(f.Candidate), f.Status)
		}
	}
	for _, r := range v.Rules {
		if r.Name == compare.RuleOutputTokens || r.Name == compare.RuleFinish {
			fmt.Fprintf(w, "- %s (%s): %s\n", r.Name, r.Status, mdCell(r.Detail))
		}
	}
	fmt.Fprintln(w, "\nEach round's analysis.md has the full input, requested and actual output token distributions.")
	fmt.Fprintln(w)

	h(report.SectionResults)
	fmt.Fprintln(w, "### Figures\n\nEach figure pools a side's rounds; the interval is a two-level bootstrap of the "+
		"relative change (rounds drawn with replacement, then requests within each drawn round), so it carries the "+
		"spread between rounds of a side as well as the sampling noise. A figure regresses when the change is worse "+
		"than its limit and the interval excludes no change; an interval that holds 0 is no significant difference. "+
		"Goodput and throughput are per second of each round's drain-corrected duration; the cost is the price per "+
		"hour over the good output tokens per hour of the same duration, in USD per million (from the same bootstrap "+
		"as goodput), and an increase is a regression.")
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
	fmt.Fprintln(w)
	if q.rounds != nil {
		q.rounds(w)
	}

	h(report.SectionValidity)
	fmt.Fprintln(w, "| rule | status | detail |\n|---|---|---|")
	for _, r := range v.Rules {
		fmt.Fprintf(w, "| %s | %s | %s |\n", r.Name, r.Status, mdCell(r.Detail))
	}
	fmt.Fprintln(w)

	h(report.SectionConclusion)
	fmt.Fprintf(w, "**%s** %s.\n\n", v.Outcome, verdictSLO(q.sloMS))
	for _, r := range v.Reasons {
		fmt.Fprintf(w, "- %s\n", r)
	}
	fmt.Fprintln(w, "\n"+report.ScopeSentence)
	fmt.Fprintln(w)

	h(report.SectionRollback)
	if q.rollbackIf != "" {
		fmt.Fprintf(w, "Roll back if: %s\n\n", q.rollbackIf)
	} else {
		fmt.Fprintln(w, "not-recorded (give --rollback-if \"...\").")
		fmt.Fprintln(w)
	}

	h(report.SectionMissing)
	if len(v.Missing) == 0 {
		fmt.Fprintln(w, "None for this verdict.")
	}
	for _, m := range v.Missing {
		fmt.Fprintf(w, "- %s\n", m)
	}
}

func priceText(p float64) string {
	if !(p > 0) {
		return "not-recorded"
	}
	return compare.Num(p)
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
