package sweep

import (
	"slices"
	"testing"

	"github.com/llmprobe/llmprobe/prober"
)

// clientSaturated reports whether st was judged invalid only because the
// client could not keep up on this machine (FlagClientSaturated,
// FlagClientReadLag or both), and checks that each flag agrees with its
// evidence. client-read-lag: a scheduling-latency p99 over its limit with
// at least MinSchedLatencyOverLimit samples over it. client-saturated: at
// least MinSendsOverLimit sends
// later than the send-lag limit (or a send-lag p99 over it), or a client
// CPU over its cap; with recs (the step's records, nil when the test kept
// none), the sends over the limit are counted again from them. On a
// starved machine (a CI host at load 15 on 2 cores) that judgement is the
// right answer for a rate a test expects the client to keep: the test then
// checks it in place of what needs the rate kept, and still fails on any
// other flag, or on the flag without its evidence.
func clientSaturated(t *testing.T, st *Step, o ValidityOptions, recs []prober.Record) bool {
	t.Helper()
	v := st.Validity
	if len(v.Flags) == 0 || slices.ContainsFunc(v.Flags, func(f string) bool {
		return f != FlagClientSaturated && f != FlagClientReadLag
	}) {
		return false
	}
	o = o.withDefaults()
	if slices.Contains(v.Flags, FlagClientReadLag) {
		if !v.SchedLatencyChecked || v.SchedLatencyP99MS <= ms(o.MaxSchedLatency) || v.SchedLatencyOverLimit < MinSchedLatencyOverLimit {
			t.Errorf("step %s flagged %s (%v) without its evidence: sched-latency p99 %.3g ms (limit %v), %d of %d samples over (checked %v)",
				st.Label, FlagClientReadLag, v.Reasons, v.SchedLatencyP99MS, o.MaxSchedLatency, v.SchedLatencyOverLimit,
				v.SchedLatencySamples, v.SchedLatencyChecked)
		}
		t.Logf("step %s: %s (%v): the client's goroutines waited to run on this machine, and it said so", st.Label, FlagClientReadLag, v.Reasons)
		if !slices.Contains(v.Flags, FlagClientSaturated) {
			return true
		}
	}
	limit := ms(o.MaxSendLag)
	late := v.SendsOverLimit >= MinSendsOverLimit || v.SendLagP99MS > limit
	hot := v.ClientCPUChecked && v.ClientCPU > o.MaxClientCPU
	if !late && !hot {
		t.Errorf("step %s flagged %s (%v) without its evidence: %d sends later than %.3g ms, send-lag p99 %.3g ms, client CPU %.2f (checked %v)",
			st.Label, FlagClientSaturated, v.Reasons, v.SendsOverLimit, limit, v.SendLagP99MS, v.ClientCPU, v.ClientCPUChecked)
	}
	if recs != nil {
		n := 0
		for _, r := range recs {
			if ms(max(r.SendLag-r.QueueWait, 0)) > limit {
				n++
			}
		}
		if n != v.SendsOverLimit {
			t.Errorf("step %s: %d of its records were sent later than %.3g ms, the verdict counts %d", st.Label, n, limit, v.SendsOverLimit)
		}
	}
	t.Logf("step %s: %s (%s): the client did not keep the rate on this machine, and said so", st.Label, FlagClientSaturated, v.Reasons[0])
	return true
}
