package dashboards

// canaryLegend names a canary group's series.
const canaryLegend = `{{canary}}`

// canarySection is the "Canary" row of the SLO overview: the continuous
// canary's recording rules (rules/llmprobe.canary.yml) by canary group —
// the candidate/baseline ratios of TTFT and TPOT p99, the goodput-ratio
// difference, each side's p99s and request rate, the 10m per-probe ratios
// of the means the alert decides on — and the state of
// LLMProbeCanaryRegression. The canary series are aggregated by canary
// group and role (and probe), so the target and probe variables do not
// filter them.
func canarySection() section {
	return section{title: "Canary (candidate against baseline, by canary group)", panels: []*Panel{
		stat("Canary regression alert", "State of LLMProbeCanaryRegression for each canary group (targets labelled "+
			"canary and role in llmprobe's configuration): ok, pending (a regression beyond the alert's limits "+
			"for less than 15 minutes) or firing, on any probe or metric. Groups whose two sides do not both have requests show nothing.", "", 6,
			steps("green", 1.0, "orange", 2.0, "red"),
			instant(`max by (canary) (
  ALERTS{alertname="LLMProbeCanaryRegression", alertstate="firing"} * 2
  or ALERTS{alertname="LLMProbeCanaryRegression", alertstate="pending"}
  or canary:llmprobe_requests:min_rate5m * 0
)`, canaryLegend),
		).valueMap(map[string][2]string{"0": {"ok", "green"}, "1": {"pending", "orange"}, "2": {"FIRING", "red"}}),
		stat("Requests of the smaller side (5m)", "Request rate of the group's side with fewer requests "+
			"(canary:llmprobe_requests:min_rate5m). The alert and the rollout analyses decide only from 1/3 req/s "+
			"(100 requests per 5 minutes, enough for a p99; the alert wants 200 successful requests per 10 minutes on each side).", "reqps", 6,
			steps("red", 1.0/3, "green"),
			instant(`canary:llmprobe_requests:min_rate5m`, canaryLegend)),
		stat("Goodput-ratio difference (5m)", "Candidate goodput ratio minus the baseline's, in ratio points "+
			"(canary:llmprobe_goodput:ratio_diff_rate5m): -0.05 means the candidate serves 5 points fewer of its "+
			"requests within the SLOs; the alert fires below -0.05 (over 10 minutes, per probe).", "percentunit", 12,
			steps("red", -0.05, "green"),
			instant(`canary:llmprobe_goodput:ratio_diff_rate5m`, canaryLegend)),
		timeseries("TTFT p99: candidate / baseline", "Ratio of the candidate's TTFT p99 to the baseline's over 5 "+
			"minutes (canary:llmprobe_time_to_first_token_seconds_p99:ratio_5m): 1.2 is 20 % slower. Dashed: llmprobe "+
			"compare's default limit, 1.10, which two identical sides cross often over 5 minutes; the alert decides on "+
			"10-minute ratios per probe (panel below).", "short", 8,
			q(`canary:llmprobe_time_to_first_token_seconds_p99:ratio_5m`, canaryLegend),
			q(`canary:llmprobe_time_to_first_token_seconds_p99:ratio_5m * 0 + 1.1`, "limit "+canaryLegend),
		).dashed("B", "red"),
		timeseries("TPOT p99: candidate / baseline", "Ratio of the candidate's TPOT p99 to the baseline's over 5 "+
			"minutes (canary:llmprobe_time_per_output_token_seconds_p99:ratio_5m). Dashed: llmprobe compare's default "+
			"limit, 1.10.", "short", 8,
			q(`canary:llmprobe_time_per_output_token_seconds_p99:ratio_5m`, canaryLegend),
			q(`canary:llmprobe_time_per_output_token_seconds_p99:ratio_5m * 0 + 1.1`, "limit "+canaryLegend),
		).dashed("B", "red"),
		timeseries("Goodput ratio by side", "Each side's goodput ratio over 5 minutes (canary_role:llmprobe_goodput:ratio_rate5m) "+
			"and the candidate's difference to the baseline (dashed: the alert fires below -0.05).", "percentunit", 8,
			q(`canary_role:llmprobe_goodput:ratio_rate5m`, canaryLegend+` {{role}}`),
			q(`canary:llmprobe_goodput:ratio_diff_rate5m`, "difference "+canaryLegend),
		).dashed("B", "purple"),
		timeseries("TTFT and TPOT p99 by side", "Each side's TTFT and TPOT p99 over 5 minutes, from the histograms of "+
			"every probe of every target of that side (canary_role:..._p99_5m).", "s", 12,
			q(`canary_role:llmprobe_time_to_first_token_seconds:p99_5m`, "TTFT "+canaryLegend+` {{role}}`),
			q(`canary_role:llmprobe_time_per_output_token_seconds:p99_5m`, "TPOT "+canaryLegend+` {{role}}`),
		).minZero(),
		timeseries("Requests by side", "Requests per second finished by each side (canary_role:llmprobe_requests:rate5m), "+
			"the traffic behind its percentiles.", "reqps", 12,
			q(`canary_role:llmprobe_requests:rate5m`, canaryLegend+` {{role}}`),
		).minZero(),
		timeseries("Means: candidate / baseline (10m, per probe)", "What LLMProbeCanaryRegression decides on: the "+
			"candidate's mean TPOT, ITL and TTFT over the baseline's, per probe over 10 minutes, from _sum / _count "+
			"(canary_probe:..._mean:ratio_10m), which no bucket hides. Dashed: the alert's limit for TPOT and ITL, "+
			"1.05 (1.10 for TTFT); two identical sides stay within 1 % (TPOT, ITL) and 7 % (TTFT).", "short", 24,
			q(`canary_probe:llmprobe_time_per_output_token_seconds_mean:ratio_10m`, "TPOT "+canaryLegend+` {{probe}}`),
			q(`canary_probe:llmprobe_inter_token_latency_seconds_mean:ratio_10m`, "ITL "+canaryLegend+` {{probe}}`),
			q(`canary_probe:llmprobe_time_to_first_token_seconds_mean:ratio_10m`, "TTFT "+canaryLegend+` {{probe}}`),
			q(`canary_probe:llmprobe_time_per_output_token_seconds_mean:ratio_10m * 0 + 1.05`, "limit "+canaryLegend+` {{probe}}`),
		).dashed("D", "red"),
	}}
}
