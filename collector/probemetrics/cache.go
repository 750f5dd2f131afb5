package probemetrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmprobe/llmprobe/prober"
)

// The per-request prefix-cache counters: what the server's responses said
// was cached (usage.prompt_tokens_details.cached_tokens), for targets whose
// responses report it. A probe's series are created at its first such
// response, not by Init: a target that never reports it has none, so an
// absent series means "not reported", never "no hits".
const (
	NamePromptCachedTokens  = "llmprobe_prompt_cached_tokens_total"
	NamePromptCacheRequests = "llmprobe_prompt_cache_requests_total"
)

// The values of the result label of llmprobe_prompt_cache_requests_total.
const (
	// CacheHit: the response reported at least prober.MinCacheHitTokens
	// (16) cached prompt tokens.
	CacheHit = "hit"
	// CacheMiss: the response reported fewer (the BOS token and a chat
	// template's opening, which every prompt shares, are not a hit).
	CacheMiss = "miss"
)

// cacheCounters are the per-request prefix-cache counters of one
// (target, probe), created at its first report.
type cacheCounters struct {
	tokens    prometheus.Counter
	hit, miss prometheus.Counter
}

const helpPromptCachedTokens = "Prompt tokens the server's responses reported as served from its prefix cache " +
	"(usage.prompt_tokens_details.cached_tokens), over successful requests; only for targets whose " +
	"responses report it (the series appears at the first such response)."

const helpPromptCacheRequests = "Successful requests whose response reported usage.prompt_tokens_details.cached_tokens, by result: " +
	"hit (at least 16 cached prompt tokens, one vLLM KV-cache block) or miss (fewer: the BOS token and a chat template's opening, " +
	"which every prompt shares, are not a hit); only for targets whose responses report it."

// observeCache counts r's cached prompt tokens when r succeeded and its
// usage reported them.
func (m *Metrics) observeCache(pm *probeMetrics, r *prober.Record) {
	if !r.OK() || !r.CachedTokensReported {
		return
	}
	c := pm.cache.Load()
	if c == nil {
		c = &cacheCounters{
			tokens: m.cachedTokens.WithLabelValues(r.Target, r.Probe),
			hit:    m.cacheRequests.WithLabelValues(r.Target, r.Probe, CacheHit),
			miss:   m.cacheRequests.WithLabelValues(r.Target, r.Probe, CacheMiss),
		}
		pm.cache.CompareAndSwap(nil, c)
	}
	c.tokens.Add(float64(max(r.CachedTokens, 0)))
	if !r.CacheHit() {
		c.miss.Inc()
		return
	}
	c.hit.Inc()
}
