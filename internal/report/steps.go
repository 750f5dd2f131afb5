package report

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

func writeSteps(b *bytes.Buffer, res *sweep.Result) {
	b.WriteString("### Steps\n\n")
	if len(res.Steps) == 0 {
		b.WriteString("No step ran.\n\n")
		return
	}
	lvl := "rate (req/s)"
	if closed(res) {
		lvl = "concurrency"
	}
	queue := ""
	queueSep := ""
	if queued(res) {
		queue, queueSep = " client queue p50 | client queue p99 |", "--:|--:|"
	}
	content, contentSep := "", ""
	showContent := contentTTFT(res)
	if showContent {
		content, contentSep = " content TTFT p50 | content TTFT p99 |", "--:|--:|"
	}
	fmt.Fprintf(b, "| step | %s | achieved (req/s) | ok | failed | req/s | goodput (req/s) | keep-up | out tok/s |%s TTFT p50 | TTFT p99 |%s TPOT p50 | TPOT p99 | E2EL p99 | E2EL p99 from intended send | valid | note |\n", lvl, queue, content)
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|" + queueSep + "--:|--:|" + contentSep + "--:|--:|--:|--:|---|---|\n")
	knee := kneeStep(res)
	for i, st := range res.Steps {
		x := &st.Stats
		valid := "yes"
		if !st.InKnee() {
			valid = "**no**"
		}
		var notes []string
		if i == knee {
			notes = append(notes, "**knee**")
		}
		if st.InKnee() && res.Knee.MaxGoodput > 0 && x.RequestGoodput == res.Knee.MaxGoodput && st.Level == res.Knee.MaxGoodputLevel {
			notes = append(notes, "max goodput")
		}
		if isBurst(st) {
			notes = append(notes, "burst")
		}
		if n := searchNote(st); n != "" {
			notes = append(notes, n)
		}
		q := ""
		if queued(res) {
			q = fmt.Sprintf(" %s | %s |", p50(x.QueueTime), p99(x.QueueTime))
		}
		c := ""
		if showContent {
			c = fmt.Sprintf(" %s | %s |", p50(x.TTFTText), p99(x.TTFTText))
		}
		fmt.Fprintf(b, "| %s | %s | %s | %d | %d | %s | %s | %s | %s |%s %s | %s |%s %s | %s | %s | %s | %s | %s |\n",
			stepName(st), num(st.Level), num(x.AchievedRate), x.Completed, x.Failed,
			num(x.RequestThroughput), goodputText(res, x.RequestGoodput), keepUp(st), num(x.OutputThroughput), q,
			p50(x.TTFT), p99(x.TTFT), c, p50(x.TPOT), p99(x.TPOT), p99(x.E2EL), p99(x.E2ELFromScheduled), valid, strings.Join(notes, ", "))
	}
	b.WriteString("\nLatencies in ms. A p99 marked * rests on fewer than 100 samples (see Latency detail for its confidence interval). " +
		"Goodput is vllm bench serve's request_goodput (good requests per second of the step, drain included); keep-up is the knee's " +
		"criterion, shown capped at 100 %: ")
	if closed(res) {
		b.WriteString("in a closed loop, the good share of the completed requests; a level keeps up at 90 % or more.")
	} else {
		b.WriteString(KeepUpSentence)
	}
	if !sloSet(res) {
		b.WriteString(" No SLO was set (--goodput), so no goodput is shown (" + noGoodput + "; result.json's request_goodput is null).")
	}
	if showContent {
		b.WriteString(" Content TTFT is the time to the first event with text, over the requests that had text only (an answer that was " +
			"only a tool call has none; its n is in Latency detail): it differs from the TTFT (to the first event, e.g. chat's role chunk) " +
			"by more than " + pct(contentTTFTDiffers) + ", or rests on fewer requests, in some step, and TPOT and ITL include that wait.")
	}
	b.WriteString(" E2EL from intended send is the E2E latency measured from the time the schedule meant to send the request, " +
		"so a late send (and any wait for a concurrency slot) counts: the coordinated-omission-corrected latency.")
	if queued(res) {
		b.WriteString(" Client queue is the wait for one of the --max-concurrency slots, not included in TTFT or E2EL.")
	}
	b.WriteString("\n\n")
}

// stepName names a step in tables: its index, with the round when > 1 and
// the attempt when the level was rerun.
func stepName(st *sweep.Step) string {
	var extra []string
	if st.Round > 1 {
		extra = append(extra, fmt.Sprintf("round %d", st.Round))
	}
	if st.Attempt > 1 {
		extra = append(extra, fmt.Sprintf("rerun %d", st.Attempt-1))
	}
	if len(extra) == 0 {
		return fmt.Sprint(st.Index)
	}
	return fmt.Sprintf("%d (%s)", st.Index, strings.Join(extra, ", "))
}

