package report

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/fingerprint"
)

// Analysis renders analysis.md: the verdict, the run's fingerprint, the
// per-step table with the knee marked, with --rounds the spread of each
// level over its rounds, the knee and capacity with the plots,
// validity, latency detail, errors, token distributions, server-side deltas
// and what was not recorded and why. It never fails: missing data is shown
// as "not-recorded" or "-".
func Analysis(s Sweep) []byte {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	if s.Name == "" || s.Name == "sweep" {
		p("# llmprobe sweep\n\n")
	} else {
		p("# llmprobe sweep: %s\n\n", s.Name)
	}

	p("## Verdict\n\n")
	for _, para := range verdict(s) {
		p("%s\n\n", para)
	}
	for _, n := range s.Notes {
		p("> Note: %s\n\n", n)
	}

	writeRun(&b, s)
	writeSteps(&b, s)
	writeSpread(&b, s)
	writeKnee(&b, s)
	writeValidity(&b, s)
	writeLatency(&b, s)
	writeErrors(&b, s)
	writeTokens(&b, s)
	writeServer(&b, s)
	writeNotRecorded(&b, s)
	return b.Bytes()
}

// kneeStep returns the index into s.Steps of the step at the knee level (the
// last valid one at that level), or -1 when no knee was found.
func kneeStep(s Sweep) int {
	if !s.Knee.Found || s.Knee.Level <= 0 {
		return -1
	}
	idx := -1
	for i, st := range s.Steps {
		if st.Valid && st.Level(s.Mode) == s.Knee.Level {
			idx = i
		}
	}
	return idx
}

// whyFails lists why a step does not keep up (empty when it does).
func whyFails(s Sweep, st Step) []string {
	var out []string
	if !st.Valid {
		if len(st.Invalid) == 0 {
			out = append(out, "invalid")
		}
		for _, r := range st.Invalid {
			out = append(out, "invalid: "+r)
		}
	}
	for _, c := range st.SLOChecks {
		if !c.Held {
			out = append(out, fmt.Sprintf("%s p99 %s ms > %s ms", strings.ToUpper(c.Metric), num(c.P99MS), num(c.ThresholdMS)))
		}
	}
	if !math.IsInf(st.Rate, 1) && st.KeepUp < s.ratio() {
		out = append(out, fmt.Sprintf("keep-up %s (needs %s; goodput %s req/s)", pct(math.Min(st.KeepUp, 1)), pct(s.ratio()), num(st.Goodput)))
	}
	return out
}

// invalidLevels returns the distinct levels above min (all levels when min
// is 0) at which no step was valid, sorted; burst steps are left out (they
// are never in the knee).
func invalidAbove(s Sweep, min float64) []float64 {
	valid := map[float64]bool{}
	var out []float64
	for _, st := range s.Steps {
		if st.Valid {
			valid[st.Level(s.Mode)] = true
		}
	}
	for _, st := range s.Steps {
		l := st.Level(s.Mode)
		if st.Valid || valid[l] || l <= min || math.IsInf(l, 1) || slices.Contains(out, l) {
			continue
		}
		out = append(out, l)
	}
	slices.Sort(out)
	return out
}

