package report

import (
	"fmt"
	"io"

	"github.com/llmprobe/llmprobe/prober/compare"
)

// The energy per good output token of a comparison (compare.Energy): each
// side's figure with its interval and the candidate's change with its
// interval, reported beside the figures and never judged.

// cmpEnergySentence explains the energy figures of a comparison.
const cmpEnergySentence = "Joules per good output token: each side's GPU energy over its rounds (the DCGM exporter's energy " +
	"counter, per round from after the idle wait to after the round's after snapshot, summed over the side's selected GPUs) " +
	"divided by the output tokens of its requests that met the SLO, the ratio of sums the cost is, with the same two-level " +
	"bootstrap interval. Reported, not judged: it changes no verdict (`--max-regression energy=10%` judges it). Idle power " +
	"counts; host CPU, networking and cooling do not (docs/measurement.md)."

// energySideText is one side's figure with its interval ("0.512 J/good
// tok (95 % interval 0.498 … 0.526)"), or not-recorded with the reason.
func energySideText(s compare.EnergySide, conf float64) string {
	if s.JoulesPerGoodOutputToken == nil {
		return "not-recorded (" + s.NotRecorded + ")"
	}
	t := compare.Num(*s.JoulesPerGoodOutputToken) + " " + compare.EnergyUnit
	if s.CILo != nil && s.CIHi != nil {
		t += fmt.Sprintf(" (%s %% interval %s … %s)", compare.ConfText(conf), compare.Num(*s.CILo), compare.Num(*s.CIHi))
	}
	return t
}

// energyChangeText is the candidate's change with its interval, or
// not-recorded with the reason.
func energyChangeText(e compare.Energy) string {
	if e.Change == nil {
		return "not-recorded: " + e.NotRecorded
	}
	t := fmt.Sprintf("%+.1f %%", 100**e.Change)
	if e.CILo != nil && e.CIHi != nil {
		t += fmt.Sprintf(" (%s %% interval %+.1f %% … %+.1f %%)", compare.ConfText(e.Conf), 100**e.CILo, 100**e.CIHi)
	} else if e.NotRecorded != "" {
		t += " (no interval: " + e.NotRecorded + ")"
	}
	return t
}

// writeEnergyText writes the energy lines of a verdict's text (none for a
// verdict without them).
func writeEnergyText(w io.Writer, es []compare.Energy) {
	if len(es) == 0 {
		return
	}
	fmt.Fprintln(w, "\nenergy (joules per good output token; reported, not judged):")
	for _, e := range es {
		fmt.Fprintf(w, "  %-14s baseline %s; candidate %s; change %s\n", e.Level, energySideText(e.Baseline, e.Conf),
			energySideText(e.Candidate, e.Conf), energyChangeText(e))
	}
}

// writeEnergyMarkdown writes the "Energy" subsection of a verdict's
// Results (none for a verdict without energy figures).
func writeEnergyMarkdown(w io.Writer, es []compare.Energy) {
	if len(es) == 0 {
		return
	}
	fmt.Fprintf(w, "### Energy\n\n%s\n\n", cmpEnergySentence)
	fmt.Fprintln(w, "| level | baseline | candidate | change | rounds (baseline / candidate) | method (baseline / candidate) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, e := range es {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s / %s | %s / %s |\n", e.Level, cell(energySideText(e.Baseline, e.Conf)),
			cell(energySideText(e.Candidate, e.Conf)), cell(energyChangeText(e)), roundValues(e.Baseline.Rounds),
			roundValues(e.Candidate.Rounds), cell(e.Baseline.Method), cell(e.Candidate.Method))
	}
	fmt.Fprintln(w)
}
