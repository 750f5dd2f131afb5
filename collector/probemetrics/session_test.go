package probemetrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/slo"
)

// TestSessionTurns: later turns count by result and cache; turn 1 and
// single requests add no series; a probe's first later turn creates all
// nine, so that rate() sees a zero before the first other_replica; the
// series go with their probe.
func TestSessionTurns(t *testing.T) {
	_, m := newMetrics()
	observeAll(m, slo.Verdict{}, []prober.Record{
		{Target: "gw", Probe: "single"},
		{Target: "gw", Probe: "mt", Turn: 1, SessionID: "s"},
		{Target: "gw", Probe: "mt", Turn: 2, SessionID: "s", SessionReplica: prober.SessionSameReplica, CachedTokens: 48, CachedTokensReported: true},
		{Target: "gw", Probe: "mt", Turn: 3, SessionID: "s", SessionReplica: prober.SessionSameReplica, CachedTokens: 96, CachedTokensReported: true},
		{Target: "gw", Probe: "mt", Turn: 2, SessionID: "u", SessionReplica: prober.SessionOtherReplica, CachedTokensReported: true},
		{Target: "gw", Probe: "mt", Turn: 2, SessionID: "v", SessionReplica: prober.SessionReplicaUnknown, Error: prober.ClassHTTP5xx},
	})
	if n := testutil.CollectAndCount(m.sessionTurns); n != 9 {
		t.Fatalf("%d session series, want 9 (the multi-turn probe's)", n)
	}
	for _, c := range []struct {
		result, cache string
		want          float64
	}{
		{prober.SessionSameReplica, SessionCacheHit, 2},
		{prober.SessionOtherReplica, SessionCacheMiss, 1},
		{prober.SessionReplicaUnknown, SessionCacheNotReported, 1},
		{prober.SessionOtherReplica, SessionCacheHit, 0},
	} {
		if got := testutil.ToFloat64(m.sessionTurns.WithLabelValues("gw", "mt", c.result, c.cache)); got != c.want {
			t.Errorf("%s/%s = %v, want %v", c.result, c.cache, got, c.want)
		}
	}
	if problems, err := testutil.CollectAndLint(m.sessionTurns); err != nil || len(problems) > 0 {
		t.Fatal(err, problems)
	}
	m.DeleteProbe("gw", "mt")
	if n := testutil.CollectAndCount(m.sessionTurns); n != 0 {
		t.Errorf("%d session series left after DeleteProbe", n)
	}
}
