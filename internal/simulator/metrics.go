package simulator

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// vLLM V1 default histogram bounds (vllm/v1/metrics/buckets.py; see
// vllm-reference.md §2.3).
var (
	bucketsTTFT = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
		1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	bucketsITL = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75,
		1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	bucketsRequestLatency = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0,
		30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
	bucketsIterationTokens = []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}
	bucketsParamsN         = []float64{1, 2, 5, 10, 20}
)

// buckets125 is vLLM's build_1_2_5_buckets(max): 1, 2, 5, 10, 20, 50, ... <= max.
func buckets125(maxValue int) []float64 {
	var out []float64
	for exp := 1; ; exp *= 10 {
		for _, m := range []int{1, 2, 5} {
			v := m * exp
			if v > maxValue {
				return out
			}
			out = append(out, float64(v))
		}
	}
}

// Finish reasons, the values of vllm:request_success_total's finished_reason.
const (
	finishStop   = "stop"
	finishLength = "length"
	finishAbort  = "abort"
	finishError  = "error"
	// finishToolCalls ends a sequence that answered with a tool call
	// (reasoning.go).
	finishToolCalls = "tool_calls"
)

// metrics are the vLLM V1 engine metrics of one Simulator, registered on its
// own registry. Safe for concurrent use.
type metrics struct {
	running, waiting, kvUsage prometheus.Gauge
	// waitingCapacity is
	// vllm:num_requests_waiting_by_reason{reason="capacity"}: every
	// waiting request (the simulator defers none: reason="deferred" stays 0).
	waitingCapacity prometheus.Gauge

	prefixQueries, prefixHits, preemptions prometheus.Counter
	// mmQueries and mmHits are vllm:mm_cache_queries_total and
	// vllm:mm_cache_hits_total: images looked up in the multimodal cache
	// and found there (images.go).
	mmQueries, mmHits              prometheus.Counter
	promptTokens, generationTokens prometheus.Counter
	// promptComputed, promptCacheHit and promptCached are
	// vllm:prompt_tokens_by_source_total{source="local_compute"|
	// "local_cache_hit"} and vllm:prompt_tokens_cached_total, counted
	// with promptTokens at a request's first token.
	promptComputed, promptCacheHit, promptCached prometheus.Counter
	success                                      *prometheus.CounterVec // finished_reason

	ttft, itl, tpot                             prometheus.Observer
	e2e, queue, inference, prefill, decode      prometheus.Observer
	requestPrompt, requestGeneration, iteration prometheus.Observer
	paramsMaxTokens, maxNumGeneration, paramsN  prometheus.Observer

	httpRequests *prometheus.CounterVec // handler, method, status
	// httpDuration and httpDurationHighR are the Rust frontend's
	// http_request_duration_seconds{method,handler} and
	// http_request_duration_highr_seconds (vllmrust.go); nil otherwise.
	httpDuration      *prometheus.HistogramVec
	httpDurationHighR prometheus.Observer
	// prefillKV is vllm:request_prefill_kv_computed_tokens, the prompt
	// tokens a finished request computed (cache hits excluded): served by
	// the Rust frontend persona only (nil otherwise).
	prefillKV prometheus.Observer

	// Persona-only figures (unregistered for vLLM): requests finished
	// (not aborted), prompt tokens computed in engine steps (prefix-cache
	// hits excluded, recomputes included) and engine steps.
	finished, prefillComputed, engineCalls prometheus.Counter
	// specDrafted, specAccepted and specSteps are llama.cpp's
	// llamacpp:spec_decode_num_draft_tokens_total, _accepted_tokens_total
	// and _drafts_total, counted at a sequence's end by specDraft's rule
	// (the figures its timings carry).
	specDrafted, specAccepted, specSteps prometheus.Counter

	// Simulator-only self metrics (llmprobe_simulator_ prefix).
	engineSteps, engineStepSeconds, engineLag prometheus.Counter
}

// newMetrics registers the metrics of cfg's persona on reg.
func newMetrics(reg prometheus.Registerer, cfg Config) *metrics {
	if cfg.Engine != EngineVLLM && cfg.Engine != "" {
		return newPersonaMetrics(reg, cfg)
	}
	if cfg.rustFrontend() {
		return newVLLMRustMetrics(reg, cfg) // vllmrust.go
	}
	m := newVLLMMetrics(reg, cfg)
	m.finished, m.prefillComputed, m.engineCalls = dummyCounter(), dummyCounter(), dummyCounter()
	m.specDrafted, m.specAccepted, m.specSteps = dummyCounter(), dummyCounter(), dummyCounter()
	return m
}

// vllmFamilies registers families labelled model_name and engine, as
// both of vLLM's frontends label theirs, and returns each one's child of
// labels.
type vllmFamilies struct {
	reg    prometheus.Registerer
	labels prometheus.Labels
}

