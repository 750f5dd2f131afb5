package report

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/llmprobe/llmprobe/prober/sweep"
)

// The sections of analysis.md, in the order of
// docs/templates/experiment-report.md. The compare run's analysis.md
// (verdict.go, WriteCompareAnalysis) uses the same headings.
const (
	SectionDecision    = "Decision and SLO"
	SectionFingerprint = "Fingerprint"
	SectionWorkload    = "Workload distributions"
	SectionResults     = "Results"
	SectionValidity    = "Validity checks"
	SectionConclusion  = "Conclusion (this environment and workload only)"
	SectionRollback    = "Rollback condition"
	SectionMissing     = "Evidence still missing"
)

// Sections lists the template's section headings in order.
var Sections = []string{SectionDecision, SectionFingerprint, SectionWorkload, SectionResults, SectionValidity,
	SectionConclusion, SectionRollback, SectionMissing}

// KeepUpSentence explains the knee's keep-up criterion in one sentence,
// wherever a report uses it.
const KeepUpSentence = "A level keeps up when its keep-up (the fraction of its requests that were good, times its " +
	"arrival window over the time the server needed to finish them less one unloaded request's latency) is at least 90 %: " +
	"a server that keeps up finishes about one request latency after the last arrival, an overloaded one pays its whole backlog."

// ScopeSentence limits a conclusion to the run's environment and workload.
const ScopeSentence = "This conclusion holds for this target, its hardware and software as fingerprinted, this workload and " +
	"these load levels only; it says nothing about other request distributions, rates or versions."

// workloadSections write the subsections of "Workload distributions", in
// order, each a "### ..." heading and its content (nothing when it does
// not apply to the run). Each workload source adds its function here
// (datasets, trace timing, multi-turn sessions); the token distributions
// every sweep records come first.
var workloadSections = []func(b *bytes.Buffer, res *sweep.Result){
	writeTokens,
}

// heading writes a "## " heading.
func heading(b *bytes.Buffer, name string) { fmt.Fprintf(b, "## %s\n\n", name) }

// writeWorkload writes "Workload distributions": the workload's identity
// and every workloadSections subsection.
func writeWorkload(b *bytes.Buffer, res *sweep.Result) {
	heading(b, SectionWorkload)
	w := res.Fingerprint.Workload
	fmt.Fprintf(b, "Workload sha256 %s (from %s); the distributions below are what the requests actually had.\n\n", orNR(w.SHA256), orNR(w.Source))
	for _, f := range workloadSections {
		f(b, res)
	}
}

// writeRollback writes "Rollback condition".
func writeRollback(b *bytes.Buffer, res *sweep.Result) {
	heading(b, SectionRollback)
	if r := res.Metadata[MetaRollbackIf]; r != "" {
		fmt.Fprintf(b, "Roll back if: %s\n\n", r)
		return
	}
	b.WriteString("not-recorded: no --rollback-if was given. State the condition that reverses the decision, in terms a " +
		"monitor can check (the canary recording rules, or `llmprobe compare`'s exit code).\n\n")
}

// writeConclusion writes the verdict paragraphs, limited to this run's
// environment and workload, with the SLO beside them.
func writeConclusion(b *bytes.Buffer, res *sweep.Result) {
	heading(b, SectionConclusion)
	fmt.Fprintf(b, "SLO: %s.\n\n", sloText(res))
	for _, para := range verdict(res) {
		fmt.Fprintf(b, "%s\n\n", para)
	}
	for _, n := range res.Notes {
		fmt.Fprintf(b, "> Note: %s\n\n", n)
	}
	fmt.Fprintf(b, "%s\n\n", ScopeSentence)
}

// answer is the one-line answer of "Decision and SLO".
func answer(res *sweep.Result) string {
	k := res.Knee
	a := "knee " + kneeLine(res)
	if t := k.Interval.Text(kneeUnit(res)); t != "" {
		a += "; " + t
	}
	if c, ok := res.KneeCost(); ok {
		a += fmt.Sprintf("; %s USD per million good output tokens at the knee", num(c))
	}
	if j, ok := res.KneeEnergyPerGoodToken(); ok {
		a += fmt.Sprintf("; %s J per good output token at the knee", num(j))
	}
	if !res.Complete {
		a += " (incomplete sweep: " + orNR(res.InterruptedReason) + ")"
	}
	return a + "; under SLO " + sloText(res) + " (see Conclusion)"
}

// missingEvidence lists the evidence that would make the conclusion
// stronger: invalid levels to rerun, p99s on too few samples, the knee
// not located, one round.
func missingEvidence(res *sweep.Result) []string {
	var out []string
	if !res.Complete {
		out = append(out, "the rest of the sweep: it did not complete ("+orNR(res.InterruptedReason)+")")
	}
	if inv := invalidAbove(res, 0); len(inv) > 0 {
		out = append(out, "valid steps at "+levelList(res, inv)+": fix the cause and rerun them")
	}
	var short []string
	for _, st := range res.Steps {
		for _, c := range st.Stats.SLOChecks {
			if !c.Reliable {
				short = append(short, stepName(st))
				break
			}
		}
	}
	if len(short) > 0 {
		out = append(out, fmt.Sprintf("at least %d requests per step for the SLO p99s of step(s) %s (raise --num-prompts or --duration)",
			sweep.MinSLOSamples, strings.Join(short, ", ")))
	}
	k := res.Knee
	switch {
	case !k.Found && k.Low > 0 && k.Upper == 0:
		out = append(out, "levels above "+levelText(res, k.Low)+": every level tried kept up, so the knee is not located")
	case !k.Found && k.Low == 0 && k.Upper > 0:
		out = append(out, "levels below "+levelText(res, k.Upper)+": no level tried kept up")
	case !k.Found && k.Low > 0:
		out = append(out, "steps inside the bracket "+bracketText(k)+" to state the knee")
	}
	if k.Found && res.Rounds <= 1 && k.Interval == nil {
		out = append(out, "the knee's uncertainty: --rounds 3, or steps small enough for the bootstrap")
	}
	if !sloSet(res) {
		out = append(out, "an SLO (--goodput) to count good requests, goodput and the cost per good token")
	}
	return out
}

func orNR(s string) string {
	if s == "" {
		return "not-recorded"
	}
	return s
}

// kneeUnit is the unit of the knee's level.
func kneeUnit(res *sweep.Result) string {
	if closed(res) {
		return ""
	}
	return "req/s"
}
