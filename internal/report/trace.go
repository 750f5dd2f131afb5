package report

import (
	"bytes"
	"fmt"

	"github.com/llmprobe/llmprobe/prober/sweep"
)

// maxTraceRows bounds the rate-over-time table of one step: windows are
// merged in groups until at most this many rows remain.
const maxTraceRows = 20

// writeTrace renders the "Trace replay" section of a trace sweep: per step
// the scheduled and achieved spans, the offset error (achieved - scheduled
// send), the send-lag p99, the largest rate error of a window and the
// trace's prefix share beside the server's prefix-cache hit rate; then the
// rate over time, trace vs achieved. Nothing for another sweep.
func writeTrace(b *bytes.Buffer, res *sweep.Result) {
	var steps []*sweep.Step
	for _, st := range res.Steps {
		if st.Trace != nil {
			steps = append(steps, st)
		}
	}
	if len(steps) == 0 {
		return
	}
	t0 := steps[0].Trace
	b.WriteString("### Trace replay\n\n")
	fmt.Fprintf(b, "Trace `%s` (%s format, %s), %s tokens per hash id. Each step sent the trace's entries at their "+
		"offsets divided by the speed, open loop; the offset error is the achieved minus the scheduled send time "+
		"(send lag, plus any wait for a --max-concurrency slot). The prefix share is the part of the input tokens that "+
		"the hash ids share with an earlier request of the step: the hit rate an unbounded prefix cache would see.\n\n",
		mdCell(t0.Source), t0.Format, t0.SHA256, num(float64(t0.BlockSize)))
	b.WriteString("| step | speed | entries | sent | trace span s | scheduled span s | achieved span s | offset error p50 / p99 / max ms | send lag p99 ms | max rate error req/s | prefix share | server prefix-cache hit rate |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|---|--:|--:|--:|--:|\n")
	for _, st := range steps {
		t := st.Trace
		fmt.Fprintf(b, "| %s | %s | %d | %d | %s | %s | %s | %s / %s / %s | %s | %s | %s | %s |\n",
			stepName(st), num(t.Speed), t.Entries, t.Sent, num(t.TraceSpanS), num(t.ScheduledSpanS), num(t.AchievedSpanS),
			num(t.OffsetErrorMS.P50), num(t.OffsetErrorMS.P99), num(t.OffsetErrorMS.Max), num(t.SendLagP99MS),
			num(t.MaxRateErrorPerS), pct(t.PrefixShare), valPct(st.Server.PrefixCacheHitRate))
	}
	b.WriteString("\n")
	for _, st := range steps {
		t := st.Trace
		if len(t.Windows) == 0 || t.WindowS <= 0 {
			continue
		}
		group := (len(t.Windows) + maxTraceRows - 1) / maxTraceRows
		w := t.WindowS * float64(group)
		fmt.Fprintf(b, "Rate over time, step %s (%s, windows of %s s): requests per second scheduled by the trace and achieved.\n\n",
			stepName(st), mdCell(st.Label), num(w))
		b.WriteString("| from s | trace req/s | achieved req/s |\n|--:|--:|--:|\n")
		for k := 0; k < len(t.Windows); k += group {
			tr, ach := 0, 0
			for _, win := range t.Windows[k:min(k+group, len(t.Windows))] {
				tr += win.Trace
				ach += win.Achieved
			}
			fmt.Fprintf(b, "| %s | %s | %s |\n", num(t.Windows[k].StartS), num(float64(tr)/w), num(float64(ach)/w))
		}
		b.WriteString("\n")
	}
}