var vllmLabelNames = []string{"model_name", "engine"}

func (f vllmFamilies) gauge(name, help string) prometheus.Gauge {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, vllmLabelNames)
	f.reg.MustRegister(g)
	return g.With(f.labels)
}

func (f vllmFamilies) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, vllmLabelNames)
	f.reg.MustRegister(c)
	return c.With(f.labels)
}

func (f vllmFamilies) histogram(name, help string, buckets []float64) prometheus.Observer {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, vllmLabelNames)
	f.reg.MustRegister(h)
	return h.With(f.labels)
}

func newVLLMMetrics(reg prometheus.Registerer, cfg Config) *metrics {
	f := vllmFamilies{reg: reg, labels: prometheus.Labels{"model_name": cfg.Model, "engine": "0"}}
	labels, gauge, counter, histogram := f.labels, f.gauge, f.counter, f.histogram
	m := &metrics{
		running:          gauge("vllm:num_requests_running", "Number of requests in model execution batches."),
		waiting:          gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed."),
		preemptions:      counter("vllm:num_preemptions_total", "Cumulative number of preemption from the engine."),
		promptTokens:     counter("vllm:prompt_tokens_total", "Number of prefill tokens processed."),
		generationTokens: counter("vllm:generation_tokens_total", "Number of generation tokens processed."),

		ttft: histogram("vllm:time_to_first_token_seconds",
			"Histogram of time to first token in seconds.", bucketsTTFT),
		e2e: histogram("vllm:e2e_request_latency_seconds",
			"Histogram of e2e request latency in seconds.", bucketsRequestLatency),
		queue: histogram("vllm:request_queue_time_seconds",
			"Histogram of time spent in WAITING phase for request.", bucketsRequestLatency),
		inference: histogram("vllm:request_inference_time_seconds",
			"Histogram of time spent in RUNNING phase for request.", bucketsRequestLatency),
		prefill: histogram("vllm:request_prefill_time_seconds",
			"Histogram of time spent in PREFILL phase for request.", bucketsRequestLatency),
		decode: histogram("vllm:request_decode_time_seconds",
			"Histogram of time spent in DECODE phase for request.", bucketsRequestLatency),
		requestPrompt: histogram("vllm:request_prompt_tokens",
			"Number of prefill tokens processed.", buckets125(cfg.MaxModelLen)),
		requestGeneration: histogram("vllm:request_generation_tokens",
			"Number of generation tokens processed.", buckets125(cfg.MaxModelLen)),
		paramsMaxTokens: histogram("vllm:request_params_max_tokens",
			"Histogram of the max_tokens request parameter.", buckets125(cfg.MaxModelLen)),
		maxNumGeneration: histogram("vllm:request_max_num_generation_tokens",
			"Histogram of maximum number of requested generation tokens.", buckets125(cfg.MaxModelLen)),
		paramsN: histogram("vllm:request_params_n",
			"Histogram of the n request parameter.", bucketsParamsN),
		iteration: histogram("vllm:iteration_tokens_total",
			"Histogram of number of tokens per engine_step.", bucketsIterationTokens),

		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "http_requests_total", Help: "Total number of requests by method, status and handler.",
		}, []string{"handler", "method", "status"}),
	}
	reg.MustRegister(m.httpRequests)
	registerRenamed(reg, m, cfg, gauge, counter, histogram)

	registerSelfMetrics(reg, m)

	m.success = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vllm:request_success_total", Help: "Count of successfully processed requests.",
	}, []string{"model_name", "engine", "finished_reason"})
	reg.MustRegister(m.success)
	for _, r := range []string{finishStop, finishLength, finishAbort, finishError} {
		m.success.WithLabelValues(cfg.Model, "0", r)
	}
	m.success = m.success.MustCurryWith(labels)

	// vllm:cache_config_info: an info gauge whose labels are CacheConfig's
	// fields as Python str() renders them, plus engine.
	pyBool := func(b bool) string {
		if b {
			return "True"
		}
		return "False"
	}
	info := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "vllm:cache_config_info", Help: "Information of the LLMEngine CacheConfig",
	}, []string{"block_size", "cache_dtype", "calculate_kv_scales", "cpu_offload_gb", "enable_prefix_caching",
		"engine", "gpu_memory_utilization", "num_cpu_blocks", "num_gpu_blocks", "num_gpu_blocks_override",
		"prefix_caching_hash_algo", "sliding_window", "swap_space"})
	reg.MustRegister(info)
	info.WithLabelValues(strconv.Itoa(cfg.BlockSize), "auto", "False", "0", pyBool(cfg.EnablePrefixCaching),
		"0", "0.9", "0", strconv.Itoa(cfg.NumGPUBlocks), "None", "sha256", "None", "4").Set(1)

	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// registerRenamed registers the metrics whose names vLLM changed
