package report

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/prober/fingerprint"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

func writeValidity(b *bytes.Buffer, res *sweep.Result) {
	heading(b, SectionValidity)
	b.WriteString("A step is invalid when the client could not keep its schedule (client-saturated), its own goroutines " +
		"waited too long to run, so that it read the streams late (client-read-lag: Go's scheduling-latency p99 over the limit), " +
		"the server was not proven idle before it (not-idle), its error rate was too high (errors), or it was cut short (interrupted). " +
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
	b.WriteString("| step | valid | why not | idle proof | send-lag p99 (ms) | sched-latency p99 (ms) |\n|---|---|---|---|--:|--:|\n")
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
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", stepName(st), valid, mdCell(why), mdCell(idle), p99(st.Stats.SendLag),
			schedP99(st.Validity))
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
		"front-end share. The TTFT split gives the shares of the client's mean TTFT that went to the network and front end " +
		"(that difference) and to the server's queue (its mean queue time); the rest is the server's prefill and scheduling.\n\n")
	b.WriteString("| step | prompt tok | gen tok | preemptions | prefix hit warmup | prefix hit measured | max running | max waiting | max KV | server TTFT p50 / p99 | server ITL p99 | server E2EL p99 | server queue mean / p99 | client − server TTFT (mean) | TTFT split: network / server queue |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	var reasons []string
	for _, st := range res.Steps {
		sv := st.Server
		if !sv.Recorded() {
			r := sv.Reason
			if r == "" {
				r = "no reason given"
			}
			reasons = append(reasons, fmt.Sprintf("step %s: %s", stepName(st), r))
			fmt.Fprintf(b, "| %s | not-recorded | | | | | | | | | | | | | |\n", stepName(st))
			continue
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s | %s | %s | %s / %s | %s | %s |\n", stepName(st),
			val(sv.PromptTokens), val(sv.GenerationTokens), val(sv.Preemptions),
			valPct(sv.WarmupPrefixCacheHitRate), valPct(sv.PrefixCacheHitRate),
			val(sv.MaxRunning), val(sv.MaxWaiting), valPct(sv.MaxKVCacheUsage),
			quantile(sv.TTFT, sv.TTFT.P50MS, 0.5), quantile(sv.TTFT, sv.TTFT.P99MS, 0.99), quantile(sv.ITL, sv.ITL.P99MS, 0.99),
			quantile(sv.E2EL, sv.E2EL.P99MS, 0.99), val(sv.QueueTime.MeanMS), quantile(sv.QueueTime, sv.QueueTime.P99MS, 0.99),
			val(sv.ClientMinusServerTTFTMeanMS), ttftSplit(sv))
	}
	b.WriteString("\n")
	for _, r := range reasons {
		fmt.Fprintf(b, "- %s\n", mdCell(r))
	}
	if len(reasons) > 0 {
		b.WriteString("\n")
	}
}

// schedP99 is a step's Go scheduling-latency p99 in ms with its sample
// count, "-" when it was not measured (a result written before the check).
func schedP99(v sweep.Validity) string {
	if v.SchedLatencySamples == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3g (n=%d)", v.SchedLatencyP99MS, v.SchedLatencySamples)
}

// ttftSplit is the TTFT split of a step: the network and front-end share
// (client − server mean TTFT) and the server's queue share (its mean queue
// time) of the client's mean TTFT, which is the server's mean plus the
// difference. Not-recorded without the server's mean TTFT or the difference;
// the queue share without the server's queue time.
func ttftSplit(sv sweep.ServerStats) string {
	if !recorded(sv.ClientMinusServerTTFTMeanMS) || !recorded(sv.TTFT.MeanMS) {
		return fingerprint.NotRecorded
	}
	client := sv.ClientMinusServerTTFTMeanMS.Value + sv.TTFT.MeanMS.Value
	if client <= 0 {
		return fingerprint.NotRecorded
	}
	queue := fingerprint.NotRecorded
	if recorded(sv.QueueTime.MeanMS) {
		queue = pct(sv.QueueTime.MeanMS.Value / client)
	}
	return pct(sv.ClientMinusServerTTFTMeanMS.Value/client) + " / " + queue
}
