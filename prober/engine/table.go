package engine

import "github.com/llmprobe/llmprobe/prober/workload"

// The metric names of each engine, from its own source (docs/engines.md
// cites the files). Where an engine renamed a metric the newer name comes
// first.
var engines = map[Name]*Engine{
	// vLLM V1 (vllm/v1/metrics/loggers.py), each renamed figure with its
	// older name after the current one (docs/engines.md, "vLLM's metric
	// names by version"): vllm:gpu_cache_usage_perc and
	// vllm:gpu_prefix_cache_* until 0.11 (hidden) and V0, the per-step
	// vllm:time_per_output_token_seconds until 0.12 (hidden) and V0.
	// vllm:request_time_per_output_token_seconds (per-request TPOT) has no
	// older name: the old time_per_output_token_seconds observed ITL.
	VLLM: {
		name: VLLM, title: "vLLM", prefix: "vllm:",
		quantities: map[Quantity][]source{
			Running:      {{name: "vllm:num_requests_running", kind: gaugeSum}},
			Waiting:      {{name: "vllm:num_requests_waiting", kind: gaugeSum}},
			KVCacheUsage: {{name: "vllm:kv_cache_usage_perc", kind: gaugeMax}, {name: "vllm:gpu_cache_usage_perc", kind: gaugeMax}},
			// The Rust frontend (VLLM_USE_RUST_FRONTEND=1) registers no
			// token counters, only the per-request histograms; their sums
			// count the tokens of finished requests (the same over a step
			// that waits for its requests; testdata/engines/vllm/
			// 0.24-rust-frontend/README.md).
			PromptTokens:       {{name: "vllm:prompt_tokens_total", kind: counter}, {name: "vllm:request_prompt_tokens_sum", kind: counter}},
			GenerationTokens:   {{name: "vllm:generation_tokens_total", kind: counter}, {name: "vllm:request_generation_tokens_sum", kind: counter}},
			PrefillSeconds:     {{name: "vllm:request_prefill_time_seconds_sum", kind: counter}},
			DecodeSeconds:      {{name: "vllm:request_decode_time_seconds_sum", kind: counter}},
			PrefixCacheQueries: {{name: "vllm:prefix_cache_queries_total", kind: counter}, {name: "vllm:gpu_prefix_cache_queries_total", kind: counter}},
			PrefixCacheHits:    {{name: "vllm:prefix_cache_hits_total", kind: counter}, {name: "vllm:gpu_prefix_cache_hits_total", kind: counter}},
			// vLLM 0.12 on (vllm-project/vllm#26285); absent before.
			MultimodalCacheQueries: {{name: "vllm:mm_cache_queries_total", kind: counter}},
			MultimodalCacheHits:    {{name: "vllm:mm_cache_hits_total", kind: counter}},
			// vllm/v1/spec_decode/metrics.py, only with a speculative config.
			SpecDraftTokens:    {{name: "vllm:spec_decode_num_draft_tokens_total", kind: counter}},
			SpecAcceptedTokens: {{name: "vllm:spec_decode_num_accepted_tokens_total", kind: counter}},
			Preemptions:        {{name: "vllm:num_preemptions_total", kind: counter}},
			FinishedRequests:   {{name: "vllm:request_success_total", kind: counter}},
		},
		latencies: map[Latency][]string{
			TTFT:      {"vllm:time_to_first_token_seconds"},
			ITL:       {"vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"},
			TPOT:      {"vllm:request_time_per_output_token_seconds"},
			E2E:       {"vllm:e2e_request_latency_seconds"},
			QueueTime: {"vllm:request_queue_time_seconds"},
		},
		tokenize: workload.TokenizeVLLM, tokenizeChat: workload.TokenizeVLLM,
	},
	// SGLang (python/sglang/srt/metrics/collector.py). The prefix cache
	// is read as cached prompt tokens over prompt tokens.
	SGLang: {
		name: SGLang, title: "SGLang", prefix: "sglang:",
		quantities: map[Quantity][]source{
			Running:            {{name: "sglang:num_running_reqs", kind: gaugeSum}},
			Waiting:            {{name: "sglang:num_queue_reqs", kind: gaugeSum}},
			KVCacheUsage:       {{name: "sglang:token_usage", kind: gaugeMax}},
			PromptTokens:       {{name: "sglang:prompt_tokens_total", kind: counter}},
			GenerationTokens:   {{name: "sglang:generation_tokens_total", kind: counter}},
			PrefixCacheQueries: {{name: "sglang:prompt_tokens_total", kind: counter}},
			PrefixCacheHits:    {{name: "sglang:cached_tokens_total", kind: counter}},
			FinishedRequests:   {{name: "sglang:num_requests_total", kind: counter}},
		},
		latencies: map[Latency][]string{
			TTFT:      {"sglang:time_to_first_token_seconds"},
			ITL:       {"sglang:inter_token_latency_seconds", "sglang:time_per_output_token_seconds"},
			E2E:       {"sglang:e2e_request_latency_seconds"},
			QueueTime: {"sglang:queue_time_seconds"},
		},
		// SGLang's /tokenize takes a prompt, not chat messages.
		tokenize: workload.TokenizeVLLM, tokenizeChat: workload.TokenizeNone,
	},
	// TGI (docs/source/reference/metrics.md; router/src). Token counts
	// are the sums of the per-request length histograms.
	TGI: {
		name: TGI, title: "TGI", prefix: "tgi_",
		quantities: map[Quantity][]source{
			Running:          {{name: "tgi_batch_current_size", kind: gaugeSum}},
			Waiting:          {{name: "tgi_queue_size", kind: gaugeSum}},
			PromptTokens:     {{name: "tgi_request_input_length_sum", kind: counter}},
			GenerationTokens: {{name: "tgi_request_generated_tokens_sum", kind: counter}},
			FinishedRequests: {{name: "tgi_request_success", kind: counter}},
		},
		latencies: map[Latency][]string{
			TPOT:      {"tgi_request_mean_time_per_token_duration"},
			E2E:       {"tgi_request_duration"},
			QueueTime: {"tgi_request_queue_duration"},
		},
		tokenize: workload.TokenizeTGI, tokenizeChat: workload.TokenizeTGI,
	},
	// llama.cpp's llama-server with --metrics (tools/server/server.cpp;
	// server-task.cpp's server_task_result_metrics::to_metrics in newer
	// releases). llamacpp:prompt_tokens_total counts the prompt tokens
	// evaluated, excluding cached ones; releases with the RAM prompt cache
	// add llamacpp:prompt_tokens_cached_total ("prompt tokens reused from
	// the cache"), so the tokens looked up are the sum of the two.
	// It counts no finished requests (llamacpp:n_decode_total counts
	// decode calls, not requests), so a background sweep of it is refused
	// and the headroom rules have no rate for it.
	LlamaCpp: {
		name: LlamaCpp, title: "llama.cpp", prefix: "llamacpp:",
		quantities: map[Quantity][]source{
			Running:          {{name: "llamacpp:requests_processing", kind: gaugeSum}},
			Waiting:          {{name: "llamacpp:requests_deferred", kind: gaugeSum}},
			KVCacheUsage:     {{name: "llamacpp:kv_cache_usage_ratio", kind: gaugeMax}},
			PromptTokens:     {{name: "llamacpp:prompt_tokens_total", kind: counter}},
			GenerationTokens: {{name: "llamacpp:tokens_predicted_total", kind: counter}},
			PrefillSeconds:   {{name: "llamacpp:prompt_seconds_total", kind: counter}},
			DecodeSeconds:    {{name: "llamacpp:tokens_predicted_seconds_total", kind: counter}},
			PrefixCacheQueries: {{name: "llamacpp:prompt_tokens_total", kind: counter,
				plus: "llamacpp:prompt_tokens_cached_total"}},
			PrefixCacheHits: {{name: "llamacpp:prompt_tokens_cached_total", kind: counter}},
			// server-task.cpp's metrics of releases after the late-2025
			// split (testdata/engines/llamacpp/2025-12/README.md): zero
			// without a draft model.
			SpecDraftTokens:    {{name: "llamacpp:spec_decode_num_draft_tokens_total", kind: counter}},
			SpecAcceptedTokens: {{name: "llamacpp:spec_decode_num_accepted_tokens_total", kind: counter}},
		},
		tokenize: workload.TokenizeLlamaCpp, tokenizeChat: workload.TokenizeLlamaCpp,
	},
	// Ollama has no /metrics and no tokenizer endpoint.
	Ollama: {
		name: Ollama, title: "Ollama",
		tokenize: workload.TokenizeNone, tokenizeChat: workload.TokenizeNone,
		noMetrics: "Ollama serves no Prometheus /metrics",
	},
}
