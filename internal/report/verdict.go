package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	checks "github.com/llmprobe/llmprobe/prober/answer"
	"github.com/llmprobe/llmprobe/prober/compare"
)

// WriteCompareAnalysis renders a compare run directory's analysis.md: a
// heading with the verdict, the sides and the rounds planned (rounds, in
// cr.Order, from cr.Seed), then the verdict's sections
// (WriteVerdictMarkdown) with the table of the rounds run, each linked to
// its own analysis.md.
func WriteCompareAnalysis(w io.Writer, cr *compare.Result, rounds int) {
	v := cr.Result
	fmt.Fprintf(w, "# llmprobe compare: %s\n\n", v.Outcome)
	fmt.Fprintf(w, "Baseline `%s` (model %s), candidate `%s` (model %s); %d rounds in %s order, seed %d.\n\n",
		cr.Baseline.Target, orNR(cr.Baseline.Model), cr.Candidate.Target, orNR(cr.Candidate.Model), rounds, cr.Order, cr.Seed)
	if s := cr.Sequential; s != nil && len(s.Looks) > 0 {
		fmt.Fprintf(w, "Sequential: %d looks of %d rounds (up to %d within --budget %s); stopped: %s.\n\n", len(s.Looks), s.RoundsPerLook, s.MaxLooks, s.Budget, s.Stopped)
	}
	WriteVerdictMarkdown(w, v, VerdictReport{Decision: cr.Decision, RollbackIf: cr.RollbackIf, SLOMS: cr.SLO,
		Prices: [2]float64{cr.Baseline.CostPerHour, cr.Candidate.CostPerHour},
		Rounds: func(w io.Writer) {
			fmt.Fprintln(w, "### Rounds\n\n| round | side | seed | run directory | complete | counted |\n|---:|---|---:|---|---|---|")
			for _, r := range cr.Rounds {
				round := fmt.Sprint(r.Round)
				if r.Attempt > 1 {
					round += " (rerun)"
				}
				counted := "yes"
				if r.Discarded != "" {
					counted = "no: " + cell(r.Discarded)
				}
				fmt.Fprintf(w, "| %s | %s | %d | [%s](%s/analysis.md) | %v | %s |\n", round, r.Side, r.Seed, r.Dir, r.Dir, r.Complete, counted)
			}
			fmt.Fprintln(w)
			writeLooksMarkdown(w, cr.Sequential)
		}})
}

// verdictSLO is the SLO written beside a verdict: "under SLO ttft:800
// tpot:50 (ms, p99 per request)", or that none was given.
func verdictSLO(sloMS map[string]float64) string {
	if len(sloMS) == 0 {
		return "with no SLO (--goodput): goodput not compared"
	}
	return "under SLO " + sloMSText(sloMS) + " (ms, p99 per request)"
}

// WriteVerdictText prints a comparison's verdict with its SLO, its
// reasons, the rule table, the figures and the evidence still missing.
func WriteVerdictText(w io.Writer, v *compare.Verdict, sloMS map[string]float64) {
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
	writeEnergyText(w, v.Energy)
	writeServerTimingText(w, v.ServerTiming)
	if qs := v.Quality; qs != nil {
		fmt.Fprintf(w, "\nquality (%s):\n  %-13s %s\n", qs.Set, qs.Status, qs.Detail)
		for _, c := range qs.FailingSends() {
			fmt.Fprintf(w, "  failing %s: baseline %s, candidate %s (%d of %d sends)\n", c.Check, replyText(c.Baseline), replyText(c.Candidate),
				c.Regressed, qs.Repeats)
		}
	}
	if len(v.Missing) > 0 {
		fmt.Fprintln(w, "\nevidence still missing:")
		for _, m := range v.Missing {
			fmt.Fprintf(w, "  - %s\n", m)
		}
	}
}

// VerdictReport is what a comparison's analysis.md says beside the
// verdict: the question, the SLO, the prices and (for a compare run) the
// rounds.
type VerdictReport struct {
	// Decision and RollbackIf are the question and the rollback condition
	// ("": not recorded).
	Decision, RollbackIf string
	// SLOMS is the comparison's SLO in ms by vLLM key (compare.SLOMS).
	SLOMS map[string]float64
	// Prices are the baseline's and candidate's USD per hour (0: none).
	Prices [2]float64
	// Rounds writes the compare run's rounds table (nil: none, analyze).
	Rounds func(io.Writer)
}

