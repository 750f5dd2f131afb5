package simulator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// vLLM's frontends (Config.VLLMFrontend, `--vllm-frontend`): which HTTP
// server of vLLM the vLLM persona looks like. The engine underneath is the
// same.
const (
	// VLLMFrontendPython is vLLM's FastAPI server (the default).
	VLLMFrontendPython = "python"
	// VLLMFrontendRust is the Rust frontend vendored in vLLM 0.24
	// (VLLM_USE_RUST_FRONTEND=1; testdata/engines/vllm/0.24-rust-frontend/
	// README.md cites its source): /metrics as OpenMetrics 1.0 whatever
	// Accept says, with its own family set (no token counters, no
	// vllm:cache_config_info, vllm:request_success{finish_reason}); streams
	// whose finish_reason comes on a chunk of its own and that send no null
	// field; a /v1/models card owned by "vllm-frontend-rs" without
	// max_model_len.
	VLLMFrontendRust = "rust"
)

// VLLMFrontends are the values of --vllm-frontend.
var VLLMFrontends = []string{VLLMFrontendPython, VLLMFrontendRust}

// rustFrontend reports whether the persona is vLLM's Rust frontend.
func (c Config) rustFrontend() bool {
	return c.VLLMFrontend == VLLMFrontendRust && (c.Engine == "" || c.Engine == EngineVLLM)
}

// validateVLLMFrontend checks --vllm-frontend ("" is python) against the
// settings the Rust frontend cannot honour.
func (c Config) validateVLLMFrontend() error {
	switch {
	case c.VLLMFrontend != "" && !slices.Contains(VLLMFrontends, c.VLLMFrontend):
		return fmt.Errorf("--vllm-frontend must be one of python, rust, got %q", c.VLLMFrontend)
	case c.VLLMFrontend != VLLMFrontendRust:
		return nil
	case c.Engine != "" && c.Engine != EngineVLLM:
		return fmt.Errorf("--vllm-frontend rust needs --engine %s, got %q", EngineVLLM, c.Engine)
	case c.MetricsFormat != "" && c.MetricsFormat != MetricsFormatText && c.MetricsFormat != MetricsFormatOpenMetrics:
		return fmt.Errorf("--vllm-frontend rust serves /metrics as OpenMetrics only: leave --metrics-format unset, got %q", c.MetricsFormat)
	case c.LegacyMetricNames:
		return fmt.Errorf("--vllm-frontend rust has no legacy metric names: drop --legacy-metric-names")
	}
	return nil
}

// rustMetricsHandler serves reg as the Rust prometheus_client crate's
// encoder does, whatever Accept says: OpenMetrics 1.0 text, counters with
// _total samples and no _created ones, "# EOF".
func rustMetricsHandler(reg prometheus.Gatherer) http.Handler {
	return forceAccept(promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true}),
		"application/openmetrics-text;version=1.0.0")
}

// rustUntracked are the routes the Rust frontend's HTTP middleware does not
// count (rust/src/server/src/middleware/metrics.rs EXCLUDED_HANDLERS).
var rustUntracked = []string{"/metrics", "/health", "/load", "/ping", "/version", "/server_info",
	"/reset_prefix_cache", "/reset_mm_cache", "/reset_encoder_cache", "/collective_rpc", "/sleep", "/wake_up", "/is_sleeping"}

// Bucket bounds of the Rust frontend's families that the Python persona
// does not serve (rust/src/metrics/src/api_server.rs).
var (
	bucketsHTTPDuration      = []float64{0.1, 0.5, 1.0}
	bucketsHTTPDurationHighR = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 2.5, 3.0,
		3.5, 4.0, 4.5, 5.0, 7.5, 10.0, 30.0, 60.0}
)

// rustTokenBuckets is the Rust frontend's bucket list for its token-count
// histograms: build_1_2_5_buckets(131072), which ends with 131072 itself
// (rust/src/metrics/src/request.rs), not the Python frontend's
// max_model_len bound.
func rustTokenBuckets() []float64 {
	const top = 131072
	return append(buckets125(top), top)
}

