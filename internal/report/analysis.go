package report

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/prober/fingerprint"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// Analysis renders analysis.md of res in the sections of
// docs/templates/experiment-report.md (Sections): the decision and SLO with
// a one-line answer, the run's fingerprint, the workload distributions
// (workloadSections), the results (the per-step table with the knee marked,
// with --rounds the spread of each level over its rounds, the knee with its
// uncertainty and the plots, the cost with --cost-per-hour, latency detail,
// errors, server-side deltas), the validity checks, the conclusion limited
// to this environment and workload, the rollback condition and the
// evidence still missing. It never fails: missing data is shown as
// "not-recorded" or "-".
func Analysis(res *sweep.Result) []byte {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	if res.Name == "" || res.Name == "sweep" {
		p("# llmprobe sweep\n\n")
	} else {
		p("# llmprobe sweep: %s\n\n", res.Name)
	}
	writeDecision(&b, res)
	writeRun(&b, res)
	writeWorkload(&b, res)
	heading(&b, SectionResults)
	writeSteps(&b, res)
	writeMultiTurn(&b, res)
	writeTrace(&b, res)
	writeSpread(&b, res)
	writeKnee(&b, res)
	writeCost(&b, res)
	writeLatency(&b, res)
	writeErrors(&b, res)
	writeServer(&b, res)
	writeValidity(&b, res)
	writeConclusion(&b, res)
	writeRollback(&b, res)
	writeNotRecorded(&b, res)
	return b.Bytes()
}

// kneeStep returns the index into res.Steps of the step at the knee level
// (the last valid one at that level), or -1 when no knee was found.
func kneeStep(res *sweep.Result) int {
	if !res.Knee.Found || res.Knee.Level <= 0 {
		return -1
	}
	idx := -1
	for i, st := range res.Steps {
		if st.InKnee() && st.Level == res.Knee.Level {
			idx = i
		}
	}
	return idx
}

// whyFails lists why a step does not keep up (empty when it does).
func whyFails(st *sweep.Step) []string {
	var out []string
	x := &st.Stats
	if !st.InKnee() {
		inv := invalidReasons(st)
		if len(inv) == 0 {
			out = append(out, "invalid")
		}
		for _, r := range inv {
			out = append(out, "invalid: "+r)
		}
	}
	for _, c := range x.SLOChecks {
		if !c.Held {
			out = append(out, fmt.Sprintf("%s p99 %s ms > %s ms", strings.ToUpper(c.Metric), num(c.P99MS), num(c.ThresholdMS)))
		}
	}
	if !isBurst(st) && x.GoodputRatio < ratio {
		g := "goodput " + num(x.RequestGoodput)
		if len(x.SLOChecks) == 0 {
			g = "served " + num(x.RequestThroughput)
		}
		out = append(out, fmt.Sprintf("keep-up %s (needs %s; %s req/s)", pct(math.Min(x.GoodputRatio, 1)), pct(ratio), g))
	} else if !isBurst(st) && st.Mode != sweep.ModeClosed && x.RequestThroughput > 0 && x.RequestThroughput < ratio*st.Level {
		out = append(out, fmt.Sprintf("served %s req/s, below %s of the rate", num(x.RequestThroughput), pct(ratio)))
	}
	return out
}

// invalidLevels returns the distinct levels above min (all levels when min
// is 0) at which no step was valid, sorted; burst steps are left out (they
// are never in the knee).
func invalidAbove(res *sweep.Result, min float64) []float64 {
	valid := map[float64]bool{}
	var out []float64
	for _, st := range res.Steps {
		if st.InKnee() {
			valid[st.Level] = true
		}
	}
	for _, st := range res.Steps {
		l := st.Level
		if st.InKnee() || valid[l] || l <= min || math.IsInf(l, 1) || slices.Contains(out, l) {
			continue
		}
		out = append(out, l)
	}
	slices.Sort(out)
	return out
}