// p99 formats a p99, starred when unreliable.
func p99(x sweep.Latency) string {
	if x.N == 0 {
		return "-"
	}
	if !x.P99Reliable {
		return num(x.P99) + "*"
	}
	return num(x.P99)
}

func writeKnee(b *bytes.Buffer, res *sweep.Result) {
	k := res.Knee
	b.WriteString("### Knee and capacity\n\n")
	fmt.Fprintf(b, "- Knee: %s.\n", kneeLine(res))
	switch t := k.Interval.Text(kneeUnit(res)); {
	case t != "":
		fmt.Fprintf(b, "- Uncertainty: %s.\n", t)
	case k.Found:
		b.WriteString("- Uncertainty: not-recorded (the steps around the knee kept no per-request samples for the bootstrap, or the result was written before it was computed).\n")
	}
	if hasValid(res) && k.MaxGoodputLevel != 0 {
		if sloSet(res) {
			fmt.Fprintf(b, "- Max goodput (vLLM's request_goodput): **%s req/s** at %s.\n", num(k.MaxGoodput), levelText(res, k.MaxGoodputLevel))
		} else {
			fmt.Fprintf(b, "- Max goodput: %s (no SLO set); max throughput of successful requests **%s req/s** at %s.\n", noGoodput, num(k.MaxGoodput), levelText(res, k.MaxGoodputLevel))
		}
	}
	if closed(res) {
		fmt.Fprintf(b, "- Rule: a level keeps up when it is valid, at least %s of its completed requests were good", pct(ratio))
	} else {
		fmt.Fprintf(b, "- Rule: a level keeps up when it is valid and its keep-up is at least %s: the fraction of its requests that "+
			"were good, times its arrival window over the time the server needed to finish them (less one unloaded request's "+
			"latency). A server that keeps up finishes about one request latency after the last arrival; an overloaded one "+
			"pays its whole backlog, so keep-up falls to about capacity / rate", pct(ratio))
	}
	if sloSet(res) {
		fmt.Fprintf(b, "; and its SLO p99s hold (%s)", sloText(res))
	}
	b.WriteString(".\n")
	if k.Reason != "" {
		fmt.Fprintf(b, "- Decision: %s.\n", k.Reason)
	}
	if k.Stop != "" {
		fmt.Fprintf(b, "- The adaptive search stopped early: %s.\n", k.Stop)
	}
	b.WriteString("\n")
	writeProbe(b, res)
	fmt.Fprintf(b, "![goodput, throughput and keep-up vs %s](%s)\n\n", xName(res), artifacts.GoodputPlotFile)
	fmt.Fprintf(b, "![TTFT and TPOT percentiles vs %s](%s)\n\n", xName(res), artifacts.LatencyPlotFile)
	for _, st := range res.Steps {
		if isBurst(st) && !closed(res) {
			b.WriteString("Burst steps (rate inf) have no offered rate and are not drawn in the plots.\n\n")
			break
		}
	}
}

// writeProbe describes the throughput probe that chose the search's first
// rate.
func writeProbe(b *bytes.Buffer, res *sweep.Result) {
	p := res.Probe
	if p == nil {
		return
	}
	b.WriteString("#### Throughput probe\n\n")
	if p.EstimateReqPerS > 0 {
		fmt.Fprintf(b, "Before the search, closed loops of growing concurrency estimated the capacity at **%s req/s** (%s); "+
			"the search started at %s and stepped up or down from there to bracket the knee. ", num(p.EstimateReqPerS), p.Note, levelText(res, p.StartRate))
	} else {
		fmt.Fprintf(b, "The closed-loop throughput probe gave no estimate (%s); the search started at %s. ", p.Note, levelText(res, p.StartRate))
	}
	b.WriteString("Probe requests are not steps: they are not in records.jsonl, the tables or the knee.\n\n")
	b.WriteString("| concurrency | completed | failed | req/s | mean E2EL (ms) | server max waiting |\n|--:|--:|--:|--:|--:|--:|\n")
	for _, l := range p.Levels {
		fmt.Fprintf(b, "| %d | %d | %d | %s | %s | %s |\n", l.Concurrency, l.Completed, l.Failed, num(l.ThroughputReqPerS), num(l.MeanE2ELMS), val(l.MaxWaiting))
	}
	b.WriteString("\n")
}

// xName is the x axis of the plots.
func xName(res *sweep.Result) string {
	if closed(res) {
		return "concurrency"
	}
	return "offered rate"
}
