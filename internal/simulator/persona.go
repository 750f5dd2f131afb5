package simulator

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Personas (Config.Engine, `--engine`): which engine the simulator looks
// like on the wire. The engine model underneath is the same for all; a
// persona changes the metric names, the info and tokenizer endpoints and
// the stream's quirks (docs/simulator.md lists them).
const (
	EngineVLLM     = "vllm"
	EngineSGLang   = "sglang"
	EngineTGI      = "tgi"
	EngineLlamaCpp = "llamacpp"
	EngineOllama   = "ollama"
	// EngineGeneric is an OpenAI-compatible server of no engine llmprobe
	// knows (generic.go).
	EngineGeneric = "generic"
)

// Engines lists the personas.
var Engines = []string{EngineVLLM, EngineSGLang, EngineTGI, EngineLlamaCpp, EngineOllama, EngineGeneric}

// Versions the personas report (the releases whose API they mimic, tagged
// as the simulator).
const (
	VersionSGLang   = "0.5.4+llmprobe.sim"
	VersionTGI      = "3.3.6+llmprobe.sim"
	VersionLlamaCpp = "b6500-llmprobe.sim"
	VersionOllama   = "0.12.6+llmprobe.sim"
	VersionGeneric  = "1.4.2+llmprobe.sim"
)

// version returns the server version of the persona.
func (c Config) version() string {
	switch c.Engine {
	case EngineSGLang:
		return VersionSGLang
	case EngineTGI:
		return VersionTGI
	case EngineLlamaCpp:
		return VersionLlamaCpp
	case EngineOllama:
		return VersionOllama
	case EngineGeneric:
		return VersionGeneric
	}
	return Version
}

// counterObserver adds every observation to a counter (llama.cpp's
// *_seconds_total counters sum per-request times).
type counterObserver struct{ prometheus.Counter }

func (c counterObserver) Observe(v float64) { c.Add(v) }

func dummyCounter() prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: "unexported"})
}

func dummyGauge() prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{Name: "unexported"})
}

func dummyObserver() prometheus.Observer {
	return prometheus.NewHistogram(prometheus.HistogramOpts{Name: "unexported"})
}