// levelList names levels with the validity flags of their last step:
// "8 req/s (client-saturated: send-lag p99 12 ms > 10 ms)".
func levelList(res *sweep.Result, levels []float64) string {
	parts := make([]string, 0, len(levels))
	for _, l := range levels {
		var last *sweep.Step
		for _, st := range res.Steps {
			if st.Level == l {
				last = st
			}
		}
		why := "invalid"
		if last != nil {
			if inv := invalidReasons(last); len(inv) > 0 {
				why = strings.Join(inv, "; ")
			}
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", levelText(res, l), why))
	}
	return strings.Join(parts, ", ")
}

// sloText describes the SLO thresholds: "TTFT p99 <= 800 ms, TPOT p99 <= 50 ms".
func sloText(res *sweep.Result) string {
	ttft, tpot, e2el := res.SLOThresholds()
	var parts []string
	for _, t := range []struct {
		name string
		v    float64
	}{{"TTFT", ttft}, {"TPOT", tpot}, {"E2EL", e2el}} {
		if t.v > 0 {
			parts = append(parts, fmt.Sprintf("%s <= %s ms", t.name, num(t.v)))
		}
	}
	if len(parts) == 0 {
		return "none set (every successful request counts as good)"
	}
	return strings.Join(parts, ", ")
}

// verdict returns the verdict paragraphs in plain words.
func verdict(res *sweep.Result) []string {
	var out []string
	if !res.Complete {
		reason := res.InterruptedReason
		if reason == "" {
			reason = fingerprint.NotRecorded
		}
		out = append(out, fmt.Sprintf("**This sweep did not complete** (%s). Only the steps that ran are reported; "+
			"the conclusions below rest on them alone.", reason))
	}
	if len(res.Steps) == 0 {
		return append(out, "No step ran, so there is nothing to conclude.")
	}
	invalid := 0
	for _, st := range res.Steps {
		if !st.InKnee() {
			invalid++
		}
	}
	rule := fmt.Sprintf("keep-up of at least %s", pct(ratio))
	if closed(res) {
		rule = fmt.Sprintf("at least %s of the completed requests good", pct(ratio))
	}
	if sloSet(res) {
		rule += " and every SLO p99 within its threshold (" + sloText(res) + ")"
	}
	k := res.Knee
	switch {
	case k.Found:
		v := fmt.Sprintf("**Capacity knee: %s** (%s). Under this workload the endpoint keeps up to %s: %s.",
			levelText(res, k.Level), bracketText(k), levelText(res, k.Level), rule)
		if t := k.Interval.Text(kneeUnit(res)); t != "" {
			v += " The knee's uncertainty: " + t + "."
		}
		if !closed(res) {
			v += " " + KeepUpSentence
		}
		if up := firstAt(res, k.Upper); up >= 0 {
			if why := whyFails(res.Steps[up]); len(why) > 0 {
				v += fmt.Sprintf(" At %s it no longer does: %s.", levelText(res, k.Upper), strings.Join(why, "; "))
			}
			v += " " + boundText(res.Steps[up])
		}
		out = append(out, v)
	case k.Low > 0 && k.Upper > 0:
		out = append(out, fmt.Sprintf("**No knee stated** (%s): %s. The knee is somewhere in that bracket; "+
			"run the sweep again with a larger step budget or longer steps to state it.", bracketText(k), k.Reason))
	case k.Low > 0:
		if inv := invalidAbove(res, k.Low); len(inv) > 0 {
			out = append(out, fmt.Sprintf("**No knee found.** Every valid level kept up, up to %s; the higher %s, "+
				"which says nothing about the server, so the knee is at least %s but was not located.",
				levelText(res, k.Low), invalidPhrase(res, inv), levelText(res, k.Low)))
		} else {
			out = append(out, fmt.Sprintf("**No knee found: the endpoint kept up at every level tried, up to %s.** "+
				"The knee is above that; run higher levels to find it.", levelText(res, k.Low)))
		}
	case invalid == len(res.Steps):
		out = append(out, "**No knee can be decided: every step is invalid** (see Validity checks). Fix the cause and run again.")
	default:
		v := "**No knee found: no level tried kept up**"
		if k.Upper > 0 {
			v += fmt.Sprintf(", not even %s", levelText(res, k.Upper))
			if i := firstAt(res, k.Upper); i >= 0 {
				if why := whyFails(res.Steps[i]); len(why) > 0 {
					v += " (" + strings.Join(why, "; ") + ")"
				}
			}
		}
		out = append(out, v+". The knee is below the lowest level; run lower levels or check the SLO.")
	}
	if k.Stop != "" {
		out = append(out, "The adaptive search stopped early: "+k.Stop+".")
	}
	if c := res.ReferenceCapacity; c > 0 && k.Low > 0 && !closed(res) {
		out = append(out, fmt.Sprintf("The built-in simulator's capacity for this workload, from its parameters, is %s req/s: the knee is %s of it.",
			num(c), pct(k.Low/c)))
	}
	if hasValid(res) && k.MaxGoodputLevel != 0 {
		if sloSet(res) {
			out = append(out, fmt.Sprintf("The highest goodput measured (vLLM's request_goodput) was **%s req/s**, at %s.", num(k.MaxGoodput), levelText(res, k.MaxGoodputLevel)))
		} else {
			out = append(out, fmt.Sprintf("No SLO was set (--goodput), so there is no goodput; the highest throughput of successful requests was **%s req/s**, at %s.",
				num(k.MaxGoodput), levelText(res, k.MaxGoodputLevel)))
		}
	}
	if k.NonMonotonic {
		out = append(out, "A level above the first failing one passed again: the curve is noisy. Repeat with more rounds (--rounds) before trusting the knee.")
	}
	if invalid > 0 && invalid < len(res.Steps) {
		v := fmt.Sprintf("%d of %d steps are invalid and were left out of the knee (see Validity checks)", invalid, len(res.Steps))
		if inv := invalidAbove(res, 0); len(inv) > 0 && k.Found {
			v += ": " + levelList(res, inv)
		}
		out = append(out, v+".")
	}
	if k.Reason != "" {
		out = append(out, "Knee rule: "+k.Reason+".")
	}
	return out
}

// boundText says what limits the knee, from the first failing step: an SLO
// p99 (latency-bound) or keep-up alone (throughput-bound).
func boundText(up *sweep.Step) string {
	var broke []string
	for _, c := range up.Stats.SLOChecks {
		if !c.Held {
			broke = append(broke, strings.ToUpper(c.Metric))
		}
	}
	if len(broke) > 0 {
		return fmt.Sprintf("The knee is **latency-bound** (%s p99): the first failing level broke its SLO.", strings.Join(broke, ", "))
	}
	return "The knee is **throughput-bound**: the first failing level held its SLO p99s but did not keep up with the offered rate."
}

// invalidPhrase is "level L (why) was invalid" or "levels L1 (why), L2
// (why) were invalid".
func invalidPhrase(res *sweep.Result, levels []float64) string {
	if len(levels) == 1 {
		return "level " + levelList(res, levels) + " was invalid"
	}
	return "levels " + levelList(res, levels) + " were invalid"
}

// firstAt returns the index of the first valid step at level v, else the
// first step at v, else -1.
func firstAt(res *sweep.Result, v float64) int {
	fallback := -1
	for i, st := range res.Steps {
		if st.Level != v {
			continue
		}
		if st.InKnee() {
			return i
		}
		if fallback < 0 {
			fallback = i
		}
	}
	return fallback
}

func writeRun(b *bytes.Buffer, res *sweep.Result) {
	fp := res.Fingerprint
	row := func(k, v string) { fmt.Fprintf(b, "| %s | %s |\n", k, mdCell(v)) }
	heading(b, SectionFingerprint)
	b.WriteString("| field | value |\n|---|---|\n")
	row("llmprobe", fmt.Sprintf("%s (revision %s, %s)", fp.Tool.Version, fp.Tool.Revision, fp.Tool.GoVersion))
	cmd := fingerprint.NotRecorded
	if len(fp.Command) > 0 {
		cmd = "`" + fingerprint.ShellJoin(fp.Command) + "`"
	}
	row("command", cmd)
	t := fp.Target
	row("target", fmt.Sprintf("%s (API %s)", t.URL, t.API))
	row("model", fmt.Sprintf("%s (served %s, root %s, max_model_len %s)", t.Model, t.ServedModel, t.Root, t.MaxModelLen))
	row("server version", t.ServerVersion)
	ec := fingerprint.NotRecorded
	if t.EngineConfig != nil {
		keys := make([]string, 0, len(t.EngineConfig))
		for k := range t.EngineConfig {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, 0, len(keys))
		for _, k := range keys {
			parts = append(parts, k+"="+t.EngineConfig[k])
		}
		ec = strings.Join(parts, ", ")
	}
	row("engine config", ec)
	row("tokenizer", t.Tokenizer)
	row("server metrics", t.MetricsURL)
	row("workload", fmt.Sprintf("sha256 %s (from %s)", fp.Workload.SHA256, fp.Workload.Source))
	l := fp.Load
	load := fmt.Sprintf("mode %s", l.Mode)
	if l.Arrival != "" {
		load += fmt.Sprintf(", arrival %s", l.Arrival)
	}
	if l.Burstiness > 0 {
		load += fmt.Sprintf(", burstiness %s", num(l.Burstiness))
	}
	if len(l.Rates) > 0 {
		load += ", rates " + strings.Join(l.Rates, ",")
	}
	if len(l.Concurrency) > 0 {
		cs := make([]string, len(l.Concurrency))
		for i, c := range l.Concurrency {
			cs[i] = fmt.Sprint(c)
		}
		load += ", concurrency " + strings.Join(cs, ",")
	}
	if l.MaxConcurrency > 0 {
		load += fmt.Sprintf(", max concurrency %d", l.MaxConcurrency)
	}
	if l.NumPrompts > 0 {
		load += fmt.Sprintf(", %d prompts per step", l.NumPrompts)
	}
	if l.Duration != "" {
		load += ", " + l.Duration + " per step"
	}
	load += fmt.Sprintf(", %d warmups, seed %d", l.Warmups, l.Seed)
	if l.Rounds > 1 {
		load += fmt.Sprintf(", %d rounds", l.Rounds)
	}
	row("load", load)
	row("SLO", sloText(res))
	c := fp.Client
	row("client", fmt.Sprintf("%s: %s, %d cores, %s %s/%s", c.Hostname, c.CPUModel, c.Cores, c.GoVersion, c.OS, c.Arch))
	row("start / end (UTC)", utc(fp.Start)+" / "+utc(fp.End))
	complete := "yes"
	if !res.Complete {
		complete = "no: " + res.InterruptedReason
	}
	row("complete", complete)
	b.WriteString("\n")
}

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
			num(x.TTFT.P50), p99(x.TTFT), c, num(x.TPOT.P50), p99(x.TPOT), p99(x.E2EL), p99(x.E2ELFromScheduled), valid, strings.Join(notes, ", "))
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
		b.WriteString(" Content TTFT is the time to the first event with text: it differs from the TTFT (to the first event, e.g. chat's role chunk) " +
			"by more than " + pct(contentTTFTDiffers) + " in some step, and TPOT and ITL include that wait.")
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

