package rundir

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// clientSaturated reports whether step s of the run out was judged invalid
// only because the client could not keep up on this machine
// (sweep.FlagClientSaturated, sweep.FlagClientReadLag or both), and checks
// that each flag agrees with its evidence under the run's own thresholds
// (the fingerprint's load.validity). client-saturated: at least
// sweep.MinSendsOverLimit sends later than the send-lag limit, counted
// again from the step's records in records.jsonl (send lag less the wait
// for a concurrency slot), or a send-lag p99 over it, or a client CPU over
// its cap. client-read-lag: a Go scheduling-latency p99 over its limit with
// at least sweep.MinSchedLatencyOverLimit samples over it. On a starved
// machine that judgement is the right answer for a rate a test expects the
// client to keep; any other flag, or a flag without its evidence, still
// fails.
func clientSaturated(t *testing.T, out *Outcome, s *sweep.Step) bool {
	t.Helper()
	v := s.Validity
	if len(v.Flags) == 0 || slices.ContainsFunc(v.Flags, func(f string) bool {
		return f != sweep.FlagClientSaturated && f != sweep.FlagClientReadLag
	}) {
		return false
	}
	th := out.Result.Fingerprint.Load.Validity
	if th == nil {
		t.Fatalf("step %s flagged %v, but the fingerprint holds no validity thresholds", s.Label, v.Flags)
	}
	if slices.Contains(v.Flags, sweep.FlagClientReadLag) {
		if !v.SchedLatencyChecked || v.SchedLatencyP99MS <= th.MaxSchedLatencyMS || v.SchedLatencyOverLimit < sweep.MinSchedLatencyOverLimit {
			t.Errorf("step %s flagged %s (%v) without its evidence: sched-latency p99 %.3g ms (limit %.3g), %d of %d samples over (checked %v)",
				s.Label, sweep.FlagClientReadLag, v.Reasons, v.SchedLatencyP99MS, th.MaxSchedLatencyMS, v.SchedLatencyOverLimit,
				v.SchedLatencySamples, v.SchedLatencyChecked)
		}
		t.Logf("step %s: %s (%s): the client's goroutines waited to run on this machine, and it said so", s.Label, sweep.FlagClientReadLag, v.Reasons)
		if !slices.Contains(v.Flags, sweep.FlagClientSaturated) {
			return true
		}
	}
	limit := time.Duration(th.MaxSendLagMS * float64(time.Millisecond))
	f, err := os.Open(filepath.Join(out.Dir, artifacts.RecordsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	late := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r struct {
			Step      int           `json:"step"`
			SendLag   time.Duration `json:"send_lag_ns"`
			QueueWait time.Duration `json:"queue_wait_ns"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if r.Step == s.Index && r.SendLag-r.QueueWait > limit {
			late++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if late != v.SendsOverLimit {
		t.Errorf("step %s: %d of its records were sent later than %v (less their queue wait), the verdict counts %d", s.Label, late, limit, v.SendsOverLimit)
	}
	lagged := v.SendsOverLimit >= sweep.MinSendsOverLimit || v.SendLagP99MS > th.MaxSendLagMS
	hot := v.ClientCPUChecked && v.ClientCPU > th.MaxClientCPU
	if !lagged && !hot {
		t.Errorf("step %s flagged %s (%v) without its evidence: %d sends later than %v, send-lag p99 %.3g ms, client CPU %.2f (checked %v)",
			s.Label, sweep.FlagClientSaturated, v.Reasons, v.SendsOverLimit, limit, v.SendLagP99MS, v.ClientCPU, v.ClientCPUChecked)
	}
	t.Logf("step %s: %s (%s): the client did not keep the rate on this machine, and said so", s.Label, sweep.FlagClientSaturated, v.Reasons[0])
	return true
}