// newVLLMRustMetrics registers the families of vLLM's Rust frontend
// (rust/src/metrics/src: scheduler.rs, request.rs, api_server.rs) with the
// help texts its encoder writes (the crate appends a period to each, so
// those that end with one get two). Families the frontend registers but
// fills only with a KV connector, speculative decoding, MFU counting or KV
// block sampling are left out: the crate writes no sample for them here
// either. The figures the frontend does not export go to unregistered
// metrics.
func newVLLMRustMetrics(reg prometheus.Registerer, cfg Config) *metrics {
	f := vllmFamilies{reg: reg, labels: prometheus.Labels{"model_name": cfg.Model, "engine": "0"}}
	labels, gauge, counter, histogram := f.labels, f.gauge, f.counter, f.histogram
	tokens := rustTokenBuckets()
	m := &metrics{
		running: gauge("vllm:num_requests_running", "Number of requests in model execution batches."),
		waiting: gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed."),
		kvUsage: gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage."),
		prefixQueries: counter("vllm:prefix_cache_queries_total",
			"Prefix cache queries, in terms of number of queried tokens."),
		prefixHits: counter("vllm:prefix_cache_hits_total",
			"Prefix cache hits, in terms of number of cached tokens.."),

		requestPrompt:     histogram("vllm:request_prompt_tokens", "Number of prefill tokens processed..", tokens),
		requestGeneration: histogram("vllm:request_generation_tokens", "Number of generation tokens processed..", tokens),
		maxNumGeneration: histogram("vllm:request_max_num_generation_tokens",
			"Histogram of maximum number of requested generation tokens..", tokens),
		paramsMaxTokens: histogram("vllm:request_params_max_tokens", "Histogram of the max_tokens request parameter..", tokens),
		paramsN:         histogram("vllm:request_params_n", "Histogram of the n request parameter..", bucketsParamsN),
		prefillKV: histogram("vllm:request_prefill_kv_computed_tokens",
			"Histogram of new KV tokens computed during prefill (excluding cached tokens)..", tokens),
		ttft: histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds..", bucketsTTFT),
		itl:  histogram("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds..", bucketsITL),
		e2e: histogram("vllm:e2e_request_latency_seconds",
			"Histogram of e2e request latency in seconds..", bucketsRequestLatency),
		queue: histogram("vllm:request_queue_time_seconds",
			"Histogram of time spent in WAITING phase for request..", bucketsRequestLatency),
		prefill: histogram("vllm:request_prefill_time_seconds",
			"Histogram of time spent in PREFILL phase for request..", bucketsRequestLatency),
		decode: histogram("vllm:request_decode_time_seconds",
			"Histogram of time spent in DECODE phase for request..", bucketsRequestLatency),
		inference: histogram("vllm:request_inference_time_seconds",
			"Histogram of time spent in RUNNING phase for request..", bucketsRequestLatency),
		tpot: histogram("vllm:request_time_per_output_token_seconds",
			"Histogram of time_per_output_token_seconds per request..", bucketsITL),

		// Not exported by the Rust frontend.
		waitingCapacity: dummyGauge(),
		preemptions:     dummyCounter(), mmQueries: dummyCounter(), mmHits: dummyCounter(),
		promptTokens: dummyCounter(), generationTokens: dummyCounter(),
		promptComputed: dummyCounter(), promptCacheHit: dummyCounter(), promptCached: dummyCounter(),
		iteration: dummyObserver(),
		finished:  dummyCounter(), prefillComputed: dummyCounter(), engineCalls: dummyCounter(),
		specDrafted: dummyCounter(), specAccepted: dummyCounter(), specSteps: dummyCounter(),

		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "http_requests_total", Help: "Total number of HTTP requests by method, status, and handler..",
		}, []string{"method", "status", "handler"}),
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "http_request_duration_seconds", Help: "Duration of HTTP requests in seconds grouped by method and handler..",
			Buckets: bucketsHTTPDuration,
		}, []string{"method", "handler"}),
	}
	highR := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "http_request_duration_highr_seconds", Help: "High-resolution duration of HTTP requests in seconds..",
		Buckets: bucketsHTTPDurationHighR,
	})
	m.httpDurationHighR = highR
	reg.MustRegister(m.httpRequests, m.httpDuration, highR)

	// vllm:request_success{model_name, engine, finish_reason}: the Rust
	// frontend's label is finish_reason (Python's is finished_reason).
	success := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vllm:request_success_total", Help: "Count of successfully processed requests..",
	}, []string{"model_name", "engine", "finish_reason"})
	reg.MustRegister(success)
	for _, r := range []string{finishStop, finishLength, finishAbort, finishError} {
		success.WithLabelValues(cfg.Model, "0", r)
	}
	m.success = success.MustCurryWith(labels)

	registerSelfMetrics(reg, m)
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// observeHTTP counts one answered request in the Rust frontend's HTTP
// families (http_requests_total, http_request_duration_seconds and the
// unlabelled high-resolution histogram); the Python persona has only the
// counter, counted by instrument.
func (m *metrics) observeHTTP(handler, method, status string, seconds float64) {
	if slices.Contains(rustUntracked, handler) {
		return
	}
	m.httpRequests.With(prometheus.Labels{"handler": handler, "method": method, "status": status}).Inc()
	m.httpDuration.WithLabelValues(method, handler).Observe(seconds)
	m.httpDurationHighR.Observe(seconds)
}

