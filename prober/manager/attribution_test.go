package manager_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/manager"
)

// TestDaemonRecordsWhichBackendAnswered: a target with attribution_headers
// behind a "gateway" of three replicas records the replica of each
// request (Record, the landing page's latest requests, the backend
// counter) and the echo of the x-request-id it sent.
func TestDaemonRecordsWhichBackendAnswered(t *testing.T) {
	cfg := fastSim()
	cfg.ServedBy = "replica"
	cfg.ServedByReplicas = 3
	base, _ := simtest.Start(t, cfg)
	m, reg, col := start(t, parse(t, fmt.Sprintf(`targets:
  - name: gw
    base_url: %s
    attribution_headers: [X-Served-By]
    probes: [{name: p, rate: 50}]
`, base)))
	evs := col.waitFor(t, 20*time.Second, "9 records", atLeast(9))
	seen := map[string]bool{}
	for _, e := range evs {
		r := e.Record
		if !r.OK() {
			t.Fatalf("record %s: %s %s", r.RequestID, r.Error, r.ErrorMessage)
		}
		if r.RequestIDEcho != r.RequestID || r.Backend != r.Attribution["x-served-by"] || r.Backend == "" {
			t.Errorf("record %s: echo %q backend %q attribution %v", r.RequestID, r.RequestIDEcho, r.Backend, r.Attribution)
		}
		seen[r.Backend] = true
	}
	// Which replica answers which record depends on the simulator's
	// request numbers (other requests may interleave): each backend is a
	// replica, and more than one answered.
	for b := range seen {
		if b != "replica-0" && b != "replica-1" && b != "replica-2" {
			t.Errorf("backend %q, want one of replica-0..2", b)
		}
	}
	if len(seen) < 2 {
		t.Errorf("backends %v, want several of replica-0..2", seen)
	}
	testutil.Eventually(t, "the status shows the backend", func() bool {
		rs := probeStatus(t, m, "gw", "p").Recent
		return len(rs) > 0 && rs[0].Backend != ""
	})
	var sum float64
	for b := range seen {
		sum += counter(t, reg, "llmprobe_backend_requests_total", map[string]string{"target": "gw", "backend": b, "outcome": "success"})
	}
	if sum < 9 {
		t.Errorf("llmprobe_backend_requests_total counts %v, want >= 9", sum)
	}
}

// TestProbeOnce sends count requests through the probe's request path
// and returns their records; a closed port gives connect failures, not
// an error.
func TestProbeOnce(t *testing.T) {
	base, _ := simtest.Start(t, fastSim())
	c := parse(t, "modules: {m: {workload: {input_tokens: {dist: fixed, value: 16}, output_tokens: {dist: fixed, value: 4}}}}\n")
	mod, _ := c.Module("m")
	tc, err := mod.Target(base)
	if err != nil {
		t.Fatal(err)
	}
	res, err := manager.ProbeOnce(context.Background(), tc, manager.OnceOptions{Count: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 {
		t.Fatalf("%d results, want 3", len(res))
	}
	for _, r := range res {
		if !r.Record.OK() || r.Record.CompletionTokens != 4 || r.Record.RequestIDEcho != r.Record.RequestID || !r.Verdict.Good {
			t.Errorf("result %+v", r)
		}
	}
	down, err := mod.Target("http://" + testutil.RefusedAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	res, err = manager.ProbeOnce(context.Background(), down, manager.OnceOptions{Count: 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != manager.MaxOnceCount {
		t.Errorf("%d results for count 20, want the cap %d", len(res), manager.MaxOnceCount)
	}
	if res[0].Record.Error != prober.ClassConnect || !res[0].Record.NotSent {
		t.Errorf("closed port: %+v", res[0].Record)
	}
}
