package sweep

import (
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/slo"
)

// affinitySweep runs a multi-turn sweep (10 sessions of 3 turns, x-served-by
// attributed) against a simulator of 4 replicas that keeps sessions, its
// --fault.session-scatter at scatter, through a recorder, and returns the
// step's session affinity, the records and the recorded exchanges.
func affinitySweep(t *testing.T, scatter float64, edit func(*Config)) (SessionAffinity, []StepRecord, []simtest.Exchange) {
	t.Helper()
	sc := simtest.Fast()
	sc.ServedBy, sc.ServedByReplicas = "replica", 4
	sc.EnablePromptTokensDetails = true
	sc.Faults.SessionScatter = scatter
	base, _ := simtest.Start(t, sc)
	rec := simtest.Record(t, base)
	cfg := multiTurnConfig(t, rec.URL)
	cfg.AttributionHeaders = []string{"x-served-by"}
	cfg.Workload.InputTokens.Value = 64 // full blocks to cache
	// 10 sessions: a scattered sweep keeps every turn 2 on its turn 1's
	// replica by chance with probability 3^-10 only.
	cfg.NumPrompts = 10
	if edit != nil {
		edit(&cfg)
	}
	sink := &memSink{}
	res := runSweep(t, cfg, sink)
	mt := res.Steps[0].MultiTurn
	if mt == nil || mt.LaterTurns.Completed != 20 {
		t.Fatalf("multi_turn %+v, want 20 later turns completed", mt)
	}
	back := roundTrip(t, res)
	if got := back.Steps[0].MultiTurn.Affinity; got.SameReplica != mt.Affinity.SameReplica || (got.Ratio == nil) != (mt.Affinity.Ratio == nil) {
		t.Fatalf("result.json's session_affinity read back as %+v, was %+v", got, mt.Affinity)
	}
	return mt.Affinity, sink.recs, rec.Exchanges()
}

// TestSweepSessionAffinity is issue 36 Deliver 4 over HTTP: every turn of a
// session carries its id in X-Session-ID; a simulator that keeps sessions
// answers every later turn from the previous turn's replica, where the
// earlier context is cached (affinity 1, cache hits 1); one whose router
// scatters sessions (--fault.session-scatter 1: always another replica of
// 4) drops the affinity to chance and the cache hits with it, each later
// turn's record saying where it went.
func TestSweepSessionAffinity(t *testing.T) {
	sticky, recs, xs := affinitySweep(t, 0, nil)
	if sticky.Ratio == nil || *sticky.Ratio != 1 || sticky.SameReplica != 20 || sticky.Unknown != 0 ||
		sticky.CacheHitRatio == nil || *sticky.CacheHitRatio != 1 {
		t.Errorf("sticky simulator: session affinity %+v, want 20 later turns all on the same replica, all cache hits", sticky)
	}
	for _, r := range recs {
		want := prober.SessionSameReplica
		if r.Record.Turn == 1 {
			want = ""
		}
		if r.Record.SessionReplica != want || r.Record.Backend == "" {
			t.Fatalf("record of turn %d: session_replica %q backend %q, want %q", r.Record.Turn, r.Record.SessionReplica, r.Record.Backend, want)
		}
	}
	sessions := 0
	for _, x := range xs {
		if x.Path != "/v1/chat/completions" || len(x.Messages()) == 1 && x.Header.Get("X-Session-ID") == "" {
			continue // a warmup: no session
		}
		if x.Header.Get("X-Session-ID") == "" {
			t.Fatalf("a turn of %d messages without X-Session-ID", len(x.Messages()))
		}
		sessions++
	}
	if sessions != 30 {
		t.Fatalf("%d requests carried a session id, want 30", sessions)
	}

	broken, recs, _ := affinitySweep(t, 1, nil)
	if broken.Ratio == nil || *broken.Ratio >= 0.9 || broken.SameReplica+broken.OtherReplica != 20 {
		t.Errorf("scattering simulator: session affinity %+v, want a ratio below 0.9 over 20 later turns", broken)
	}
	if broken.CacheHitRatio == nil || *broken.CacheHitRatio >= *sticky.CacheHitRatio {
		t.Errorf("scattering simulator: cache-hit ratio %v, want below the sticky one's %v", broken.CacheHitRatio, *sticky.CacheHitRatio)
	}
	other := 0
	for _, r := range recs {
		if r.Record.SessionReplica == prober.SessionOtherReplica {
			other++
		}
	}
	if other != broken.OtherReplica || other == 0 {
		t.Errorf("%d records say other_replica, the step %d", other, broken.OtherReplica)
	}
}

// TestSweepSessionHeaderOffAndSLOHeaders: session_header "" sends no
// session id (the simulator then spreads turns by number, and the figure
// says so); --slo-headers sends the --goodput SLO in milliseconds with
// x-prediction-based-scheduling on every request, warmups included.
func TestSweepSessionHeaderOffAndSLOHeaders(t *testing.T) {
	off := ""
	aff, _, xs := affinitySweep(t, 0, func(c *Config) {
		c.Workload.MultiTurn.SessionHeader = &off
		c.SLOHeaders = true
		c.SLO = slo.SLO{TTFT: 1500 * time.Millisecond, TPOT: 2500 * time.Microsecond}
	})
	if aff.Ratio == nil || *aff.Ratio == 1 {
		t.Errorf("no session header: affinity %+v, want turns spread (ratio below 1)", aff)
	}
	for _, x := range xs {
		if x.Path != "/v1/chat/completions" {
			continue // /tokenize
		}
		if x.Header.Get("X-Session-ID") != "" {
			t.Fatalf("session_header \"\" sent X-Session-ID %q", x.Header.Get("X-Session-ID"))
		}
		if x.Header.Get("x-slo-ttft-ms") != "1500" || x.Header.Get("x-slo-tpot-ms") != "2.5" || x.Header.Get("x-prediction-based-scheduling") != "true" {
			t.Fatalf("request headers %v, want x-slo-ttft-ms 1500, x-slo-tpot-ms 2.5, x-prediction-based-scheduling true", x.Header)
		}
	}
}
