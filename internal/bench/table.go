package bench

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// WriteTable prints the report as one Markdown table under a header that
// names the machine, the load and the placement of the processes.
func WriteTable(w io.Writer, r *Report) error {
	var b strings.Builder
	mode := ""
	if r.Quick {
		mode = " --quick"
	}
	m := r.Machine
	fmt.Fprintf(&b, "llmprobe bench%s, %s\n", mode, r.Start.Format(time.RFC3339))
	fmt.Fprintf(&b, "machine:   %s, %d cores, %s/%s, %s; load average %s at start, %s at end\n",
		m.CPUModel, m.Cores, m.OS, m.Arch, m.Go, load(m.LoadStart), load(m.LoadEnd))
	if m.BusyPct >= 0 {
		fmt.Fprintf(&b, "machine use during the run: %.0f %% busy (all cores), of which %.0f %% by other processes\n",
			m.BusyPct, m.OthersPct)
	}
	fmt.Fprintf(&b, "placement: %s\n", r.Placement)
	s := r.Server
	fmt.Fprintf(&b, "server:    llmprobe simulate --light: first token %g ms after the request, one event every %g ms, "+
		"%d tokens per request (one per event, each flushed), %d-token prompts, on loopback\n\n",
		s.TTFTMS, s.GapMS, s.Tokens, s.InputTokens)

	rows := [][]string{{"measurement", "load", "result", "target", "met"}}
	add := func(cells ...string) { rows = append(rows, cells) }
	for _, a := range r.Accuracy {
		target, met := "", "—"
		if a.Concurrency == TargetStreams {
			target = fmt.Sprintf("read delay p99 ≤ %g ms", TargetReadDelayP99)
			met = yes(a.Delay.Events > 0 && a.Delay.P99 <= TargetReadDelayP99)
		}
		streams := "streams"
		if a.Concurrency == 1 {
			streams = "stream"
		}
		add("accuracy", fmt.Sprintf("%d concurrent %s, %s tokens/s", a.Concurrency, streams, kilo(a.TokensPerS)),
			delayText(a.Delay)+failedText(a.Failed), target, met)
	}
	var best *Capacity
	var perToken *Capacity
	for i := range r.Capacity {
		c := &r.Capacity[i]
		add("capacity", fmt.Sprintf("open loop %g req/s (achieved %.0f), %s tokens/s", c.Rate, c.Achieved, kilo(c.TokensPerS)),
			fmt.Sprintf("send lag p99 %.3f ms, read delay p99 %.3f ms; CPU per 1,000 tokens: llmprobe %s, server %s%s",
				c.SendLagP99, c.Delay.P99, cpuText(c.ClientCPUPer1k), cpuText(c.ServerCPUPer1k), failedText(c.Failed)),
			fmt.Sprintf("send lag p99 ≤ %g ms, read delay p99 ≤ %g ms", TargetSendLagP99, TargetReadDelayP99), yes(c.OK))
		if c.OK && (best == nil || c.Rate > best.Rate) {
			best = c
		}
		if c.TokensPerS >= TargetTokensPerSecond && c.ClientCPUPer1k >= 0 && (perToken == nil || c.TokensPerS < perToken.TokensPerS) {
			perToken = c
		}
	}
	if len(r.Capacity) > 0 {
		if best == nil {
			add("capacity", "highest rate within both bounds", "none of the rates tried", fmt.Sprintf("≥ %d req/s", TargetRate), "no")
		} else {
			add("capacity", "highest rate within both bounds",
				fmt.Sprintf("%g req/s, %s tokens/s", best.Rate, kilo(best.TokensPerS)),
				fmt.Sprintf("≥ %d req/s", TargetRate), yes(best.Rate >= TargetRate))
		}
		if perToken == nil {
			add("cpu per token", fmt.Sprintf("≥ %s tokens/s", kilo(TargetTokensPerSecond)), "no rate reached it",
				fmt.Sprintf("≤ %g µs", TargetCPUPerToken), "no")
		} else {
			add("cpu per token", fmt.Sprintf("lowest rate with ≥ %s tokens/s: %g req/s", kilo(TargetTokensPerSecond), perToken.Rate),
				fmt.Sprintf("llmprobe %.2f µs per token at %s tokens/s (server %.2f µs)", perToken.ClientCPUPer1k*1e3,
					kilo(perToken.TokensPerS), perToken.ServerCPUPer1k*1e3),
				fmt.Sprintf("≤ %g µs", TargetCPUPerToken), yes(perToken.ClientCPUPer1k*1e3 <= TargetCPUPerToken))
		}
	}
	for _, a := range r.Arrival {
		law := a.Kind
		if a.Kind == "gamma" {
			law = fmt.Sprintf("gamma (burstiness %g)", a.Burstiness)
		}
		how := "drawn only"
		if a.Sent {
			how = "sent"
		}
		res := fmt.Sprintf("drawn %.2f req/s (z %+.2f), KS p %.3f, CV %.3f (want %.3f)", a.DrawnRate, a.Z, a.KSP, a.CV, a.WantCV)
		target := fmt.Sprintf("z within ±%g, KS p > %g", TargetZ, TargetKSP)
		ok := math.Abs(a.Z) < TargetZ && a.KSP > TargetKSP
		if sw := a.Seeds; sw != nil && !a.Sent {
			res += fmt.Sprintf("; over %d seeds: z within ±%g in %d, KS p > %g in %d", sw.Seeds, TargetZ, sw.ZWithin, TargetKSP, sw.KSPassed)
			need := int(math.Ceil(TargetSeedShare * float64(sw.Seeds)))
			target = fmt.Sprintf("over %d seeds, z within ±%g and KS p > %g each in ≥ %d", sw.Seeds, TargetZ, TargetKSP, need)
			ok = sw.ZWithin >= need && sw.KSPassed >= need
		}
		if a.Sent {
			res += fmt.Sprintf("; achieved %.2f req/s (%+.3f %% vs drawn), sent gaps KS p %.3f, CV %.3f, send lag p99 %.3f ms",
				a.AchievedRate, a.AchievedDev, a.SentKSP, a.SentCV, a.SendLagP99)
			target = fmt.Sprintf("achieved within %g %% of drawn, ", TargetRateDeviation) + target
			ok = ok && math.Abs(a.AchievedDev) <= TargetRateDeviation
		}
		add("arrival", fmt.Sprintf("%s at %g req/s, %d arrivals %s", law, a.Rate, a.N, how), res, target, yes(ok))
	}
	if d := r.Daemon; d != nil {
		load := fmt.Sprintf("serve, %d targets × 1 probe at %g req/s, %.0f s", d.Targets, d.Rate, d.Seconds)
		target := fmt.Sprintf("RSS ≤ %g MB, CPU ≤ %g %% of a core", TargetDaemonRSS, TargetDaemonCPU)
		if !d.Measured {
			add("daemon", load, "not measured (needs /proc)", target, "—")
		} else {
			add("daemon", load, fmt.Sprintf("RSS %.1f MB (peak %.1f), CPU %.2f %% of a core, %.0f requests", d.RSSMB, d.PeakMB,
				d.CPUPct, d.Requests), target, yes(d.RSSMB <= TargetDaemonRSS && d.CPUPct <= TargetDaemonCPU))
		}
	}
	for _, r := range rows {
		for i := range r {
			r[i] = strings.ReplaceAll(r[i], "|", `\|`)
		}
	}
	writeMarkdown(&b, rows)
	if len(r.Notes) > 0 {
		b.WriteString("\nnotes:\n")
		for _, n := range r.Notes {
			b.WriteString("- " + n + "\n")
		}
	}
	b.WriteString("\nread delay: llmprobe's timestamp of a token event minus the simulator's write time of it (the trace " +
		"file, matched by x-request-id), over every token event of every successful request; CPU per 1,000 tokens: " +
		"CPU-seconds; llmprobe's over the measured step, the simulator's over the sweep process's life.\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func writeMarkdown(b *strings.Builder, rows [][]string) {
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	line := func(cells []string) {
		b.WriteString("|")
		for i, c := range cells {
			b.WriteString(" " + c + strings.Repeat(" ", widths[i]-len([]rune(c))) + " |")
		}
		b.WriteString("\n")
	}
	line(rows[0])
	sep := make([]string, len(widths))
	for i, w := range widths {
		sep[i] = strings.Repeat("-", w)
	}
	line(sep)
	for _, r := range rows[1:] {
		line(r)
	}
}

func delayText(d Delay) string {
	if d.Events == 0 {
		return "no event matched the trace"
	}
	s := fmt.Sprintf("read delay p50 %.3f / p99 %.3f / max %.3f ms (first token p99 %.3f ms) over %d events",
		d.P50, d.P99, d.Max, d.FirstP99, d.Events)
	if d.Skipped > 0 {
		s += fmt.Sprintf(", %d requests not matched", d.Skipped)
	}
	return s
}

func failedText(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(", %d failed", n)
}

func cpuText(s float64) string {
	if s < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.4f s (%.2f µs/token)", s, s*1e3)
}

func kilo(x float64) string {
	if x >= 1000 {
		return fmt.Sprintf("%.1fk", x/1000)
	}
	return fmt.Sprintf("%.0f", x)
}

func load(x float64) string {
	if x < 0 {
		return "unknown"
	}
	return fmt.Sprintf("%.2f", x)
}

func yes(ok bool) string {
	if ok {
		return "yes"
	}
	return "no"
}
