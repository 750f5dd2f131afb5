package dashboards

import "fmt"

// All returns llmprobe's dashboards, freshly built, in file order. They are
// what cmd `go run ./dashboards/gen` writes to dashboards/*.json.
func All() []*Dashboard {
	return []*Dashboard{sloOverview(), latencyDetail(), serverCorrelation(), capacity()}
}

// histogram is one of llmprobe's latency histograms.
type histogram struct {
	short, name, family string
}

var latencyHistograms = []histogram{
	{"TTFT", "Time to first token", "llmprobe_time_to_first_token_seconds"},
	{"ITL", "Inter-token latency", "llmprobe_inter_token_latency_seconds"},
	{"TPOT", "Time per output token", "llmprobe_time_per_output_token_seconds"},
	{"E2E", "End-to-end request latency", "llmprobe_e2e_request_latency_seconds"},
}

func sloOverview() *Dashboard {
	latencyVsSLO := func(h histogram, slo string) *Panel {
		return timeseries(h.short+" p99 vs SLO",
			fmt.Sprintf("%s p99 over 5 minutes (recording rule) and the configured %s SLO threshold "+
				"(llmprobe_slo_threshold_seconds, dashed). Successful requests only.", h.name, slo), "s", 8,
			q(fmt.Sprintf(`target_probe:%s:p99_5m{%s}`, h.family, sel), "p99 "+tp),
			q(fmt.Sprintf(`max by (target, probe) (llmprobe_slo_threshold_seconds{slo="%s", %s})`, slo, sel), "SLO "+tp),
		).minZero().dashed("B", "red")
	}
	return newDashboard("llmprobe-slo-overview.json", "llmprobe-slo-overview", "llmprobe / SLO overview",
		"Goodput, error budget, latency against the SLO thresholds, errors by class and the prober's own health, "+
			"per llmprobe target and probe.",
		[]Annotation{
			alertAnnotation("Goodput burn-rate alerts", "red", "LLMProbeGoodputBudgetBurnFast|LLMProbeGoodputBudgetBurnSlow"),
			alertAnnotation("Prober saturated (results invalid)", "purple", "LLMProbeProberSaturated"),
			sweepAnnotation(),
		},
		section{title: "Goodput and error budget", panels: []*Panel{
			stat("Goodput (5m)", "Share of finished requests that succeeded and met every SLO, over 5 minutes "+
				"(target_probe:llmprobe_goodput:ratio_rate5m). Colors assume the default 99 % objective.", "percentunit", 6,
				steps("red", 0.95, "orange", 0.99, "green"),
				instant(fmt.Sprintf(`target_probe:llmprobe_goodput:ratio_rate5m{%s}`, sel), tp)),
			stat("Error budget left (time range)", "Share of the goodput error budget (1 - the probe's objective) "+
				"not yet spent over the dashboard's time range; set the range to your SLO period (e.g. 30 days). "+
				"Negative: overspent. Requests canceled by llmprobe itself (reload, shutdown) are left out.",
				"percentunit", 6,
				steps("red", 0.0, "orange", 0.25, "green"),
				instant(fmt.Sprintf(`1 - (
  1 - sum by (target, probe) (increase(llmprobe_good_requests_total{%[1]s}[$__range]))
  / (sum by (target, probe) (increase(llmprobe_requests_total{outcome!="canceled", %[1]s}[$__range])) > 0)
) / on (target, probe) (1 - target_probe:llmprobe_goodput_objective:ratio{%[1]s})`, sel), tp)),
			stat("Burn rate (1h)", "How fast the error budget is spent over the last hour (1 = exactly over the SLO "+
				"period). The fast burn-rate alert needs 14.4 over 1h and 5m, the slow one 6 over 6h and 30m.", "x", 6,
				steps("green", 6.0, "orange", 14.4, "red"),
				instant(fmt.Sprintf(`target_probe:llmprobe_goodput_budget_burn:ratio_rate1h{%s}`, sel), tp)),
			stat("Results valid?", "INVALID when the send-lag p99 over 5 minutes is above 10 ms: the prober cannot "+
				"keep its schedule, so it offers less load than configured and its latency includes its own delays "+
				"(alert LLMProbeProberSaturated).", "", 6,
				steps("green", 1.0, "red"),
				instant(fmt.Sprintf(`max by (target, probe) (target_probe:llmprobe_request_send_lag_seconds:p99_5m{%s}) > bool 0.01`, sel), tp),
			).valueMap(map[string][2]string{"0": {"valid", "green"}, "1": {"INVALID: prober saturated", "red"}}),
			timeseries("Goodput ratio", "Good requests / finished requests (not counting requests canceled by "+
				"llmprobe itself) over 5 minutes and 1 hour, and each probe's objective (goodput_objective in "+
				"llmprobe's configuration, dashed).", "percentunit", 12,
				q(fmt.Sprintf(`target_probe:llmprobe_goodput:ratio_rate5m{%s}`, sel), "5m "+tp),
				q(fmt.Sprintf(`target_probe:llmprobe_goodput:ratio_rate1h{%s}`, sel), "1h "+tp),
				q(fmt.Sprintf(`target_probe:llmprobe_goodput_objective:ratio{%s}`, sel), "objective "+tp),
			).ratio().dashed("C", "red"),
			timeseries("Error-budget burn rate", "Burn rate over the alert windows. Lines: 6 (slow alert, 6h and 30m) "+
				"and 14.4 (fast alert, 1h and 5m).", "x", 12,
				q(fmt.Sprintf(`target_probe:llmprobe_goodput_budget_burn:ratio_rate5m{%s}`, sel), "5m "+tp),
				q(fmt.Sprintf(`target_probe:llmprobe_goodput_budget_burn:ratio_rate30m{%s}`, sel), "30m "+tp),
				q(fmt.Sprintf(`target_probe:llmprobe_goodput_budget_burn:ratio_rate1h{%s}`, sel), "1h "+tp),
				q(fmt.Sprintf(`target_probe:llmprobe_goodput_budget_burn:ratio_rate6h{%s}`, sel), "6h "+tp),
			).minZero().thresholdLines("dashed", steps("transparent", 6.0, "orange", 14.4, "red")),
		}},
		section{title: "Latency against the SLO", panels: []*Panel{
			latencyVsSLO(latencyHistograms[0], "ttft"),
			latencyVsSLO(latencyHistograms[2], "tpot"),
			latencyVsSLO(latencyHistograms[3], "e2el"),
			timeseries("SLO attainment (5m)", "Share of successful requests that met each configured SLO threshold, "+
				"counted exactly by the prober (not read from histogram buckets).", "percentunit", 12,
				q(fmt.Sprintf(`target_probe_slo:llmprobe_slo_attainment:ratio_rate5m{%s}`, sel), "{{slo}} "+tp),
			).ratio(),
			timeseries("Request rate by outcome", "Finished requests per second by outcome.", "reqps", 12,
				q(fmt.Sprintf(`sum by (target, probe, outcome) (rate(llmprobe_requests_total{%s}[$__rate_interval]))`, sel), "{{outcome}} "+tp),
			).minZero(),
		}},
		section{title: "Errors", panels: []*Panel{
			timeseries("Errors by class", "Failed requests per second by error class (outcome). canceled: stopped "+
				"by llmprobe itself (config reload, shutdown), not counted against the target.", "reqps", 12,
				q(fmt.Sprintf(`sum by (target, probe, outcome) (rate(llmprobe_requests_total{outcome!="success", %s}[$__rate_interval]))`, sel), "{{outcome}} "+tp),
			).bars(),
			timeseries("Error ratio by class (5m)", "Share of finished requests that failed, per error class "+
				"(requests canceled by llmprobe itself left out).", "percentunit", 12,
				q(fmt.Sprintf(`target_probe_outcome:llmprobe_requests_errors:ratio_rate5m{%s}`, sel), "{{outcome}} "+tp),
			).minZero(),
		}},
		section{title: "Prober", panels: []*Panel{
			timeseries("Requests in flight", "Requests sent and not finished yet.", "short", 8,
				q(fmt.Sprintf(`sum by (target, probe) (llmprobe_requests_in_flight{%s})`, sel), tp),
			).minZero(),
			timeseries("Sent and skipped", "Finished requests per second and arrivals skipped because the probe's "+
				"max_concurrency cap was full (the target is too slow for the offered load).", "reqps", 8,
				q(fmt.Sprintf(`sum by (target, probe) (rate(llmprobe_requests_total{%s}[$__rate_interval]))`, sel), "finished "+tp),
				q(fmt.Sprintf(`sum by (target, probe, reason) (rate(llmprobe_requests_skipped_total{%s}[$__rate_interval]))`, sel), "skipped ({{reason}}) "+tp),
			).minZero(),
			timeseries("Send lag p99 (results invalid above 10 ms)", "How late requests left compared with their "+
				"scheduled arrival. Red area: the prober is saturated and its results are not trustworthy.", "s", 8,
				q(fmt.Sprintf(`target_probe:llmprobe_request_send_lag_seconds:p99_5m{%s}`, sel), "p99 5m "+tp),
			).minZero().thresholdLines("line+area", steps("transparent", 0.01, "red")),
		}},
	)
}

