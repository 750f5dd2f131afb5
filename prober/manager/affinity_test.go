package manager_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober"
)

// TestDaemonSessionAffinity is issue 36 Deliver 4 for the daemon: a
// multi-turn probe sends its session id in X-Session-ID on every turn (and,
// with slo_headers, the target's SLO), records per later turn whether the
// previous turn's replica answered, and counts it into
// llmprobe_session_turns_total: behind a simulator that keeps sessions,
// every later turn is same_replica and found its context cached; behind
// one whose router scatters them (--fault.session-scatter 1, 4 replicas),
// most are other_replica.
func TestDaemonSessionAffinity(t *testing.T) {
	sim := func(scatter float64) string {
		c := fastSim()
		c.ServedBy, c.ServedByReplicas = "replica", 4
		c.EnablePromptTokensDetails = true
		c.Faults.SessionScatter = scatter
		base, _ := simtest.Start(t, c)
		return base
	}
	sticky := simtest.Record(t, sim(0))
	scattered := sim(1)
	target := `
  - name: %s
    base_url: %s
    api: chat
    attribution_headers: [x-served-by]
    slo: {ttft: 2s, tpot: 250ms}
    slo_headers: %v
    probes:
      - name: mt
        rate: 20
        workload:
          input_tokens: {dist: fixed, value: 64}
          output_tokens: {dist: fixed, value: 4}
          multi_turn: {turns: 3}
`
	m, reg, col := start(t, parse(t, "targets:"+fmt.Sprintf(target, "sticky", sticky.URL, true)+fmt.Sprintf(target, "scattered", scattered, false)))
	later := func(evs []event, target string) (n int) {
		for _, e := range evs {
			if e.Record.Target == target && e.Record.Turn > 1 && e.Record.OK() {
				n++
			}
		}
		return n
	}
	// A scattered turn goes to one of the 3 replicas other than its
	// session's, drawn, so it meets its previous turn's replica with
	// probability 1/3: of 120 later turns, half or more are same_replica
	// with probability about 5e-5 (12 turns gave 6 and 6 about once in 6).
	evs := col.waitFor(t, 90*time.Second, "12 later turns of sticky, 120 of scattered", func(evs []event) bool {
		return later(evs, "sticky") >= 12 && later(evs, "scattered") >= 120
	})
	m.Stop()

	same := map[string]int{}
	for _, e := range evs {
		r := e.Record
		if r.Turn > 1 && r.OK() {
			same[r.Target+" "+r.SessionReplica]++
			if r.Target == "sticky" && (r.SessionReplica != prober.SessionSameReplica || r.CachedTokens == 0) {
				t.Errorf("sticky turn %d of %s: %q, %d cached tokens; want same_replica and its context cached", r.Turn, r.SessionID, r.SessionReplica, r.CachedTokens)
			}
		}
	}
	if same["scattered "+prober.SessionOtherReplica] <= same["scattered "+prober.SessionSameReplica] {
		t.Errorf("scattered later turns by result %v, want mostly other_replica", same)
	}
	q := func(target, result, cache string) float64 {
		return counter(t, reg, "llmprobe_session_turns_total", map[string]string{"target": target, "probe": "mt", "result": result, "cache": cache})
	}
	if got := q("sticky", prober.SessionSameReplica, "hit"); got < 12 {
		t.Errorf("sticky same_replica/hit = %v, want >= 12", got)
	}
	if got := q("sticky", prober.SessionOtherReplica, "hit") + q("sticky", prober.SessionOtherReplica, "miss"); got != 0 {
		t.Errorf("sticky other_replica = %v, want 0", got)
	}
	if got := q("scattered", prober.SessionOtherReplica, "miss") + q("scattered", prober.SessionOtherReplica, "hit"); got == 0 {
		t.Errorf("scattered other_replica = 0, want most later turns")
	}
	for _, x := range sticky.Exchanges() {
		if x.Path != "/v1/chat/completions" {
			continue
		}
		if x.Header.Get("X-Session-ID") == "" || x.Header.Get("x-slo-ttft-ms") != "2000" || x.Header.Get("x-slo-tpot-ms") != "250" ||
			x.Header.Get("x-prediction-based-scheduling") != "true" {
			t.Fatalf("a turn sent with headers %v, want X-Session-ID, x-slo-ttft-ms 2000, x-slo-tpot-ms 250, x-prediction-based-scheduling true", x.Header)
		}
	}
}