// levelList names levels with the validity flags of their last step:
// "8 req/s (client-saturated: send-lag p99 12 ms > 10 ms)".
func levelList(s Sweep, levels []float64) string {
	parts := make([]string, 0, len(levels))
	for _, l := range levels {
		var last *Step
		for i := range s.Steps {
			if s.Steps[i].Level(s.Mode) == l {
				last = &s.Steps[i]
			}
		}
		why := "invalid"
		if last != nil && len(last.Invalid) > 0 {
			why = strings.Join(last.Invalid, "; ")
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", s.levelText(l), why))
	}
	return strings.Join(parts, ", ")
}

// sloText describes the SLO thresholds: "TTFT p99 <= 800 ms, TPOT p99 <= 50 ms".
func sloText(slo SLO) string {
	var parts []string
	for _, t := range []struct {
		name string
		v    float64
	}{{"TTFT", slo.TTFTMS}, {"TPOT", slo.TPOTMS}, {"E2EL", slo.E2ELMS}} {
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
func verdict(s Sweep) []string {
	var out []string
	if !s.Complete {
		reason := s.InterruptedReason
		if reason == "" {
			reason = fingerprint.NotRecorded
		}
		out = append(out, fmt.Sprintf("**This sweep did not complete** (%s). Only the steps that ran are reported; "+
			"the conclusions below rest on them alone.", reason))
	}
	if len(s.Steps) == 0 {
		return append(out, "No step ran, so there is nothing to conclude.")
	}
	invalid := 0
	for _, st := range s.Steps {
		if !st.Valid {
			invalid++
		}
	}
	rule := fmt.Sprintf("keep-up of at least %s (see Knee and capacity)", pct(s.ratio()))
	if s.closed() {
		rule = fmt.Sprintf("at least %s of the completed requests good", pct(s.ratio()))
	}
	if s.SLO.Set() {
		rule += " and every SLO p99 within its threshold (" + sloText(s.SLO) + ")"
	}
	k := s.Knee
	switch {
	case k.Found:
		v := fmt.Sprintf("**Capacity knee: %s.** Under this workload the endpoint keeps up to %s: %s.",
			s.levelText(k.Level), s.levelText(k.Level), rule)
		if up := firstAt(s, k.Upper); up >= 0 {
			if why := whyFails(s, s.Steps[up]); len(why) > 0 {
				v += fmt.Sprintf(" At %s it no longer does: %s.", s.levelText(k.Upper), strings.Join(why, "; "))
			}
			v += " " + boundText(s.Steps[up])
		}
		out = append(out, v)
	case k.Level > 0:
		if inv := invalidAbove(s, k.Level); len(inv) > 0 {
			out = append(out, fmt.Sprintf("**No knee found.** Every valid level kept up, up to %s; the higher %s, "+
				"which says nothing about the server, so the knee is at least %s but was not located.",
				s.levelText(k.Level), invalidPhrase(s, inv), s.levelText(k.Level)))
		} else {
			out = append(out, fmt.Sprintf("**No knee found: the endpoint kept up at every level tried, up to %s.** "+
				"The knee is above that; run higher levels to find it.", s.levelText(k.Level)))
		}
	case invalid == len(s.Steps):
		out = append(out, "**No knee can be decided: every step is invalid** (see Validity). Fix the cause and run again.")
	default:
		v := "**No knee found: no level tried kept up**"
		if k.Upper > 0 {
			v += fmt.Sprintf(", not even %s", s.levelText(k.Upper))
			if i := firstAt(s, k.Upper); i >= 0 {
				if why := whyFails(s, s.Steps[i]); len(why) > 0 {
					v += " (" + strings.Join(why, "; ") + ")"
				}
			}
		}
		out = append(out, v+". The knee is below the lowest level; run lower levels or check the SLO.")
	}
	if k.Stop != "" {
		out = append(out, "The adaptive search stopped early: "+k.Stop+".")
	}
	if c := s.ReferenceCapacity; c > 0 && k.Level > 0 && !s.closed() {
		out = append(out, fmt.Sprintf("The built-in simulator's capacity for this workload, from its parameters, is %s req/s: the knee is %s of it.",
			num(c), pct(k.Level/c)))
	}
	if s.hasValid() && k.MaxGoodputLevel != 0 {
		out = append(out, fmt.Sprintf("The highest goodput measured (vLLM's request_goodput) was **%s req/s**, at %s.", num(k.MaxGoodput), s.levelText(k.MaxGoodputLevel)))
	}
	if k.NonMonotonic {
		out = append(out, "A level above the first failing one passed again: the curve is noisy. Repeat with more rounds (--rounds) before trusting the knee.")
	}
	if invalid > 0 && invalid < len(s.Steps) {
		v := fmt.Sprintf("%d of %d steps are invalid and were left out of the knee (see Validity)", invalid, len(s.Steps))
		if inv := invalidAbove(s, 0); len(inv) > 0 && k.Found {
			v += ": " + levelList(s, inv)
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
func boundText(up Step) string {
	var broke []string
	for _, c := range up.SLOChecks {
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
func invalidPhrase(s Sweep, levels []float64) string {
	if len(levels) == 1 {
		return "level " + levelList(s, levels) + " was invalid"
	}
	return "levels " + levelList(s, levels) + " were invalid"
}

// firstAt returns the index of the first valid step at level v, else the
// first step at v, else -1.
func firstAt(s Sweep, v float64) int {
	fallback := -1
	for i, st := range s.Steps {
		if st.Level(s.Mode) != v {
			continue
		}
		if st.Valid {
			return i
		}
		if fallback < 0 {
			fallback = i
		}
	}
	return fallback
}

func writeRun(b *bytes.Buffer, s Sweep) {
	fp := s.Fingerprint
	row := func(k, v string) { fmt.Fprintf(b, "| %s | %s |\n", k, mdCell(v)) }
	b.WriteString("## Run\n\n| field | value |\n|---|---|\n")
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
	row("SLO", sloText(s.SLO))
	c := fp.Client
	row("client", fmt.Sprintf("%s: %s, %d cores, %s %s/%s", c.Hostname, c.CPUModel, c.Cores, c.GoVersion, c.OS, c.Arch))
	row("start / end (UTC)", utc(fp.Start)+" / "+utc(fp.End))
	complete := "yes"
	if !s.Complete {
		complete = "no: " + s.InterruptedReason
	}
	row("complete", complete)
	b.WriteString("\n")
}

func writeSteps(b *bytes.Buffer, s Sweep) {
	b.WriteString("## Steps\n\n")
	if len(s.Steps) == 0 {
		b.WriteString("No step ran.\n\n")
		return
	}
	lvl := "rate (req/s)"
	if s.closed() {
		lvl = "concurrency"
	}
	queue := ""
	queueSep := ""
	if s.queued() {
		queue, queueSep = " client queue p50 | client queue p99 |", "--:|--:|"
	}
	fmt.Fprintf(b, "| step | %s | achieved (req/s) | ok | failed | req/s | goodput (req/s) | keep-up | out tok/s |%s TTFT p50 | TTFT p99 | TPOT p50 | TPOT p99 | E2EL p99 | valid | note |\n", lvl, queue)
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|" + queueSep + "--:|--:|--:|--:|--:|---|---|\n")
	knee := kneeStep(s)
	for i, st := range s.Steps {
		valid := "yes"
		if !st.Valid {
			valid = "**no**"
		}
		var notes []string
		if i == knee {
			notes = append(notes, "**knee**")
		}
		if st.Valid && s.Knee.MaxGoodput > 0 && st.Goodput == s.Knee.MaxGoodput && st.Level(s.Mode) == s.Knee.MaxGoodputLevel {
			notes = append(notes, "max goodput")
		}
		if math.IsInf(st.Rate, 1) {
			notes = append(notes, "burst")
		}
		q := ""
		if s.queued() {
			q = fmt.Sprintf(" %s | %s |", p50(st.QueueTime), p99(st.QueueTime))
		}
		fmt.Fprintf(b, "| %s | %s | %s | %d | %d | %s | %s | %s | %s |%s %s | %s | %s | %s | %s | %s | %s |\n",
			stepName(st), num(st.Level(s.Mode)), num(st.AchievedRate), st.Completed, st.Failed,
			num(st.RequestThroughput), num(st.Goodput), keepUp(st), num(st.OutputThroughput), q,
			num(st.TTFT.P50), p99(st.TTFT), num(st.TPOT.P50), p99(st.TPOT), p99(st.E2EL), valid, strings.Join(notes, ", "))
	}
	b.WriteString("\nLatencies in ms. A p99 marked * rests on fewer than 100 samples (see Latency detail for its confidence interval). " +
		"Goodput is vllm bench serve's request_goodput (good requests per second of the step, drain included); keep-up is the knee's " +
		"criterion (see Knee and capacity), shown capped at 100 %.")
	if s.queued() {
		b.WriteString(" Client queue is the wait for one of the --max-concurrency slots, not included in TTFT or E2EL.")
	}
	b.WriteString("\n\n")
}

// stepName names a step in tables: its index, with the round when > 1 and
// the attempt when the level was rerun.
func stepName(st Step) string {
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
func p99(x Summary) string {
	if x.N == 0 {
		return "-"
	}
	if !x.P99Reliable() {
		return num(x.P99) + "*"
	}
	return num(x.P99)
}

func writeKnee(b *bytes.Buffer, s Sweep) {
	k := s.Knee
	b.WriteString("## Knee and capacity\n\n")
	fmt.Fprintf(b, "- Knee: %s.\n", kneeLine(s))
	if s.hasValid() && k.MaxGoodputLevel != 0 {
		fmt.Fprintf(b, "- Max goodput (vLLM's request_goodput): **%s req/s** at %s.\n", num(k.MaxGoodput), s.levelText(k.MaxGoodputLevel))
	}
	if s.closed() {
		fmt.Fprintf(b, "- Rule: a level keeps up when it is valid, at least %s of its completed requests were good", pct(s.ratio()))
	} else {
		fmt.Fprintf(b, "- Rule: a level keeps up when it is valid and its keep-up is at least %s: the fraction of its requests that "+
			"were good, times its arrival window over the time the server needed to finish them (less one unloaded request's "+
			"latency). A server that keeps up finishes about one request latency after the last arrival; an overloaded one "+
			"pays its whole backlog, so keep-up falls to about capacity / rate", pct(s.ratio()))
	}
	if s.SLO.Set() {
		fmt.Fprintf(b, "; and its SLO p99s hold (%s)", sloText(s.SLO))
	}
	b.WriteString(".\n")
	if k.Reason != "" {
		fmt.Fprintf(b, "- Decision: %s.\n", k.Reason)
	}
	if k.Stop != "" {
		fmt.Fprintf(b, "- The adaptive search stopped early: %s.\n", k.Stop)
	}
	b.WriteString("\n")
	writeProbe(b, s)
	fmt.Fprintf(b, "![goodput, throughput and keep-up vs %s](%s)\n\n", xName(s), artifacts.GoodputPlotFile)
	fmt.Fprintf(b, "![TTFT and TPOT percentiles vs %s](%s)\n\n", xName(s), artifacts.LatencyPlotFile)
	for _, st := range s.Steps {
		if math.IsInf(st.Rate, 1) && !s.closed() {
			b.WriteString("Burst steps (rate inf) have no offered rate and are not drawn in the plots.\n\n")
			break
		}
	}
}

// writeProbe describes the throughput probe that chose the search's first
// rate.
func writeProbe(b *bytes.Buffer, s Sweep) {
	p := s.Probe
	if p == nil {
		return
	}
	b.WriteString("### Throughput probe\n\n")
	if p.EstimateReqPerS > 0 {
		fmt.Fprintf(b, "Before the search, closed loops of growing concurrency estimated the capacity at **%s req/s** (%s); "+
			"the search started at %s and stepped up or down from there to bracket the knee. ", num(p.EstimateReqPerS), p.Note, s.levelText(p.StartRate))
	} else {
		fmt.Fprintf(b, "The closed-loop throughput probe gave no estimate (%s); the search started at %s. ", p.Note, s.levelText(p.StartRate))
	}
	b.WriteString("Probe requests are not steps: they are not in records.jsonl, the tables or the knee.\n\n")
	b.WriteString("| concurrency | completed | failed | req/s | mean E2EL (ms) | server max waiting |\n|--:|--:|--:|--:|--:|--:|\n")
	for _, l := range p.Levels {
		fmt.Fprintf(b, "| %d | %d | %d | %s | %s | %s |\n", l.Concurrency, l.Completed, l.Failed, num(l.ThroughputReqPerS), num(l.MeanE2ELMS), val(l.MaxWaiting))
	}
	b.WriteString("\n")
}

// xName is the x axis of the plots.
func xName(s Sweep) string {
	if s.closed() {
		return "concurrency"
	}
	return "offered rate"
}

func writeValidity(b *bytes.Buffer, s Sweep) {
	b.WriteString("## Validity\n\n")
	b.WriteString("A step is invalid when the client could not keep its schedule (client-saturated), the server was not " +
		"proven idle before it (not-idle), its error rate was too high (errors), or it was cut short (interrupted). " +
		"Invalid steps are kept in every table and left out of the knee.\n\n")
	if len(s.Steps) == 0 {
		return
	}
	b.WriteString("| step | valid | why not | idle proof | send-lag p99 (ms) |\n|---|---|---|---|--:|\n")
	for _, st := range s.Steps {
		valid, why := "yes", "-"
		if !st.Valid {
			valid = "**no**"
			why = strings.Join(st.Invalid, "; ")
			if why == "" {
				why = "not given"
			}
		}
		idle := st.Idle
		if idle == "" {
			idle = fingerprint.NotRecorded
		}
		if st.IdleDetail != "" {
			idle += ": " + st.IdleDetail
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", stepName(st), valid, mdCell(why), mdCell(idle), p99(st.SendLag))
	}
	b.WriteString("\n")
}

func writeLatency(b *bytes.Buffer, s Sweep) {
	b.WriteString("## Latency detail (ms)\n\n")
	if len(s.Steps) == 0 {
		return
	}
	type metric struct {
		name string
		get  func(Step) Summary
	}
	metrics := []metric{
		{"TTFT", func(st Step) Summary { return st.TTFT }},
		{"TPOT", func(st Step) Summary { return st.TPOT }},
		{"ITL", func(st Step) Summary { return st.ITL }},
		{"E2EL", func(st Step) Summary { return st.E2EL }},
	}
	if s.queued() {
		metrics = append(metrics, metric{"Client queue time (wait for a --max-concurrency slot)", func(st Step) Summary { return st.QueueTime }})
	}
	for _, m := range metrics {
		fmt.Fprintf(b, "### %s\n\n| step | n | mean | median | std | p50 | p90 | p99 |\n|---|--:|--:|--:|--:|--:|--:|--:|\n", m.name)
		for _, st := range s.Steps {
			x := m.get(st)
			if x.N == 0 {
				fmt.Fprintf(b, "| %s | 0 | - | - | - | - | - | - |\n", stepName(st))
				continue
			}
			p := p99(x)
			if !x.P99Reliable() && (x.P99CILow != 0 || x.P99CIHigh != 0) {
				p += fmt.Sprintf(" (95%% CI %s–%s)", num(x.P99CILow), num(x.P99CIHigh))
			}
			fmt.Fprintf(b, "| %s | %d | %s | %s | %s | %s | %s | %s |\n", stepName(st), x.N,
				num(x.Mean), num(x.Median), num(x.Std), num(x.P50), num(x.P90), p)
		}
		b.WriteString("\n")
	}
}

func writeErrors(b *bytes.Buffer, s Sweep) {
	failed := 0
	for _, st := range s.Steps {
		failed += st.Failed
	}
	b.WriteString("## Errors\n\n")
	if failed == 0 {
		b.WriteString("No request failed.\n\n")
		return
	}
	b.WriteString("| step | failed | error rate | by class |\n|---|--:|--:|---|\n")
	for _, st := range s.Steps {
		rate := "-"
		if n := st.Completed + st.Failed; n > 0 {
			rate = pct(float64(st.Failed) / float64(n))
		}
		fmt.Fprintf(b, "| %s | %d | %s | %s |\n", stepName(st), st.Failed, rate, counts(st.FailedByClass))
	}
	fmt.Fprintf(b, "\nSamples of the errors, with secrets removed, are in %s.\n\n", artifacts.ErrorsFile)
}

func writeTokens(b *bytes.Buffer, s Sweep) {
	b.WriteString("## Token distributions\n\n")
	if len(s.Steps) == 0 {
		return
	}
	b.WriteString("Input and requested output over all requests, actual output over successful ones; p10 / p50 / p90 / p99 / max.\n\n")
	b.WriteString("| step | input | requested output | actual output | finish reasons |\n|---|---|---|---|---|\n")
	d := func(t TokenDist) string {
		if t.N == 0 {
			return "-"
		}
		return fmt.Sprintf("%s / %s / %s / %s / %s", num(t.P10), num(t.P50), num(t.P90), num(t.P99), num(t.Max))
	}
	for _, st := range s.Steps {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", stepName(st), d(st.InputTokens), d(st.RequestedOutputTokens),
			d(st.OutputTokens), counts(st.FinishReasons))
	}
	b.WriteString("\n")
}

func writeServer(b *bytes.Buffer, s Sweep) {
	b.WriteString("## Server side (from /metrics)\n\n")
	if len(s.Steps) == 0 {
		return
	}
	recorded := false
	for _, st := range s.Steps {
		recorded = recorded || st.Server.Recorded
	}
	if !recorded {
		b.WriteString("**not-recorded**: no step has usable server metrics")
		if r := s.Steps[0].Server.Reason; r != "" {
			fmt.Fprintf(b, " (%s)", r)
		}
		b.WriteString(". Idle proofs and server-side deltas need the target's Prometheus /metrics " +
			"(vLLM's vllm:* metrics); client-side figures above are unaffected.\n\n")
		return
	}
	b.WriteString("Counter deltas over each step, maxima during it, and server-side latencies (ms) from histogram deltas " +
		"(quantiles as Prometheus' histogram_quantile interpolates them; \"≤ X\" where the quantile falls into the first bucket, " +
		"whose interpolation from 0 says nothing). Client − server TTFT is the exact difference of the means: the network and " +
		"front-end share.\n\n")
	b.WriteString("| step | prompt tok | gen tok | preemptions | prefix hit warmup | prefix hit measured | max running | max waiting | max KV | server TTFT p50 / p99 | server ITL p99 | server E2EL p99 | server queue mean / p99 | client − server TTFT (mean) |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	var reasons []string
	for _, st := range s.Steps {
		sv := st.Server
		if !sv.Recorded {
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
			valPct(sv.WarmupPrefixHitRate), valPct(sv.PrefixHitRate),
			val(sv.MaxRunning), val(sv.MaxWaiting), valPct(sv.MaxKVCacheUsage),
			val(sv.TTFT.P50), val(sv.TTFT.P99), val(sv.ITL.P99), val(sv.E2EL.P99),
			val(sv.QueueTime.Mean), val(sv.QueueTime.P99), val(sv.ClientMinusServerTTFTMeanMS))
	}
	b.WriteString("\n")
	for _, r := range reasons {
		fmt.Fprintf(b, "- %s\n", mdCell(r))
	}
	if len(reasons) > 0 {
		b.WriteString("\n")
	}
}

func writeNotRecorded(b *bytes.Buffer, s Sweep) {
	b.WriteString("## Not recorded\n\n")
	b.WriteString("`not-recorded` means llmprobe tried to read the value and could not (the endpoint does not exist, " +
		"the server does not expose it, or the request failed). It is never a guess or a default; the value is unknown.\n\n")
	fields := notRecordedFields(s.Fingerprint)
	var idle []string
	for _, st := range s.Steps {
		if st.Idle == "" || st.Idle == IdleNotRecorded {
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

// explain says where a not-recorded fingerprint field would have come from.
func explain(field string) string {
	switch field {
	case "target.served_model", "target.root", "target.max_model_len":
		return ": from GET /v1/models (vLLM lists root and max_model_len)"
	case "target.server_version":
		return ": from GET /version (vLLM only)"
	case "target.engine_config":
		return ": from the labels of vllm:cache_config_info on /metrics"
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