// WriteVerdictMarkdown renders the verdict in the sections of
// docs/templates/experiment-report.md (Sections): decision and SLO
// with the answer, the fingerprint, the workload distributions, the
// figures (and rounds), the validity checks, the conclusion limited to
// this environment and workload, the rollback condition and the evidence
// still missing.
func WriteVerdictMarkdown(w io.Writer, v *compare.Verdict, q VerdictReport) {
	h := func(name string) { fmt.Fprintf(w, "## %s\n\n", name) }
	h(SectionDecision)
	if q.Decision != "" {
		fmt.Fprintf(w, "- Question: %s\n", q.Decision)
	} else {
		fmt.Fprintln(w, "- Question: not-recorded (give --decision \"...\")")
	}
	if len(q.SLOMS) > 0 {
		fmt.Fprintf(w, "- SLO: `%s` (ms, p99 per request)\n", sloMSText(q.SLOMS))
	} else {
		fmt.Fprintln(w, "- SLO: none given (--goodput); goodput is not compared")
	}
	if q.Prices[0] > 0 || q.Prices[1] > 0 {
		fmt.Fprintf(w, "- Price: baseline %s, candidate %s USD per hour (the cost figure is per million good output tokens)\n",
			priceText(q.Prices[0]), priceText(q.Prices[1]))
	}
	fmt.Fprintf(w, "- Answer: **%s** %s (see Conclusion)\n\n", v.Outcome, verdictSLO(q.SLOMS))

	h(SectionFingerprint)
	fmt.Fprintln(w, "| field | baseline | candidate | status |\n|---|---|---|---|")
	for _, f := range v.Fields {
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", f.Field, cell(f.Baseline), cell(f.Candidate), f.Status)
	}
	fmt.Fprintln(w)

	h(SectionWorkload)
	for _, f := range v.Fields {
		if f.Field == compare.FieldWorkload {
			fmt.Fprintf(w, "Workload: baseline %s, candidate %s (%s).\n\n", cell(f.Baseline), cell(f.Candidate), f.Status)
		}
	}
	for _, r := range v.Rules {
		if r.Name == compare.RuleOutputTokens || r.Name == compare.RuleFinish {
			fmt.Fprintf(w, "- %s (%s): %s\n", r.Name, r.Status, cell(r.Detail))
		}
	}
	fmt.Fprintln(w, "\nEach round's analysis.md has the full input, requested and actual output token distributions.")
	fmt.Fprintln(w)

	h(SectionResults)
	writeFigures(w, v, q)
	writeQuality(w, v.Quality)

	h(SectionValidity)
	fmt.Fprintln(w, "| rule | status | detail |\n|---|---|---|")
	for _, r := range v.Rules {
		fmt.Fprintf(w, "| %s | %s | %s |\n", r.Name, r.Status, cell(r.Detail))
	}
	fmt.Fprintln(w)

	h(SectionConclusion)
	fmt.Fprintf(w, "**%s** %s.\n\n", v.Outcome, verdictSLO(q.SLOMS))
	for _, r := range v.Reasons {
		fmt.Fprintf(w, "- %s\n", r)
	}
	fmt.Fprintln(w, "\n"+ScopeSentence)
	fmt.Fprintln(w)

	h(SectionRollback)
	if q.RollbackIf != "" {
		fmt.Fprintf(w, "Roll back if: %s\n\n", q.RollbackIf)
	} else {
		fmt.Fprintln(w, "not-recorded (give --rollback-if \"...\").")
		fmt.Fprintln(w)
	}

	h(SectionMissing)
	if len(v.Missing) == 0 {
		fmt.Fprintln(w, "None for this verdict.")
	}
	for _, m := range v.Missing {
		fmt.Fprintf(w, "- %s\n", m)
	}
}

