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
			q(fmt.Sprintf(`max by (cluster, target, probe) (llmprobe_slo_threshold_seconds{slo="%s", %s})`, slo, sel), "SLO "+tp),
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
			stat("Goodput (5m)", "Share of arrivals that were answered successfully and met every SLO, over 5 minutes "+
				"(target_probe:llmprobe_goodput:ratio_rate5m): good requests / (finished requests + arrivals skipped at "+
				"the max_concurrency cap). Colors assume the default 99 % objective.", "percentunit", 6,
				steps("red", 0.95, "orange", 0.99, "green"),
				instant(fmt.Sprintf(`target_probe:llmprobe_goodput:ratio_rate5m{%s}`, sel), tp)),
			stat("Error budget left (time range)", "Share of the goodput error budget (1 - the probe's objective) "+
				"not yet spent over the dashboard's time range; set the range to your SLO period (e.g. 30 days). "+
				"Negative: overspent. Counted like the goodput recording rules: arrivals skipped at the max_concurrency "+
				"cap count as bad; requests canceled by llmprobe itself (reload, shutdown) and too_long skips are left out.",
				"percentunit", 6,
				steps("red", 0.0, "orange", 0.25, "green"),
				instant(fmt.Sprintf(`1 - (
  1 - sum by (cluster, target, probe) (increase(llmprobe_good_requests_total{%[1]s}[$__range]))
  / (sum by (cluster, target, probe) (increase({__name__=~"llmprobe_requests_total|llmprobe_requests_skipped_total", outcome!="canceled", reason=~"|max_concurrency", %[1]s}[$__range])) > 0)
) / on (cluster, target, probe) (1 - target_probe:llmprobe_goodput_objective:ratio{%[1]s})`, sel), tp)),
			stat("Burn rate (1h)", "How fast the error budget is spent over the last hour (1 = exactly over the SLO "+
				"period). The fast burn-rate alert needs 14.4 over 1h and 5m, the slow one 6 over 6h and 30m.", "x", 6,
				steps("green", 6.0, "orange", 14.4, "red"),
				instant(fmt.Sprintf(`target_probe:llmprobe_goodput_budget_burn:ratio_rate1h{%s}`, sel), tp)),
			stat("Results valid?", "INVALID when more than 5 % of the sends of the last 10 minutes left over 100 ms "+
				"after their scheduled time (target_probe:llmprobe_requests_sent_late:ratio_rate10m), out of at least "+
				"100 sends: the prober cannot keep its schedule, so it offers less load than configured and its latency "+
				"includes its own delays. Fewer sends are not judged. The condition of LLMProbeProberSaturated, which "+
				"also stays quiet while the target fails or fills the max_concurrency cap (then the target is the cause).", "", 6,
				steps("green", 1.0, "red", 2.0, "blue"),
				instant(fmt.Sprintf(`(
  max by (cluster, target, probe) (target_probe:llmprobe_requests_sent_late:ratio_rate10m{%[1]s}) > bool 0.05
  and on (cluster, target, probe) max by (cluster, target, probe) (target_probe:llmprobe_requests_sent:increase10m{%[1]s}) >= 100
)
or on (cluster, target, probe)
max by (cluster, target, probe) (target_probe:llmprobe_requests_sent:increase10m{%[1]s}) * 0 + 2`, sel), tp),
			).valueMap(map[string][2]string{
				"0": {"valid", "green"}, "1": {"INVALID: prober saturated", "red"}, "2": {"not judged: < 100 sends in 10m", "blue"},
			}),
			timeseries("Goodput ratio", "Good requests / (finished requests + arrivals skipped at the max_concurrency "+
				"cap), not counting requests canceled by llmprobe itself or too_long skips, over 5 minutes and 1 hour "+
				"(the goodput recording rules), and each probe's objective (goodput_objective in llmprobe's "+
				"configuration, dashed).", "percentunit", 12,
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
				q(fmt.Sprintf(`sum by (cluster, target, probe, outcome) (rate(llmprobe_requests_total{%s}[$__rate_interval]))`, sel), "{{outcome}} "+tp),
			).minZero(),
		}},
		section{title: "Errors", panels: []*Panel{
			timeseries("Errors by class", "Failed requests per second by error class (outcome). canceled: stopped "+
				"by llmprobe itself (config reload, shutdown), not counted against the target.", "reqps", 12,
				q(fmt.Sprintf(`sum by (cluster, target, probe, outcome) (rate(llmprobe_requests_total{outcome!="success", %s}[$__rate_interval]))`, sel), "{{outcome}} "+tp),
			).bars(),
			timeseries("Error ratio by class (5m)", "Share of finished requests that failed, per error class "+
				"(requests canceled by llmprobe itself left out).", "percentunit", 12,
				q(fmt.Sprintf(`target_probe_outcome:llmprobe_requests_errors:ratio_rate5m{%s}`, sel), "{{outcome}} "+tp),
			).minZero(),
		}},
		section{title: "Prober", panels: []*Panel{
			timeseries("Requests in flight", "Requests sent and not finished yet.", "short", 8,
				q(fmt.Sprintf(`sum by (cluster, target, probe) (llmprobe_requests_in_flight{%s})`, sel), tp),
			).minZero(),
			timeseries("Sent and skipped", "Finished requests per second and arrivals skipped because the probe's "+
				"max_concurrency cap was full (the target is too slow for the offered load).", "reqps", 8,
				q(fmt.Sprintf(`sum by (cluster, target, probe) (rate(llmprobe_requests_total{%s}[$__rate_interval]))`, sel), "finished "+tp),
				q(fmt.Sprintf(`sum by (cluster, target, probe, reason) (rate(llmprobe_requests_skipped_total{%s}[$__rate_interval]))`, sel), "skipped ({{reason}}) "+tp),
			).minZero(),
			timeseries("Late sends (results invalid above 5 %)", "Share of the sends of the last 10 minutes that "+
				"left more than 100 ms after their scheduled arrival (target_probe:llmprobe_requests_sent_late:ratio_rate10m, "+
				"counted from the le=\"0.1\" bucket), and the send-lag p99 over 5 minutes (right axis, shown only: a p99 "+
				"of a few sends is one late send). Red area: above 5 % with at least 100 sends the prober is saturated "+
				"and its results are not trustworthy.", "percentunit", 8,
				q(fmt.Sprintf(`target_probe:llmprobe_requests_sent_late:ratio_rate10m{%s}`, sel), "late share "+tp),
				q(fmt.Sprintf(`target_probe:llmprobe_request_send_lag_seconds:p99_5m{%s}`, sel), "send lag p99 "+tp),
			).minZero().thresholdLines("line+area", steps("transparent", 0.05, "red")).rightAxis("send lag p99.*", "s"),
		}},
		canarySection(),
		replicasSection(),
		answerSection(),  // answers.go
		sessionSection(), // sessions.go
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
	const join = " Engines with a server TTFT histogram: vLLM and SGLang. The server's series are attributed to " +
		"the target through llmprobe_target_info's server_instance (the scrape job lists the address llmprobe " +
		"uses) or a target label the scrape job adds (see docs/rules-and-dashboards.md)."
	// Classic buckets first and open: every Prometheus ingests them by
	// default, native histograms only when asked to (see
	// docs/rules-and-dashboards.md), so the native heatmaps would open empty
	// for most users.
	return newDashboard("llmprobe-latency.json", "llmprobe-latency", "llmprobe / Latency detail",
		"Latency distributions (heatmaps of the classic buckets; native histograms in a collapsed row), quantiles, "+
			"time to first content beside TTFT, and client (llmprobe) against server (vLLM, SGLang) time to first token.",
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
				q(fmt.Sprintf(`histogram_quantile(0.5, sum by (cluster, target, probe, le) `+
					`(rate(llmprobe_time_to_first_content_seconds_bucket{%s}[5m])))`, sel), "content p50 "+tp),
				q(fmt.Sprintf(`histogram_quantile(0.99, sum by (cluster, target, probe, le) `+
					`(rate(llmprobe_time_to_first_content_seconds_bucket{%s}[5m])))`, sel), "content p99 "+tp),
			).minZero(),
		}},
		section{title: "Client against server TTFT", panels: []*Panel{
			timeseries("TTFT: client (llmprobe) and server", "Client TTFT of the probes and the server's "+
				"own TTFT over all its traffic (vllm:time_to_first_token_seconds, sglang:time_to_first_token_seconds), "+
				"p50 and p99 over 5 minutes (recording rules)."+join, "s", 12,
				q(fmt.Sprintf(`target_probe:llmprobe_time_to_first_token_seconds:p50_5m{%s}`, sel), "client p50 "+tp),
				q(fmt.Sprintf(`target_probe:llmprobe_time_to_first_token_seconds:p99_5m{%s}`, sel), "client p99 "+tp),
				q(`target:vllm_time_to_first_token_seconds:p50_5m{cluster=~"$cluster", target=~"$target"}`, "server p50 vLLM {{target}}"),
				q(`target:vllm_time_to_first_token_seconds:p99_5m{cluster=~"$cluster", target=~"$target"}`, "server p99 vLLM {{target}}"),
				q(`target:sglang_time_to_first_token_seconds:p50_5m{cluster=~"$cluster", target=~"$target"}`, "server p50 SGLang {{target}}"),
				q(`target:sglang_time_to_first_token_seconds:p99_5m{cluster=~"$cluster", target=~"$target"}`, "server p99 SGLang {{target}}"),
			).minZero(),
			timeseries("Client - server TTFT gap", "Client minus server TTFT (p50, p99, mean over 5 minutes): "+
				"network, HTTP and what the server does before its clock starts, plus the difference between the "+
				"probes' traffic and all traffic."+join, "s", 12,
				q(fmt.Sprintf(`target_probe:llmprobe_ttft_client_server_gap_seconds:p50_5m{%s}`, sel), "p50 "+tp),
				q(fmt.Sprintf(`target_probe:llmprobe_ttft_client_server_gap_seconds:p99_5m{%s}`, sel), "p99 "+tp),
				q(fmt.Sprintf(`target_probe:llmprobe_ttft_client_server_gap_seconds:mean_5m{%s}`, sel), "mean "+tp),
			),
			timeseries("Where the TTFT went: network, server queue, prefill", "Shares of the probe's mean TTFT over 5 "+
				"minutes: the client - server gap (network, TLS, proxies, gateway), vLLM's queue time "+
				"(vllm:request_queue_time_seconds) and its prefill time (vllm:request_prefill_time_seconds), "+
				"means over all the server's traffic. A trace of one request splits it exactly (docs/tracing.md)."+join, "percentunit", 24,
				q(fmt.Sprintf(`target_probe:llmprobe_ttft_network_share:ratio_5m{%s}`, sel), "network/gateway "+tp),
				q(fmt.Sprintf(`target_probe:llmprobe_ttft_server_queue_share:ratio_5m{%s}`, sel), "server queue "+tp),
				q(fmt.Sprintf(`target_probe:llmprobe_ttft_server_prefill_share:ratio_5m{%s}`, sel), "server prefill "+tp),
			).minZero(),
			timeseries("Where the TTFT went, per request: server queue, server TTFT, overhead", "The probe's own "+
				"requests split by the server's timing of each (vLLM's per-request metrics, asked with include_metrics "+
				"when the server runs with --enable-per-request-metrics; docs/measurement.md): means over 5 minutes of "+
				"the server's queue, its TTFT (scheduled to first token: the prefill) and the overhead (client TTFT - both: "+
				"network, gateways, frontend), which add up to those requests' mean TTFT; and the overhead's p99. "+
				"Empty for targets whose responses carry no such figure."+join, "s", 24,
				q(fmt.Sprintf(`target_probe:llmprobe_server_queue_seconds:mean_5m{%s}`, sel), "server queue "+tp),
				q(fmt.Sprintf(`target_probe:llmprobe_server_ttft_seconds:mean_5m{%s}`, sel), "server TTFT "+tp),
				q(fmt.Sprintf(`target_probe:llmprobe_ttft_overhead_seconds:mean_5m{%s}`, sel), "overhead "+tp),
				q(fmt.Sprintf(`target_probe:llmprobe_ttft_overhead_seconds:p99_5m{%s}`, sel), "overhead p99 "+tp),
			).minZero(),
		}},
	)
}