// rustModelCard is the Rust frontend's /v1/models entry
// (rust/src/server/src/routes/openai/models.rs list_models): no root,
// parent, max_model_len or permission, created 0.
func (s *Simulator) rustModelCard() map[string]any {
	return map[string]any{"id": s.cfg.Model, "object": "model", "created": 0, "owned_by": "vllm-frontend-rs"}
}

// The Rust frontend's stream chunks (rust/src/server/src/routes/openai:
// chat_completions.rs, completions.rs): every field left out when unset,
// so no null is ever sent; the chat role chunk has no content; the
// finish_reason comes on a chunk of its own (rustFinish); the usage chunk
// has empty choices.

// rustChunk is one chunk with choices (nil: empty choices) and use.
func (w *wire) rustChunk(choice map[string]any, use *usage) []byte {
	obj := "text_completion"
	if w.g.kind == kindChat {
		obj = "chat.completion.chunk"
	}
	choices := []any{}
	if choice != nil {
		choice["index"] = 0
		choices = append(choices, choice)
	}
	c := map[string]any{"id": w.id, "object": obj, "created": w.created, "model": w.model, "choices": choices}
	if use != nil {
		c["usage"] = use
	}
	b, _ := json.Marshal(c)
	return b
}

// rustRole is the chat role chunk: delta {"role": "assistant"} only.
func (w *wire) rustRole() []byte {
	return w.rustChunk(map[string]any{"delta": map[string]any{"role": "assistant"}}, w.continuous(0))
}

// rustToken is one chunk of generated text: chat deltas {content},
// {reasoning} or {tool_calls}, completions {text}.
func (w *wire) rustToken(text string, completion int) []byte {
	choice := map[string]any{}
	if w.lp != nil {
		choice["logprobs"] = w.lp
	}
	if w.g.kind != kindChat {
		choice["text"] = text
		return w.rustChunk(choice, w.continuous(completion))
	}
	delta := map[string]any{}
	if w.reasoning != "" {
		delta["reasoning"] = w.reasoning
	}
	switch {
	case w.seq != nil && w.seq.tool != nil:
		if w.toolStart && completion > w.seq.reasoning {
			// tool_call_start_chunk: the id, type and name alone; the
			// arguments follow in their own deltas (toolStartChunk).
			fn := map[string]any{"name": w.seq.tool.name}
			if text != "" { // not split by toolStartChunk
				fn["arguments"] = text
			}
			delta["tool_calls"] = []any{map[string]any{"index": 0, "id": "chatcmpl-tool-" + w.id, "type": "function", "function": fn}}
		} else if text != "" {
			delta["tool_calls"] = []any{map[string]any{"index": 0, "function": map[string]any{"arguments": text}}}
		}
	case text != "":
		delta["content"] = text
	}
	choice["delta"] = delta
	return w.rustChunk(choice, w.continuous(completion))
}

// rustFinish is the finish chunk: chat delta {}, completions text "", and
// the finish_reason.
func (w *wire) rustFinish(reason string, completion int) []byte {
	choice := map[string]any{"finish_reason": reason}
	if w.g.kind == kindChat {
		choice["delta"] = map[string]any{}
	} else {
		choice["text"] = ""
	}
	return w.rustChunk(choice, w.continuous(completion))
}

// rustUsage is the usage chunk: empty choices, usage {prompt_tokens,
// total_tokens, completion_tokens} and prompt_tokens_details when set.
func (w *wire) rustUsage(use usage) []byte {
	use.CompletionTokensDetails = nil
	return w.rustChunk(nil, &use)
}
