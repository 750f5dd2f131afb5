package manager_test

import (
	"fmt"
	"testing"

	"github.com/llmprobe/llmprobe/collector/probemetrics"
	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober"
)

// TestDaemonResendsOnStaleConnections is issue 22 V8 in the daemon: against
// a server that closes each streamed response's connection while
// announcing keep-alive (the simulator's on-reuse mode: every reuse
// fails), the probe loses no request, and each resend is counted by
// llmprobe_request_retries_total, once per resent record.
func TestDaemonResendsOnStaleConnections(t *testing.T) {
	sc := fastSim()
	sc.CloseAfterStream = simulator.CloseOnReuse
	url, _ := simtest.Start(t, sc)
	reg, evs := runFor(t, parse(t, fmt.Sprintf(`
targets:
  - name: t
    base_url: %s
    probes:
      - name: p
        rate: 40
        arrival: constant
        max_concurrency: 4
        workload: {input_tokens: {dist: fixed, value: 4}, output_tokens: {dist: fixed, value: 2}}
`, url)), 20)
	retried := 0
	for _, e := range evs {
		failedUnlessCanceled(t, e.Record) // Stop cancels what is in flight
		if e.Record.Retry != prober.RetryNone {
			retried++
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counted := 0.0
	for _, mf := range mfs {
		if mf.GetName() == probemetrics.NameRetries {
			for _, mt := range mf.GetMetric() {
				counted += mt.GetCounter().GetValue()
			}
		}
	}
	if retried == 0 || counted != float64(retried) {
		t.Errorf("%d of %d records resent, the counter says %v; want some, and the same", retried, len(evs), counted)
	}
}