// newPersonaMetrics registers the metric names of a non-vLLM persona; the
// figures the engine does not export go to unregistered metrics.
func newPersonaMetrics(reg prometheus.Registerer, cfg Config) *metrics {
	m := &metrics{
		running: dummyGauge(), waiting: dummyGauge(), kvUsage: dummyGauge(),
		waitingCapacity: dummyGauge(),
		promptComputed:  dummyCounter(), promptCacheHit: dummyCounter(), promptCached: dummyCounter(),
		prefixQueries: dummyCounter(), prefixHits: dummyCounter(), preemptions: dummyCounter(),
		mmQueries: dummyCounter(), mmHits: dummyCounter(),
		promptTokens: dummyCounter(), generationTokens: dummyCounter(),
		finished: dummyCounter(), prefillComputed: dummyCounter(), engineCalls: dummyCounter(),
		specDrafted: dummyCounter(), specAccepted: dummyCounter(), specSteps: dummyCounter(),
		ttft: dummyObserver(), itl: dummyObserver(), tpot: dummyObserver(),
		e2e: dummyObserver(), queue: dummyObserver(), inference: dummyObserver(), prefill: dummyObserver(),
		decode: dummyObserver(), requestPrompt: dummyObserver(), requestGeneration: dummyObserver(),
		iteration: dummyObserver(), paramsMaxTokens: dummyObserver(), maxNumGeneration: dummyObserver(),
		paramsN:      dummyObserver(),
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "unexported"}, []string{"handler", "method", "status"}),
		success:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: "unexported"}, []string{"finished_reason"}),
	}
	if cfg.Engine == EngineOllama || cfg.Engine == EngineGeneric {
		m.engineSteps, m.engineStepSeconds, m.engineLag = dummyCounter(), dummyCounter(), dummyCounter()
		return m // Ollama and the generic server have no /metrics
	}
	// labels are those of every family (TGI and llama.cpp label none);
	// SGLang's scheduler families (sched: running, queued, token usage,
	// queue time) carry its scheduler's labels, its tokenizer families
	// the tokenizer manager's (labels).
	var labels, sched prometheus.Labels
	if cfg.Engine == EngineSGLang {
		labels = prometheus.Labels{"model_name": cfg.Model, "engine_type": "unified"}
		sched = prometheus.Labels{"model_name": cfg.Model, "engine_type": "unified", "tp_rank": "0", "pp_rank": "0"}
	}
	names := func(l prometheus.Labels) []string {
		n := make([]string, 0, len(l))
		for k := range l {
			n = append(n, k)
		}
		return n
	}
	gaugeWith := func(l prometheus.Labels, name, help string) prometheus.Gauge {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, names(l))
		reg.MustRegister(g)
		return g.With(l)
	}
	histogramWith := func(l prometheus.Labels, name, help string, buckets []float64) prometheus.Observer {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, names(l))
		reg.MustRegister(h)
		return h.With(l)
	}
	gauge := func(name, help string) prometheus.Gauge { return gaugeWith(labels, name, help) }
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, names(labels))
		reg.MustRegister(c)
		return c.With(labels)
	}
	histogram := func(name, help string, buckets []float64) prometheus.Observer {
		return histogramWith(labels, name, help, buckets)
	}
	switch cfg.Engine {
	case EngineSGLang:
		// python/sglang/srt/metrics/collector.py (SGLang's default buckets
		// are not reproduced: vLLM's are used); the labels are those the
		// scheduler and the tokenizer manager give their collectors
		// (testdata/engines/sglang/0.5/README.md).
		m.running = gaugeWith(sched, "sglang:num_running_reqs", "The number of running requests.")
		m.waiting = gaugeWith(sched, "sglang:num_queue_reqs", "The number of requests in the waiting queue.")
		m.kvUsage = gaugeWith(sched, "sglang:token_usage", "The token usage.")
		m.promptTokens = counter("sglang:prompt_tokens_total", "Number of prefill tokens processed.")
		m.generationTokens = counter("sglang:generation_tokens_total", "Number of generation tokens processed.")
		m.prefixHits = counter("sglang:cached_tokens_total", "Number of cached prompt tokens.")
		m.finished = counter("sglang:num_requests_total", "Number of requests processed.")
		m.ttft = histogram("sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.", bucketsTTFT)
		m.itl = histogram("sglang:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", bucketsITL)
		m.e2e = histogram("sglang:e2e_request_latency_seconds", "Histogram of End-to-end request latency in seconds",
			bucketsRequestLatency)
		m.queue = histogramWith(sched, "sglang:queue_time_seconds", "Histogram of queueing time in seconds.", bucketsRequestLatency)
	case EngineTGI:
		// docs/source/reference/metrics.md of text-generation-inference.
		m.running = gauge("tgi_batch_current_size", "Current batch size")
		m.waiting = gauge("tgi_queue_size", "Current queue size")
		m.finished = counter("tgi_request_success", "Number of successful requests")
		m.e2e = histogram("tgi_request_duration", "Total time spent processing the request (e2e latency)", bucketsRequestLatency)
		m.queue = histogram("tgi_request_queue_duration", "Time spent in the queue per request", bucketsRequestLatency)
		m.inference = histogram("tgi_request_inference_duration", "Request inference duration", bucketsRequestLatency)
		m.tpot = histogram("tgi_request_mean_time_per_token_duration",
			"Mean time per token per request (inter-token latency)", bucketsITL)
		m.requestPrompt = histogram("tgi_request_input_length", "Input token length per request", buckets125(cfg.MaxModelLen))
		m.requestGeneration = histogram("tgi_request_generated_tokens", "Generated tokens per request", buckets125(cfg.MaxModelLen))
		m.paramsMaxTokens = histogram("tgi_request_max_new_tokens", "Maximum new tokens per request", buckets125(cfg.MaxModelLen))
	case EngineLlamaCpp:
		// tools/server/server.cpp, handle_metrics (llama-server --metrics).
		m.prefillComputed = counter("llamacpp:prompt_tokens_total", "Number of prompt tokens processed, excluding cached tokens")
		// tools/server/server-task.cpp of releases with the RAM prompt
		// cache: the prompt tokens reused (the prefix cache's blocks, or
		// --prompt-cache's common prefix).
		m.prefixHits = counter("llamacpp:prompt_tokens_cached_total", "Number of prompt tokens reused from the cache")
		m.prefill = counterObserver{counter("llamacpp:prompt_seconds_total", "Prompt process time")}
		m.generationTokens = counter("llamacpp:tokens_predicted_total", "Number of generation tokens processed.")
		m.decode = counterObserver{counter("llamacpp:tokens_predicted_seconds_total", "Predict process time")}
		m.engineCalls = counter("llamacpp:n_decode_total", "Total number of llama_decode() calls")
		m.kvUsage = gauge("llamacpp:kv_cache_usage_ratio", "KV-cache usage. 1 means 100 percent usage.")
		m.running = gauge("llamacpp:requests_processing", "Number of requests processing.")
		m.waiting = gauge("llamacpp:requests_deferred", "Number of requests deferred.")
		// server-task.cpp's counters of releases after the late-2025
		// split (testdata/engines/llamacpp/2025-12/README.md), served
		// whether or not a draft model runs.
		m.specDrafted = counter("llamacpp:spec_decode_num_draft_tokens_total", "Speculative: Total draft tokens generated")
		m.specAccepted = counter("llamacpp:spec_decode_num_accepted_tokens_total",
			"Speculative: Total draft tokens accepted by the target model")
		m.specSteps = counter("llamacpp:spec_decode_num_drafts_total", "Speculative: Total speculative decoding verification steps")
	}
	registerSelfMetrics(reg, m)
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}
