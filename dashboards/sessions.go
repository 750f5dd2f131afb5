package dashboards

import "fmt"

// sessionSection is the "Sessions" row of the SLO overview: the session
// affinity of multi-turn probes (rules/llmprobe.rules.yml's
// target_probe:llmprobe_session_* rules), what their later turns found
// cached, and the later turns by result (docs/measurement.md, "Session
// affinity").
func sessionSection() section {
	return section{title: "Sessions (does the router keep conversations on one replica?)", panels: []*Panel{
		stat("Session affinity (10m)", "Share of a multi-turn probe's later turns answered by the replica that answered "+
			"the session's previous turn (target_probe:llmprobe_session_affinity:ratio_rate10m; needs the target's "+
			"attribution_headers). LLMProbeSessionAffinityLost fires below 90 % with at least 20 later turns. Only "+
			"multi-turn probes show here.", "percentunit", 6,
			steps("red", 0.9, "green"),
			instant(fmt.Sprintf(`target_probe:llmprobe_session_affinity:ratio_rate10m{%s}`, sel), tp)),
		timeseries("Session affinity and cache hits", "Session affinity and the share of later turns whose usage "+
			"reported cached prompt tokens that found some (target_probe:llmprobe_session_cache_hit:ratio_rate10m); "+
			"dashed: the alert's 90 %. A router that spreads turns blindly over n replicas reads about 1/n.",
			"percentunit", 18,
			q(fmt.Sprintf(`target_probe:llmprobe_session_affinity:ratio_rate10m{%s}`, sel), "affinity "+tp),
			q(fmt.Sprintf(`target_probe:llmprobe_session_cache_hit:ratio_rate10m{%s}`, sel), "cache hits "+tp),
			q(fmt.Sprintf(`target_probe:llmprobe_session_affinity:ratio_rate10m{%s} * 0 + 0.9`, sel), "alert "+tp),
		).ratio().dashed("C", "red"),
		timeseries("Later turns by result", "Later turns per second by where they were answered (same_replica, "+
			"other_replica, unknown) and what they found cached (hit, miss, not_reported).", "reqps", 24,
			q(fmt.Sprintf(`sum by (cluster, target, probe, result, cache) (rate(llmprobe_session_turns_total{%s}[$__rate_interval]))`, sel),
				"{{result}} {{cache}} "+tp),
		).minZero(),
	}}
}