func latencyDetail() *Dashboard {
	var native, classic, quantiles []*Panel
	for _, h := range latencyHistograms {
		native = append(native, heatmap(h.name+" ("+h.short+")",
			h.name+" distribution from llmprobe's native histogram (needs Prometheus to ingest native histograms). "+
				"Successful requests only.",
			q(fmt.Sprintf(`sum(rate(%s{%s}[$__rate_interval]))`, h.family, sel), ""), false))
		classic = append(classic, heatmap(h.name+" ("+h.short+"), classic buckets",
			h.name+" distribution from the classic buckets (vLLM's bucket bounds).",
			q(fmt.Sprintf(`sum by (le) (rate(%s_bucket{%s}[$__rate_interval]))`, h.family, sel), ""), true))
		quantiles = append(quantiles, timeseries(h.short+" p50 / p90 / p99 (5m)",
			h.name+" quantiles over 5 minutes (recording rules).", "s", 12,
			q(fmt.Sprintf(`target_probe:%s:p50_5m{%s}`, h.family, sel), "p50 "+tp),
			q(fmt.Sprintf(`target_probe:%s:p90_5m{%s}`, h.family, sel), "p90 "+tp),
			q(fmt.Sprintf(`target_probe:%s:p99_5m{%s}`, h.family, sel), "p99 "+tp),
		).minZero())
	}
	const join = " Server series need the vLLM scrape job to add target=\"<llmprobe target name>\" " +
		"(see docs/rules-and-dashboards.md)."
	// Classic buckets first and open: every Prometheus ingests them by
	// default, native histograms only when asked to (see
	// docs/rules-and-dashboards.md), so the native heatmaps would open empty
	// for most users.
	return newDashboard("llmprobe-latency.json", "llmprobe-latency", "llmprobe / Latency detail",
		"Latency distributions (heatmaps of the classic buckets; native histograms in a collapsed row), quantiles, "+
			"time to first content beside TTFT, and client (llmprobe) against server (vLLM) time to first token.",
		[]Annotation{sweepAnnotation()},
		section{title: "Distributions (classic buckets)", panels: classic},
		section{title: "Distributions (native histograms)", collapsed: true, panels: native},
		section{title: "Quantiles", panels: quantiles},
		section{title: "Time to first content", panels: []*Panel{
			timeseries("TTFT and time to first content p50 / p99 (5m)", "Time to the first streamed event with "+
				"non-empty text or content (llmprobe_time_to_first_content_seconds) beside TTFT (the first event with "+
				"a non-empty choices array, vllm bench serve's rule). They differ in chat, where the role-only chunk "+
				"comes first: the gap is a wait that TTFT does not show and TPOT and ITL absorb. Successful requests "+
				"that streamed text only.", "s", 24,
				q(fmt.Sprintf(`target_probe:llmprobe_time_to_first_token_seconds:p50_5m{%s}`, sel), "TTFT p50 "+tp),
				q(fmt.Sprintf(`target_probe:llmprobe_time_to_first_token_seconds:p99_5m{%s}`, sel), "TTFT p99 "+tp),
				q(fmt.Sprintf(`histogram_quantile(0.5, sum by (target, probe, le) `+
					`(rate(llmprobe_time_to_first_content_seconds_bucket{%s}[5m])))`, sel), "content p50 "+tp),
				q(fmt.Sprintf(`histogram_quantile(0.99, sum by (target, probe, le) `+
					`(rate(llmprobe_time_to_first_content_seconds_bucket{%s}[5m])))`, sel), "content p99 "+tp),
			).minZero(),
		}},
		section{title: "Client against server TTFT", panels: []*Panel{
			timeseries("TTFT: client (llmprobe) and server (vLLM)", "Client TTFT of the probes and the server's "+
				"own TTFT over all its traffic (vllm:time_to_first_token_seconds), p50 and p99 over 5 minutes."+join, "s", 12,
				q(fmt.Sprintf(`target_probe:llmprobe_time_to_first_token_seconds:p50_5m{%s}`, sel), "client p50 "+tp),
				q(fmt.Sprintf(`target_probe:llmprobe_time_to_first_token_seconds:p99_5m{%s}`, sel), "client p99 "+tp),
				q(`target:vllm_time_to_first_token_seconds:p50_5m{target=~"$target"}`, "server p50 {{target}}"),
				q(`target:vllm_time_to_first_token_seconds:p99_5m{target=~"$target"}`, "server p99 {{target}}"),
			).minZero(),
			timeseries("Client - server TTFT gap", "Client minus server TTFT (p50, p99, mean over 5 minutes): "+
				"network, HTTP and what the server does before its clock starts, plus the difference between the "+
				"probes' traffic and all traffic."+join, "s", 12,
				q(fmt.Sprintf(`target_probe:llmprobe_ttft_client_server_gap_seconds:p50_5m{%s}`, sel), "p50 "+tp),
				q(fmt.Sprintf(`target_probe:llmprobe_ttft_client_server_gap_seconds:p99_5m{%s}`, sel), "p99 "+tp),
				q(fmt.Sprintf(`target_probe:llmprobe_ttft_client_server_gap_seconds:mean_5m{%s}`, sel), "mean "+tp),
			),
		}},
	)
}