// writeFigures writes the Results section's body: the figures table with
// its explanation, then the rounds table (for a compare run).
func writeFigures(w io.Writer, v *compare.Verdict, q VerdictReport) {
	fmt.Fprintln(w, "### Figures\n\nEach figure pools a side's rounds; the interval is a two-level bootstrap of the "+
		"relative change (rounds drawn with replacement, then requests within each drawn round), so it carries the "+
		"spread between rounds of a side as well as the sampling noise. A figure regresses when the change is worse "+
		"than its limit and the interval excludes no change; it is ok only when the whole interval lies below its limit, "+
		"and undecided otherwise (the evidence rules out neither: the verdict is then inconclusive and says about how "+
		"many requests per side would decide). "+
		"Goodput and throughput are per second of each round's drain-corrected duration; the cost is the price per "+
		"hour over the good output tokens per hour of the same duration, in USD per million (from the same bootstrap "+
		"as goodput), and an increase is a regression.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| figure | level | baseline | candidate | change | interval | limit | rounds (baseline / candidate) | status |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---|---:|---|---|")
	for _, f := range v.Figures {
		if f.Status == compare.StatusNotRecorded && f.NBaseline == 0 {
			fmt.Fprintf(w, "| %s | %s | %s | %s | — | — | %.0f %% | %s / %s | %s: %s |\n", f.Name, f.Level, figNum(f.Baseline, f.Unit),
				figNum(f.Candidate, f.Unit), 100*f.Limit, roundValues(f.BaselineRounds), roundValues(f.CandidateRounds), f.Status, cell(f.Detail))
			continue
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %+.1f %% | %+.1f %% … %+.1f %% | %.0f %% | %s / %s | %s |\n", f.Name, f.Level,
			figNum(f.Baseline, f.Unit), figNum(f.Candidate, f.Unit), 100*f.Change, 100*f.CILo, 100*f.CIHi, 100*f.Limit,
			roundValues(f.BaselineRounds), roundValues(f.CandidateRounds), f.Status)
	}
	fmt.Fprintln(w)
	writeEnergyMarkdown(w, v.Energy)
	writeServerTimingMarkdown(w, v.ServerTiming)
	if q.Rounds != nil {
		q.Rounds(w)
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
		return msText(v) + " ms"
	}
	return fmt.Sprintf("%.3g %s", v, unit)
}

func roundValues(xs []float64) string {
	if len(xs) == 0 {
		return "—"
	}
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.3g", x)
	}
	return strings.Join(parts, ", ")
}

// writeQuality writes the quality section (nil: none): the decision, the
// notes, then each check with both sides' outcome and agreement, and the
// failing checks' replies (redacted, truncated).
func writeQuality(w io.Writer, q *compare.Quality) {
	if q == nil {
		return
	}
	fmt.Fprintf(w, "### Quality\n\nAnswer checks `%s`, sent once to each side after the rounds. A check regressed when the "+
		"baseline passed and the candidate failed, unless the replies first differ at a token where the baseline's top-2 "+
		"margin was under %g nats (low_margin: a near tie that batch variance flips). Tolerance: a drop of %.0f points.\n\n",
		q.Set, q.LowMargin, 100*q.Tolerance)
	fmt.Fprintf(w, "**%s**: %s\n\n", q.Status, cell(q.Detail))
	for _, n := range q.Notes {
		fmt.Fprintf(w, "- %s\n", n)
	}
	if len(q.Notes) > 0 {
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "| check | send | baseline | candidate | agreement |\n|---|---|---|---|---|")
	for _, c := range q.Checks {
		ag := c.Agreement
		if c.Position >= 0 && c.Agreement != compare.AgreeEqual {
			ag = fmt.Sprintf("%s (token %d, margin %.2f)", ag, c.Position, c.Margin)
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s |\n", c.Check, c.Repeat, c.Baseline.Outcome, c.Candidate.Outcome, ag)
	}
	fmt.Fprintln(w)
	if failing := q.Failing(); len(failing) > 0 {
		fmt.Fprintln(w, "Failing checks:")
		fmt.Fprintln(w)
		for _, c := range q.FailingSends() {
			fmt.Fprintf(w, "- %s (%d of %d sends regressed; send %d): baseline %s; candidate %s (%s)\n", c.Check, c.Regressed, q.Repeats,
				c.Repeat, replyText(c.Baseline), replyText(c.Candidate), cell(c.Candidate.Reason))
		}
		fmt.Fprintln(w)
	}
}

// replyText is a check's reply quoted, at most
// compare.MaxQualityReplyBytes (already redacted by answer.Evaluate).
func replyText(r checks.Result) string {
	s := r.Reply
	if len(s) > compare.MaxQualityReplyBytes {
		s = s[:compare.MaxQualityReplyBytes]
		for len(s) > 0 && !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "…"
	}
	return strconv.Quote(s)
}