// (docs/engines.md, "vLLM's metric names by version"): with legacy, as vLLM
// V1 before 0.9.2 named them (vllm:gpu_cache_usage_perc,
// vllm:gpu_prefix_cache_*, the per-step vllm:time_per_output_token_seconds,
// no per-request TPOT histogram, no waiting-by-reason gauge, no prompt-token
// sources); otherwise as current vLLM does (vllm:kv_cache_usage_perc,
// vllm:prefix_cache_*, vllm:inter_token_latency_seconds,
// vllm:request_time_per_output_token_seconds,
// vllm:num_requests_waiting_by_reason, vllm:prompt_tokens_by_source_total,
// vllm:prompt_tokens_cached_total). The figures are the same either way.
func registerRenamed(reg prometheus.Registerer, m *metrics, cfg Config,
	gauge func(name, help string) prometheus.Gauge,
	counter func(name, help string) prometheus.Counter,
	histogram func(name, help string, buckets []float64) prometheus.Observer,
) {
	if cfg.LegacyMetricNames {
		m.kvUsage = gauge("vllm:gpu_cache_usage_perc", "GPU KV-cache usage. 1 means 100 percent usage.")
		m.prefixQueries = counter("vllm:gpu_prefix_cache_queries_total",
			"GPU prefix cache queries, in terms of number of queried tokens.")
		m.prefixHits = counter("vllm:gpu_prefix_cache_hits_total",
			"GPU prefix cache hits, in terms of number of cached tokens.")
		m.itl = histogram("vllm:time_per_output_token_seconds",
			"Histogram of time per output token in seconds.", bucketsITL)
		m.tpot = dummyObserver()
		m.waitingCapacity = dummyGauge()
		m.promptComputed, m.promptCacheHit, m.promptCached = dummyCounter(), dummyCounter(), dummyCounter()
		m.mmQueries, m.mmHits = dummyCounter(), dummyCounter()
		return
	}
	m.mmQueries = counter("vllm:mm_cache_queries_total", "Multi-modal cache queries, in terms of number of queried items.")
	m.mmHits = counter("vllm:mm_cache_hits_total", "Multi-modal cache hits, in terms of number of cached items.")
	m.kvUsage = gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.")
	m.prefixQueries = counter("vllm:prefix_cache_queries_total",
		"Prefix cache queries, in terms of number of queried tokens.")
	m.prefixHits = counter("vllm:prefix_cache_hits_total",
		"Prefix cache hits, in terms of number of cached tokens.")
	m.itl = histogram("vllm:inter_token_latency_seconds",
		"Histogram of inter-token latency in seconds.", bucketsITL)
	m.tpot = histogram("vllm:request_time_per_output_token_seconds",
		"Histogram of time_per_output_token_seconds per request.", bucketsITL)
	byReason := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "vllm:num_requests_waiting_by_reason",
		Help: "Number of waiting requests by reason. Reason labels: 'capacity' = waiting for scheduling capacity; " +
			"'deferred' = deferred by transient constraints (LoRA budget, KV transfer, blocked status). " +
			"Sum of all reasons equals vllm:num_requests_waiting."}, []string{"model_name", "engine", "reason"})
	bySource := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vllm:prompt_tokens_by_source_total",
		Help: "Number of prompt tokens by source."}, []string{"model_name", "engine", "source"})
	reg.MustRegister(byReason, bySource)
	m.waitingCapacity = byReason.WithLabelValues(cfg.Model, "0", "capacity")
	byReason.WithLabelValues(cfg.Model, "0", "deferred")
	m.promptComputed = bySource.WithLabelValues(cfg.Model, "0", "local_compute")
	m.promptCacheHit = bySource.WithLabelValues(cfg.Model, "0", "local_cache_hit")
	bySource.WithLabelValues(cfg.Model, "0", "external_kv_transfer")
	m.promptCached = counter("vllm:prompt_tokens_cached_total", "Number of cached prompt tokens (local + external).")
}

// registerSelfMetrics registers the simulator's own llmprobe_simulator_
// metrics (every persona but Ollama, which has no /metrics).
func registerSelfMetrics(reg prometheus.Registerer, m *metrics) {
	m.engineSteps = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "llmprobe_simulator_engine_steps_total", Help: "Engine steps the simulator ran.",
	})
	m.engineStepSeconds = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "llmprobe_simulator_engine_step_seconds_total",
		Help: "Sum of the modeled durations of the engine steps (engine busy time in model time).",
	})
	m.engineLag = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "llmprobe_simulator_engine_lag_seconds_total",
		Help: "Wall-clock time the engine fell behind its model (host too slow) and did not catch up.",
	})
	reg.MustRegister(m.engineSteps, m.engineStepSeconds, m.engineLag)
}