func serverCorrelation() *Dashboard {
	full := func(p *Panel) *Panel { p.GridPos.W = 24; return p.height(7) }
	return newDashboard("llmprobe-server-correlation.json", "llmprobe-server-correlation",
		"llmprobe / Server correlation",
		"vLLM's own state (running and waiting requests, KV cache, preemptions, prefix cache) under llmprobe's "+
			"latency and goodput, on one time axis. vLLM series are chosen by model (model_name) and, when the vLLM "+
			"scrape job adds the target join label, by target; series without it are kept.",
		[]Annotation{
			alertAnnotation("Goodput burn-rate alerts", "red", "LLMProbeGoodputBudgetBurnFast|LLMProbeGoodputBudgetBurnSlow"),
			sweepAnnotation(),
		},
		section{title: "llmprobe (client)", panels: []*Panel{
			full(timeseries("llmprobe: TTFT and TPOT p99 (5m)", "Client-side latency of the probes.", "s", 24,
				q(fmt.Sprintf(`target_probe:llmprobe_time_to_first_token_seconds:p99_5m{%s}`, sel), "TTFT p99 "+tp),
				q(fmt.Sprintf(`target_probe:llmprobe_time_per_output_token_seconds:p99_5m{%s}`, sel), "TPOT p99 "+tp),
			).minZero()),
			full(timeseries("llmprobe: goodput ratio (5m)", "Share of probe requests that succeeded and met every SLO.",
				"percentunit", 24,
				q(fmt.Sprintf(`target_probe:llmprobe_goodput:ratio_rate5m{%s}`, sel), tp),
			).ratio()),
		}},
		section{title: "vLLM (server)", panels: []*Panel{
			full(timeseries("vLLM: requests running and waiting", "Requests in the running batch and in the "+
				"waiting queue (vllm:num_requests_running, vllm:num_requests_waiting). A growing queue precedes TTFT "+
				"growth.", "short", 24,
				q(fmt.Sprintf(`sum by (model_name) (vllm:num_requests_running{%s})`, vsel), "running {{model_name}}"),
				q(fmt.Sprintf(`sum by (model_name) (vllm:num_requests_waiting{%s})`, vsel), "waiting {{model_name}}"),
			).minZero()),
			full(timeseries("vLLM: KV cache usage", "KV cache usage per server (vllm:kv_cache_usage_perc, 1 = full). "+
				"Near 1, vLLM preempts requests.", "percentunit", 24,
				q(fmt.Sprintf(`max by (model_name, instance) (vllm:kv_cache_usage_perc{%s})`, vsel), "{{model_name}} {{instance}}"),
			).ratio().thresholdLines("dashed", steps("transparent", 0.9, "orange", 0.98, "red"))),
			full(timeseries("vLLM: preemptions", "Requests preempted per second (vllm:num_preemptions_total): the "+
				"KV cache ran out and work is recomputed.", "short", 24,
				q(fmt.Sprintf(`sum by (model_name) (rate(vllm:num_preemptions_total{%s}[$__rate_interval]))`, vsel), "{{model_name}}"),
			).minZero()),
			full(timeseries("vLLM: prefix-cache hit rate", "Prompt tokens served from the prefix cache / prompt "+
				"tokens looked up (vllm:prefix_cache_hits_total / vllm:prefix_cache_queries_total).", "percentunit", 24,
				q(fmt.Sprintf(`sum by (model_name) (rate(vllm:prefix_cache_hits_total{%[1]s}[$__rate_interval]))
/ (sum by (model_name) (rate(vllm:prefix_cache_queries_total{%[1]s}[$__rate_interval])) > 0)`, vsel), "{{model_name}}"),
			).ratio()),
			full(timeseries("vLLM: server TTFT p99 and token throughput", "The server's own TTFT p99 "+
				"(vllm:time_to_first_token_seconds, all traffic) and its prompt and generation tokens per second "+
				"(right axis).", "s", 24,
				q(fmt.Sprintf(`histogram_quantile(0.99, sum by (model_name, le) (rate(vllm:time_to_first_token_seconds_bucket{%s}[$__rate_interval])))`, vsel), "TTFT p99 {{model_name}}"),
				q(fmt.Sprintf(`sum by (model_name) (rate(vllm:prompt_tokens_total{%s}[$__rate_interval]))`, vsel), "prompt tok/s {{model_name}}"),
				q(fmt.Sprintf(`sum by (model_name) (rate(vllm:generation_tokens_total{%s}[$__rate_interval]))`, vsel), "generation tok/s {{model_name}}"),
			).minZero().rightAxis(".*tok/s.*", "short")),
		}},
	)
}