func writeValidity(b *bytes.Buffer, res *sweep.Result) {
	heading(b, SectionValidity)
	b.WriteString("A step is invalid when the client could not keep its schedule (client-saturated), the server was not " +
		"proven idle before it (not-idle), its error rate was too high (errors), or it was cut short (interrupted). " +
		"Invalid steps are kept in every table and left out of the knee.")
	for _, st := range res.Steps {
		if slices.Contains(st.Validity.Flags, sweep.FlagUnintendedPrefixCache) {
			b.WriteString(" A step is also invalid when the server's own prefix-cache hits show more reuse than the shared " +
				"prefix explains (unintended-prefix-cache): its prompts met a cache they were not meant to, so its TTFT " +
				"measured cached prefills.")
			break
		}
	}
	b.WriteString("\n\n")
	if len(res.Steps) == 0 {
		return
	}
	b.WriteString("| step | valid | why not | idle proof | send-lag p99 (ms) |\n|---|---|---|---|--:|\n")
	for _, st := range res.Steps {
		valid, why := "yes", "-"
		if !st.InKnee() {
			valid = "**no**"
			why = strings.Join(invalidReasons(st), "; ")
			if why == "" {
				why = "not given"
			}
		}
		proof := st.Validity.Idle
		idle := proof.Status
		if idle == "" {
			idle = fingerprint.NotRecorded
		}
		if d := idleDetail(proof); d != "" {
			idle += ": " + d
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", stepName(st), valid, mdCell(why), mdCell(idle), p99(st.Stats.SendLag))
	}
	b.WriteString("\n")
}

func writeLatency(b *bytes.Buffer, res *sweep.Result) {
	b.WriteString("### Latency detail (ms)\n\n")
	if len(res.Steps) == 0 {
		return
	}
	type metric struct {
		name string
		get  func(*sweep.Step) sweep.Latency
	}
	metrics := []metric{{"TTFT", func(st *sweep.Step) sweep.Latency { return st.Stats.TTFT }}}
	if contentTTFT(res) {
		metrics = append(metrics, metric{"Content TTFT (to the first text)", func(st *sweep.Step) sweep.Latency { return st.Stats.TTFTText }})
	}
	metrics = append(metrics,
		metric{"TPOT", func(st *sweep.Step) sweep.Latency { return st.Stats.TPOT }},
		metric{"ITL", func(st *sweep.Step) sweep.Latency { return st.Stats.ITL }},
		metric{"E2EL", func(st *sweep.Step) sweep.Latency { return st.Stats.E2EL }},
		metric{"E2EL from the intended send time (coordinated-omission corrected)", func(st *sweep.Step) sweep.Latency { return st.Stats.E2ELFromScheduled }},
	)
	if queued(res) {
		metrics = append(metrics, metric{"Client queue time (wait for a --max-concurrency slot)", func(st *sweep.Step) sweep.Latency { return st.Stats.QueueTime }})
	}
	for _, m := range metrics {
		fmt.Fprintf(b, "#### %s\n\n| step | n | mean | median | std | p50 | p90 | p99 |\n|---|--:|--:|--:|--:|--:|--:|--:|\n", m.name)
		for _, st := range res.Steps {
			x := m.get(st)
			if x.N == 0 {
				fmt.Fprintf(b, "| %s | 0 | - | - | - | - | - | - |\n", stepName(st))
				continue
			}
			p := p99(x)
			if ci := x.P99CI; !x.P99Reliable && ci != nil && (ci.Lo != 0 || ci.Hi != 0) {
				p += fmt.Sprintf(" (95%% CI %s–%s)", num(ci.Lo), num(ci.Hi))
			}
			fmt.Fprintf(b, "| %s | %d | %s | %s | %s | %s | %s | %s |\n", stepName(st), x.N,
				num(x.Mean), num(x.Median), num(x.Std), num(x.P50), num(x.P90), p)
		}
		b.WriteString("\n")
	}
}

func writeErrors(b *bytes.Buffer, res *sweep.Result) {
	failed := 0
	for _, st := range res.Steps {
		failed += st.Stats.Failed
	}
	b.WriteString("### Errors\n\n")
	if failed == 0 {
		b.WriteString("No request failed.\n\n")
		return
	}
	b.WriteString("| step | failed | error rate | by class |\n|---|--:|--:|---|\n")
	for _, st := range res.Steps {
		x := &st.Stats
		rate := "-"
		if n := x.Completed + x.Failed; n > 0 {
			rate = pct(float64(x.Failed) / float64(n))
		}
		fmt.Fprintf(b, "| %s | %d | %s | %s |\n", stepName(st), x.Failed, rate, counts(x.FailedByClass))
	}
	fmt.Fprintf(b, "\nSamples of the errors, with secrets removed, are in %s.\n\n", artifacts.ErrorsFile)
}

func writeTokens(b *bytes.Buffer, res *sweep.Result) {
	b.WriteString("### Token distributions\n\n")
	if len(res.Steps) == 0 {
		return
	}
	distinct := false
	for _, st := range res.Steps {
		distinct = distinct || st.DistinctPrompts > 0
	}
	b.WriteString("Input and requested output over all requests, actual output over successful ones; p10 / p50 / p90 / p99 / max.")
	writeDatasetNote(b, res)
	if distinct {
		b.WriteString(" Distinct prompts: how many of the step's requests had a prompt of their own (each request's nonce " +
			"follows the shared prefix, so only inputs too short for a full nonce can repeat).")
	}
	b.WriteString("\n\n")
	if distinct {
		b.WriteString("| step | input | requested output | actual output | finish reasons | distinct prompts |\n|---|---|---|---|---|--:|\n")
	} else {
		b.WriteString("| step | input | requested output | actual output | finish reasons |\n|---|---|---|---|---|\n")
	}
	d := func(t sweep.TokenDist) string {
		if t.N == 0 {
			return "-"
		}
		return fmt.Sprintf("%s / %s / %s / %s / %s", num(t.P10), num(t.P50), num(t.P90), num(t.P99), num(t.Max))
	}
	if ds := res.Dataset; ds != nil {
		fmt.Fprintf(b, "| dataset (%d entries, %s) | %s | %s | - | - |", ds.Used, ds.Method, lengthDist(ds.InputTokens),
			lengthDist(ds.OutputTokens))
		if distinct {
			b.WriteString(" - |")
		}
		b.WriteString("\n")
	}
	for _, st := range res.Steps {
		x := &st.Stats
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |", stepName(st), d(x.InputTokens), d(x.RequestedOutputTokens),
			d(x.OutputTokens), counts(x.FinishReasons))
		if distinct {
			fmt.Fprintf(b, " %d of %d |", st.DistinctPrompts, x.Requests)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

func writeServer(b *bytes.Buffer, res *sweep.Result) {
	b.WriteString("### Server side (from /metrics)\n\n")
	if len(res.Steps) == 0 {
		return
	}
	recorded := false
	for _, st := range res.Steps {
		recorded = recorded || st.Server.Recorded()
	}
	if !recorded {
		b.WriteString("**not-recorded**: no step has usable server metrics")
		if r := res.Steps[0].Server.Reason; r != "" {
			fmt.Fprintf(b, " (%s)", r)
		}
		b.WriteString(". Idle proofs and server-side deltas need the target's Prometheus /metrics " +
			"(vLLM's vllm:* metrics, or the engine's own: docs/engines.md); client-side figures above are unaffected.\n\n")
		return
	}
	b.WriteString("Counter deltas over each step, maxima during it, and server-side latencies (ms) from histogram deltas " +
		"(quantiles as Prometheus' histogram_quantile interpolates them; \"≤ X\" where the quantile falls into the first bucket, " +
		"whose interpolation from 0 says nothing). Client − server TTFT is the exact difference of the means: the network and " +
		"front-end share.\n\n")
	b.WriteString("| step | prompt tok | gen tok | preemptions | prefix hit warmup | prefix hit measured | max running | max waiting | max KV | server TTFT p50 / p99 | server ITL p99 | server E2EL p99 | server queue mean / p99 | client − server TTFT (mean) |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	var reasons []string
	for _, st := range res.Steps {
		sv := st.Server
		if !sv.Recorded() {
			r := sv.Reason
			if r == "" {
				r = "no reason given"
			}
			reasons = append(reasons, fmt.Sprintf("step %s: %s", stepName(st), r))
			fmt.Fprintf(b, "| %s | not-recorded | | | | | | | | | | | | |\n", stepName(st))
			continue
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s | %s | %s | %s / %s | %s |\n", stepName(st),
			val(sv.PromptTokens), val(sv.GenerationTokens), val(sv.Preemptions),
			valPct(sv.WarmupPrefixCacheHitRate), valPct(sv.PrefixCacheHitRate),
			val(sv.MaxRunning), val(sv.MaxWaiting), valPct(sv.MaxKVCacheUsage),
			quantile(sv.TTFT, sv.TTFT.P50MS, 0.5), quantile(sv.TTFT, sv.TTFT.P99MS, 0.99), quantile(sv.ITL, sv.ITL.P99MS, 0.99),
			quantile(sv.E2EL, sv.E2EL.P99MS, 0.99), val(sv.QueueTime.MeanMS), quantile(sv.QueueTime, sv.QueueTime.P99MS, 0.99),
			val(sv.ClientMinusServerTTFTMeanMS))
	}
	b.WriteString("\n")
	for _, r := range reasons {
		fmt.Fprintf(b, "- %s\n", mdCell(r))
	}
	if len(reasons) > 0 {
		b.WriteString("\n")
	}
}

func writeNotRecorded(b *bytes.Buffer, res *sweep.Result) {
	heading(b, SectionMissing)
	if miss := missingEvidence(res); len(miss) > 0 {
		for _, m := range miss {
			fmt.Fprintf(b, "- %s\n", m)
		}
		b.WriteString("\n")
	} else {
		b.WriteString("None for this conclusion beyond what follows.\n\n")
	}
	b.WriteString("### Not recorded\n\n")
	b.WriteString("`not-recorded` means llmprobe tried to read the value and could not (the endpoint does not exist, " +
		"the server does not expose it, or the request failed). It is never a guess or a default; the value is unknown.\n\n")
	fields := notRecordedFields(res.Fingerprint)
	var idle []string
	for _, st := range res.Steps {
		if s := st.Validity.Idle.Status; s == "" || s == sweep.IdleNotRecorded {
			idle = append(idle, stepName(st))
		}
	}
	if len(fields) == 0 && len(idle) == 0 {
		b.WriteString("Every fingerprint field and idle proof was recorded.\n")
		return
	}
	if len(fields) > 0 {
		b.WriteString("Fingerprint fields not recorded (manifest.json):\n\n")
		for _, f := range fields {
			fmt.Fprintf(b, "- `%s`%s\n", f, explain(f))
		}
		b.WriteString("\n")
	}
	if len(idle) > 0 {
		fmt.Fprintf(b, "Idle proof not recorded before step(s) %s: the server's queue could not be read, so these steps "+
			"may have started with requests still in flight.\n", strings.Join(idle, ", "))
	}
}

// sloSet reports whether any SLO threshold is set.
func sloSet(res *sweep.Result) bool {
	ttft, tpot, e2el := res.SLOThresholds()
	return ttft > 0 || tpot > 0 || e2el > 0
}

// idleDetail says what an idle proof read, or why it read nothing.
func idleDetail(p sweep.IdleProof) string {
	switch p.Status {
	case sweep.IdleProven:
		return fmt.Sprintf("running + waiting read 0 after %.1f s", p.Waited)
	case sweep.IdleNotIdle:
		return fmt.Sprintf("running %s, waiting %s after %.1f s", trimFloat(p.Running), trimFloat(p.Waiting), p.Waited)
	}
	return p.Reason
}

func trimFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// explain says where a not-recorded fingerprint field would have come from.
func explain(field string) string {
	switch field {
	case "target.served_model", "target.root":
		return ": from GET /v1/models (vLLM lists root)"
	case "target.max_model_len", "target.max_model_len_source":
		return ": from GET /v1/models max_model_len, else the engine's own context length (docs/engines.md)"
	case "target.server_version":
		return ": from GET /version (vLLM only)"
	case "target.engine", "target.engine_source":
		return ": the server's engine was neither given (--engine) nor recognised, so none of its metrics was read"
	case "target.engine_config":
		return ": from the labels of vllm:cache_config_info on /metrics, or the engine's info endpoint"
	case "target.tokenizer":
		return ": neither the server's /tokenize nor a calibration was used"
	case "target.metrics_url":
		return ": no /metrics URL was scraped"
	case "llmprobe.version", "llmprobe.revision", "llmprobe.branch", "llmprobe.build_date":
		return ": not set at build time (-ldflags) and not in the Go build info"
	case "client.cpu_model":
		return ": /proc/cpuinfo names no model on this host"
	}
	return ""
}