func serverCorrelation() *Dashboard {
	full := func(p *Panel) *Panel { p.GridPos.W = 24; return p.height(7) }
	half := func(p *Panel) *Panel { return p.height(8) }
	const attribution = " Server series are attributed to llmprobe targets through llmprobe_target_info's " +
		"server_instance (the server's scrape job lists the address llmprobe uses) or a target label the scrape " +
		"job adds (docs/rules-and-dashboards.md); they cover all of the server's traffic, not only the probes'."
	client := func(rule, what string) Target {
		return q(fmt.Sprintf(`target_probe:%s{%s}`, rule, sel), what+" client "+tp)
	}
	// vLLM's finished_reason split (stop, length, abort, error, ...).
	finishedByReason := serverExprBy("finished_reason", func(by, s string) string {
		return fmt.Sprintf("sum by (%s) (rate(vllm:request_success_total%s[$__rate_interval]))", by, s)
	})
	return newDashboard("llmprobe-server-correlation.json", "llmprobe-server-correlation",
		"llmprobe / Server correlation",
		"The serving engine's own state and latency (vLLM, SGLang, TGI, llama.cpp: running and waiting requests, "+
			"KV cache, token throughput, preemptions, prefix cache, server TTFT / ITL / TPOT / E2E / queue time, "+
			"finished requests) under llmprobe's latency and goodput, on one time axis, per llmprobe target. Each "+
			"panel has one query per engine that exports the figure; the others stay empty."+attribution,
		[]Annotation{
			alertAnnotation("Goodput burn-rate alerts", "red", "LLMProbeGoodputBudgetBurnFast|LLMProbeGoodputBudgetBurnSlow"),
			sweepAnnotation(),
		},
		section{title: "llmprobe (client)", panels: []*Panel{
			full(timeseries("llmprobe: TTFT and TPOT p99 (5m)", "Client-side latency of the probes.", "s", 24,
				q(fmt.Sprintf(`target_probe:llmprobe_time_to_first_token_seconds:p99_5m{%s}`, sel), "TTFT p99 "+tp),
				q(fmt.Sprintf(`target_probe:llmprobe_time_per_output_token_seconds:p99_5m{%s}`, sel), "TPOT p99 "+tp),
			).minZero()),
			full(timeseries("llmprobe: goodput ratio (5m)", "Share of probe arrivals that succeeded and met every SLO "+
				"(arrivals skipped at the max_concurrency cap count as bad).", "percentunit", 24,
				q(fmt.Sprintf(`target_probe:llmprobe_goodput:ratio_rate5m{%s}`, sel), tp),
			).ratio()),
		}},
		section{title: "Server load", panels: []*Panel{
			half(timeseries("Server: requests running and waiting", "Requests in the running batch and in the "+
				"waiting queue: vLLM vllm:num_requests_running / vllm:num_requests_waiting, SGLang "+
				"sglang:num_running_reqs / sglang:num_queue_reqs, TGI tgi_batch_current_size / tgi_queue_size, "+
				"llama.cpp llamacpp:requests_processing / llamacpp:requests_deferred. A growing queue precedes TTFT "+
				"growth."+attribution, "short", 12,
				serverTarget("vLLM", "running", gauge("sum", "vllm:num_requests_running")),
				serverTarget("vLLM", "waiting", gauge("sum", "vllm:num_requests_waiting")),
				serverTarget("SGLang", "running", gauge("sum", "sglang:num_running_reqs")),
				serverTarget("SGLang", "waiting", gauge("sum", "sglang:num_queue_reqs")),
				serverTarget("TGI", "running", gauge("sum", "tgi_batch_current_size")),
				serverTarget("TGI", "waiting", gauge("sum", "tgi_queue_size")),
				serverTarget("llama.cpp", "running", gauge("sum", "llamacpp:requests_processing")),
				serverTarget("llama.cpp", "waiting", gauge("sum", "llamacpp:requests_deferred")),
			).minZero()),
			half(timeseries("Server: KV-cache usage", "KV-cache usage of the fullest engine (1 = full): vLLM "+
				"vllm:kv_cache_usage_perc (before 0.9.2 vllm:gpu_cache_usage_perc), SGLang sglang:token_usage, llama.cpp llamacpp:kv_cache_usage_ratio (older "+
				"builds). Near 1, vLLM preempts requests and SGLang retracts them. TGI exports none."+attribution,
				"percentunit", 12,
				serverTarget("vLLM", "", gauge("max", "vllm:kv_cache_usage_perc")),
				serverTarget("SGLang", "", gauge("max", "sglang:token_usage")),
				serverTarget("llama.cpp", "", gauge("max", "llamacpp:kv_cache_usage_ratio")),
			).ratio().thresholdLines("dashed", steps("transparent", 0.9, "orange", 0.98, "red"))),
			half(timeseries("Server: token throughput", "Prompt and generation tokens per second: vLLM and SGLang "+
				"*:prompt_tokens_total / *:generation_tokens_total (vLLM's Rust frontend, which has no token counter: the sums of "+
				"vllm:request_prompt_tokens and vllm:request_generation_tokens), TGI the sums of tgi_request_input_length and "+
				"tgi_request_generated_tokens, llama.cpp llamacpp:prompt_tokens_total (tokens evaluated: prompt-cache "+
				"hits not counted) / llamacpp:tokens_predicted_total."+attribution, "short", 12,
				serverTarget("vLLM", "prompt", rateOr("vllm:prompt_tokens_total", "vllm:request_prompt_tokens_sum")),
				serverTarget("vLLM", "generation", rateOr("vllm:generation_tokens_total", "vllm:request_generation_tokens_sum")),
				serverTarget("SGLang", "prompt", rate("sglang:prompt_tokens_total")),
				serverTarget("SGLang", "generation", rate("sglang:generation_tokens_total")),
				serverTarget("TGI", "prompt", rate("tgi_request_input_length_sum")),
				serverTarget("TGI", "generation", rate("tgi_request_generated_tokens_sum")),
				serverTarget("llama.cpp", "prompt", rate("llamacpp:prompt_tokens_total")),
				serverTarget("llama.cpp", "generation", rate("llamacpp:tokens_predicted_total")),
			).minZero()),
			half(timeseries("Server: prefix-cache hit rate and preemptions", "Prompt tokens served from the prefix "+
				"cache / prompt tokens looked up (vLLM vllm:prefix_cache_hits_total / vllm:prefix_cache_queries_total, "+
				"before 0.9.2 vllm:gpu_prefix_cache_*; "+
				"SGLang sglang:cached_tokens_total / sglang:prompt_tokens_total), and vLLM's preemptions per second "+
				"(vllm:num_preemptions_total, right axis: the KV cache ran out and work is recomputed). TGI and "+
				"llama.cpp export no prefix-cache counter."+attribution, "percentunit", 12,
				serverTarget("vLLM", "prefix hits", ratio("vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total")),
				serverTarget("SGLang", "prefix hits", ratio("sglang:cached_tokens_total", "sglang:prompt_tokens_total")),
				serverTarget("vLLM", "preemptions/s", rate("vllm:num_preemptions_total")),
			).minZero().rightAxis("preemptions.*", "short")),
		}},
		section{title: "Server latency (all of the server's traffic)", panels: []*Panel{
			half(timeseries("TTFT p99: client and server", "Time to first token p99: the probes' (client, 5m "+
				"recording rule) and the server's own over 5 minutes (target:vllm_time_to_first_token_seconds:p99_5m, "+
				"target:sglang_time_to_first_token_seconds:p99_5m). TGI and llama.cpp have no TTFT histogram."+attribution,
				"s", 12,
				client("llmprobe_time_to_first_token_seconds:p99_5m", "TTFT p99"),
				q(`target:vllm_time_to_first_token_seconds:p99_5m{cluster=~"$cluster", target=~"$target"} `+byModel, "TTFT p99 vLLM {{target}}"),
				q(`target:sglang_time_to_first_token_seconds:p99_5m{cluster=~"$cluster", target=~"$target"} `+byModel, "TTFT p99 SGLang {{target}}"),
			).minZero()),
			half(timeseries("ITL p99: client and server", "Inter-token latency p99: the probes' (one gap per SSE "+
				"event) and the server's (one per engine step and request): vLLM vllm:inter_token_latency_seconds "+
				"(before 0.11 vllm:time_per_output_token_seconds), "+
				"SGLang sglang:inter_token_latency_seconds. A client ITL well above the server's is network batching "+
				"or a slow reader."+attribution, "s", 12,
				client("llmprobe_inter_token_latency_seconds:p99_5m", "ITL p99"),
				serverTarget("vLLM", "ITL p99", quantile(0.99, "vllm:inter_token_latency_seconds")),
				serverTarget("SGLang", "ITL p99", quantile(0.99, "sglang:inter_token_latency_seconds")),
			).minZero()),
			half(timeseries("TPOT: client and server", "Time per output token p99: the probes' and the server's "+
				"(vLLM vllm:request_time_per_output_token_seconds, TGI tgi_request_mean_time_per_token_duration), and "+
				"llama.cpp's mean decode time per generated token (llamacpp:tokens_predicted_seconds_total / "+
				"llamacpp:tokens_predicted_total; no histogram)."+attribution, "s", 12,
				client("llmprobe_time_per_output_token_seconds:p99_5m", "TPOT p99"),
				serverTarget("vLLM", "TPOT p99", quantile(0.99, "vllm:request_time_per_output_token_seconds")),
				serverTarget("TGI", "TPOT p99", quantile(0.99, "tgi_request_mean_time_per_token_duration")),
				serverTarget("llama.cpp", "TPOT mean", ratio("llamacpp:tokens_predicted_seconds_total", "llamacpp:tokens_predicted_total")),
			).minZero()),
			half(timeseries("E2E p99: client and server", "End-to-end request latency p99: the probes' (network "+
				"included) and the server's: vLLM vllm:e2e_request_latency_seconds, SGLang "+
				"sglang:e2e_request_latency_seconds, TGI tgi_request_duration."+attribution, "s", 12,
				client("llmprobe_e2e_request_latency_seconds:p99_5m", "E2E p99"),
				serverTarget("vLLM", "E2E p99", quantile(0.99, "vllm:e2e_request_latency_seconds")),
				serverTarget("SGLang", "E2E p99", quantile(0.99, "sglang:e2e_request_latency_seconds")),
				serverTarget("TGI", "E2E p99", quantile(0.99, "tgi_request_duration")),
			).minZero()),
			half(timeseries("Server: queue time", "Time requests waited in the server's queue before their first "+
				"scheduling, p99 and mean: vLLM vllm:request_queue_time_seconds, SGLang sglang:queue_time_seconds, TGI "+
				"tgi_request_queue_duration. Queue time is part of the client's TTFT."+attribution, "s", 12,
				serverTarget("vLLM", "p99", quantile(0.99, "vllm:request_queue_time_seconds")),
				serverTarget("vLLM", "mean", ratio("vllm:request_queue_time_seconds_sum", "vllm:request_queue_time_seconds_count")),
				serverTarget("SGLang", "p99", quantile(0.99, "sglang:queue_time_seconds")),
				serverTarget("SGLang", "mean", ratio("sglang:queue_time_seconds_sum", "sglang:queue_time_seconds_count")),
				serverTarget("TGI", "p99", quantile(0.99, "tgi_request_queue_duration")),
				serverTarget("TGI", "mean", ratio("tgi_request_queue_duration_sum", "tgi_request_queue_duration_count")),
			).minZero()),
			half(timeseries("Server: finished requests", "Requests the server finished per second: vLLM by "+
				"finished_reason (vllm:request_success_total: stop, length, abort, error, ...), SGLang "+
				"sglang:num_requests_total, TGI tgi_request_success (successes only). A rise of abort or error, or of "+
				"length where stop is expected, shows up here before in the client's error classes. The vLLM split "+
				"joins through the server instance only where one llmprobe target uses that instance; otherwise add "+
				"the target label to the scrape job."+attribution, "reqps", 12,
				q(finishedByReason, "{{finished_reason}} vLLM {{target}}"),
				serverTarget("SGLang", "finished", rate("sglang:num_requests_total")),
				serverTarget("TGI", "succeeded", rate("tgi_request_success")),
			).minZero()),
		}},
	)
}
