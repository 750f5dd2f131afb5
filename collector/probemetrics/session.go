package probemetrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmprobe/llmprobe/prober"
)

// NameSessionTurns is the counter of the later turns of multi-turn
// sessions (turn N > 1) by where they were answered and what they found
// cached: the session affinity of a KV-cache-aware router
// (docs/measurement.md, "Session affinity").
const NameSessionTurns = "llmprobe_session_turns_total"

// The values of the cache label of llmprobe_session_turns_total.
const (
	// SessionCacheHit: the turn succeeded and its usage reported at least
	// one cached prompt token.
	SessionCacheHit = "hit"
	// SessionCacheMiss: it succeeded and its usage reported none.
	SessionCacheMiss = "miss"
	// SessionCacheNotReported: it failed, or its usage did not report
	// cached tokens (vLLM without --enable-prompt-tokens-details).
	SessionCacheNotReported = "not_reported"
)

// SessionCacheResults lists the cache label's values in a stable order.
var SessionCacheResults = []string{SessionCacheHit, SessionCacheMiss, SessionCacheNotReported}

// sessionCounters are the session-turn counters of one (target, probe),
// indexed [result][cache] like prober.SessionReplicaResults and
// SessionCacheResults, created at its first later turn.
type sessionCounters [3][3]prometheus.Counter

const helpSessionTurns = "Turns 2 and up of multi-turn sessions, sent, by result: same_replica (answered by the backend that " +
	"answered the previous turn, from the target's attribution_headers), other_replica, or unknown (either " +
	"backend not known); and by cache: hit or miss (the turn's usage reported cached prompt tokens, or none) " +
	"or not_reported. The series appear at a probe's first later turn."

// observeSession counts r when it is a later turn of a session.
func (m *Metrics) observeSession(pm *probeMetrics, r *prober.Record) {
	if r.SessionReplica == "" {
		return
	}
	c := pm.session.Load()
	if c == nil {
		c = &sessionCounters{}
		for i, res := range prober.SessionReplicaResults {
			for j, cache := range SessionCacheResults {
				c[i][j] = m.sessionTurns.WithLabelValues(r.Target, r.Probe, res, cache)
			}
		}
		if !pm.session.CompareAndSwap(nil, c) {
			c = pm.session.Load()
		}
	}
	i := 2 // unknown
	switch r.SessionReplica {
	case prober.SessionSameReplica:
		i = 0
	case prober.SessionOtherReplica:
		i = 1
	}
	j := 2 // not reported
	if r.OK() && r.CachedTokensReported {
		j = 1
		if r.CacheHit() {
			j = 0
		}
	}
	c[i][j].Inc()
}
