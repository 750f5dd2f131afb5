package sweep

import (
	"strconv"
	"strings"
	"time"

	"github.com/llmprobe/llmprobe/prober/arrival"
	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/knob"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// MaxShards bounds Config.ShardCount.
const MaxShards = 1024

// Bounds of the load a sweep may ask of one process.
const (
	// MaxInFlight bounds Concurrency levels and MaxConcurrency
	// (knob.MaxInFlight, a probe's bound too).
	MaxInFlight = knob.MaxInFlight
	// MinRate is the lowest open-loop rate of a step, in req/s: one request
	// per 100 s, so a step of the default --min-prompts lasts at most about
	// 17 minutes (a rate of 1e-6 made an 11-day step; 1e-300 was sent as
	// a burst).
	MinRate = 0.01
	// MaxLevels bounds the levels of a sweep (--rates, --concurrency) and
	// the speeds of a trace replay.
	MaxLevels = 256
	// MaxRounds bounds --rounds (a sweep's repeats of each level; compare's
	// rounds in all): levels × rounds steps each keep their statistics and
	// up to MaxKneeSamples per-request samples until the run ends.
	MaxRounds = 100
	// MaxKneeRepeats bounds --knee-repeats.
	MaxKneeRepeats = 10
	// MaxAutoSteps bounds --auto-max-steps, the steps of an adaptive search.
	MaxAutoSteps = MaxLevels
	// MaxTimeout bounds a request's timeouts (--timeout, --ttft-timeout,
	// --stall-timeout; knob.MaxTimeout, a daemon probe's bound too).
	MaxTimeout = knob.MaxTimeout
	// MaxStepDuration bounds --duration, a step's arrival window.
	MaxStepDuration = 24 * time.Hour
	// MaxWait bounds a sweep's waits and intervals: --idle-timeout,
	// --step-interval, --metrics-interval and --max-send-lag.
	MaxWait = time.Hour
)

// inFlightText is the bound text of a level above MaxInFlight (the
// probes' too).
var inFlightText = knob.InFlightText

// DefaultCompareBudget is compare's --budget (prober/compare.ParseBudget):
// a wall time and requests per side that bound a comparison to about 20
// minutes; 5000 per side bound a p99 whose spread is a lognormal's of
// log-sd 0.35 within the default 10 % (docs/compare.md "Sequential
// rounds": identical sides pass 96 % of synthetic comparisons).
const DefaultCompareBudget = "20m,5000"

// stepRequestsText is the bound of a step's request counts (NumPrompts,
// MinPrompts, Warmups) beyond MaxStepRequests.
var stepRequestsText = "must be at most " + strconv.Itoa(MaxStepRequests) + " requests per step"

// settingsTable is every sweep setting, one entry each, in the order of
// `llmprobe sweep --help`, then the Config fields no user sets.
var settingsTable = []Setting{
	{Field: "Target", Flag: "target", Kind: KindString, Surfaces: SurfaceSweep,
		Doc: "Base URL of the OpenAI-compatible server, without /v1 (e.g. http://127.0.0.1:8000). " +
			"Without it, the built-in vLLM simulator is started in-process on a free loopback port and swept.",
		CompareHidden: true},
	{Field: "Model", Flag: "model", Kind: KindString, Surfaces: SurfaceSweep | SurfaceCompare,
		Doc: "Model id to request. Default: the first model /v1/models lists.",
		CompareDoc: "Model id requested from both sides (--baseline-model and --candidate-model override it). " +
			"Default: each side's first /v1/models entry."},
	{Field: "API", Flag: "api", Kind: KindString, Default: client.DefaultAPI, Surfaces: SurfaceSweep | SurfaceCompare,
		Doc: "API to call: completions (/v1/completions), chat (/v1/chat/completions), responses " +
			"(/v1/responses, the Responses API's event stream), embeddings (/v1/embeddings), rerank " +
			"(/v1/rerank, --rerank-path) or messages (/v1/messages, the Anthropic Messages API's event stream); " +
			"embeddings and rerank are sent non-streamed and measured by E2E."},
	{Field: "BatchSize", Flag: "batch-size", Kind: KindInt, Default: "1", Bound: Bound{HasMin: true, Max: float64(client.MaxInputs), HasMax: true}, Unit: "inputs", Surfaces: SurfaceSweep | SurfaceCompare,
		Doc: "Inputs per embeddings request, documents per rerank query (api embeddings and rerank only; " +
			"each input's length is drawn from the input length distribution; 0 is 1; the other APIs ignore it)."},
	{Field: "RerankPath", Flag: "rerank-path", Kind: KindString, Default: client.RerankV1, Surfaces: SurfaceSweep | SurfaceCompare,
		Doc: "Path of rerank requests: /v1/rerank (vLLM, Cohere-style), /rerank (vLLM, Jina-style) or /score " +
			"(vLLM's score API, text_1 and text_2)."},
	{Field: "APIKey", Flag: "api-key-file", Kind: KindString, Surfaces: SurfaceSweep | SurfaceCompare,
		Doc: "File holding the API key, sent as a bearer token. Keys are never taken from flags " +
			"and never written to logs or artifacts.",
		CompareDoc: "File holding the API key of both sides (--baseline-api-key-file and " +
			"--candidate-api-key-file override it)."},
	{Field: "HTTPConfig", Flag: "http.config.file", Kind: KindString, Surfaces: SurfaceSweep | SurfaceCompare,
		Doc: "YAML file with the target's HTTP client configuration (prometheus/common's, as " +
			"a target's http_config: tls_config, authorization or bearer_token_file, basic_auth, oauth2, proxy_url, " +
			"http_headers). Every request goes through it, /metrics included; its secrets never reach logs or " +
			"artifacts. Redirects are never followed. See docs/configuration.md."},
	{Field: "MetricsURL", Flag: "metrics-url", Kind: KindString, Surfaces: SurfaceSweep,
		Doc: "The server's Prometheus /metrics, read before, during and after each step. " +
			"Default: --target + /metrics.",
		CompareHidden: true},
	{Field: "GPUMetricsURL", Flag: "gpu-metrics-url", Kind: KindString, Surfaces: SurfaceSweep,
		Doc:           "A DCGM exporter's /metrics: each step's GPU energy, power and joules per good output token (docs/measurement.md). Default: none (energy not-recorded).",
		CompareHidden: true},
	{Field: "GPUSelector", Flag: "gpu-selector", Kind: KindString, Surfaces: SurfaceSweep,
		Doc:           "Label selector choosing the target's GPUs on --gpu-metrics-url, e.g. pod=\"vllm-0\",namespace=\"llm\". Default: every GPU.",
		CompareHidden: true},
	{Field: "Engine", Flag: "engine", Kind: KindString, Default: "auto", Surfaces: SurfaceSweep | SurfaceCompare,
		Doc: "The server's engine, whose metric names the idle proofs, server-side figures and the throughput " +
			"probe read: auto (detected from /metrics names, /v1/models owned_by or the engine's info endpoint), vllm, " +
			"sglang, tgi, llamacpp or ollama. See docs/engines.md."},
	{Field: "ServerTiming", Flag: "server-timing", Kind: KindString, Default: ServerTimingAuto, Surfaces: SurfaceSweep | SurfaceCompare,
		Doc: "Per-request server timing: auto asks a vLLM server (configured with --engine or detected) for its " +
			"per-request metrics with include_metrics on completions and chat requests (vLLM must run with " +
			"--enable-per-request-metrics), so that each request's TTFT splits into server queue, server TTFT and the rest " +
			"(records.jsonl, result.json, analysis.md); off sends it to no server. See docs/measurement.md."},
	{Field: "Timeout", Flag: "timeout", Kind: KindDuration, Default: DefaultTimeout.String(), Bound: Bound{HasMin: true, MinOpen: true, Max: float64(MaxTimeout), HasMax: true, MaxText: knob.TimeoutText}, Surfaces: SurfaceSweep | SurfaceCompare,
		Doc: "Total time limit of one request."},
	{Field: "TTFTTimeout", Flag: "ttft-timeout", Kind: KindDuration, Default: "0s", Bound: Bound{HasMin: true, Max: float64(MaxTimeout), HasMax: true, MaxText: knob.TimeoutText}, Surfaces: SurfaceSweep | SurfaceCompare,
		Doc: "Time limit to the first token event of a request (0: only --timeout)."},
	{Field: "StallTimeout", Flag: "stall-timeout", Kind: KindDuration, Default: "0s", Bound: Bound{HasMin: true, Max: float64(MaxTimeout), HasMax: true, MaxText: knob.TimeoutText}, Surfaces: SurfaceSweep | SurfaceCompare,
		Doc: "Longest pause between events of a stream before the request fails as a stall (0: none)."},
	{Field: "Workload.InputTokens", Flag: "input-len", Key: "input_len", Kind: KindInt, Default: strconv.Itoa(workload.DefaultSpec().InputTokens.Value), Bound: Bound{Min: 1, HasMin: true}, Unit: "tokens", Surfaces: SurfaceSweep | SurfaceCompare | SurfaceSpec,
		Doc: "Prompt tokens per request (vllm bench serve's --random-input-len), sized with the " +
			"server's tokenizer."},
	{Field: "Workload.OutputTokens", Flag: "output-len", Key: "output_len", Kind: KindInt, Default: strconv.Itoa(workload.DefaultSpec().OutputTokens.Value), Bound: Bound{Min: 1, HasMin: true}, Unit: "tokens", Surfaces: SurfaceSweep | SurfaceCompare | SurfaceSpec,
		Doc: "Output tokens per request (max_tokens, with ignore_eos)."},
	{Field: "Workload.InputTokens.RangeRatio", Flag: "range-ratio", Key: "range_ratio", Kind: KindFloat, Default: "0", Bound: Bound{HasMin: true, Max: 1, HasMax: true, MaxOpen: true}, Surfaces: SurfaceSweep | SurfaceCompare | SurfaceSpec,
		Doc: "Draw input and output lengths uniformly from [len*(1-r), len*(1+r)] (vLLM's " +
			"--random-range-ratio, 0 <= r < 1; 0 = fixed lengths)."},
	{Field: "Workload.PrefixTokens", Flag: "prefix-len", Key: "prefix_len", Kind: KindInt, Default: "0", Bound: Bound{HasMin: true}, Unit: "tokens", Surfaces: SurfaceSweep | SurfaceCompare | SurfaceSpec,
		Doc: "Tokens of a shared prefix prepended to every prompt (vLLM's --random-prefix-len). " +
			"Steps then report the prefix-cache hit rate of the warmup (cold) and the measured part (warm)."},
	{Field: "FreshPrefix", Flag: "fresh-prefix", Kind: KindBool, Surfaces: SurfaceSweep | SurfaceCompare,
		Doc: "Draw a new shared prefix for every step, so steps do not warm each other's prefix cache."},
	{Field: "Workload", Flag: "workload", Key: "workload", Kind: KindString, Surfaces: SurfaceSweep | SurfaceCompare | SurfaceSpec,
		Doc: "YAML workload file (input_tokens, output_tokens, prefix_tokens, ignore_eos, multi_turn; " +
			"distributions fixed, uniform, lognormal, choice) instead of --input-len/--output-len/--range-ratio. " +
			"With multi_turn (--api chat) each arrival starts a chat session and --rates are sessions/s."},
	{Field: "Workload.Dataset", Flag: "dataset", Kind: KindString, Surfaces: SurfaceSweep | SurfaceCompare,
		Doc: "Dataset file whose prompts the sweep sends: JSONL ({\"prompt\"} or {\"messages\"} per line, optional " +
			"max_tokens/output_tokens) or ShareGPT JSON (first human turn, the reply's length as the output length, vLLM's " +
			"pruning rules). Instead of --input-len/--range-ratio/--prefix-len/--workload; --output-len, when given, replaces " +
			"every entry's output length. See docs/workload.md."},
	{Field: "Workload.Dataset.Format", Flag: "dataset-format", Kind: KindString, Default: "auto", Surfaces: SurfaceSweep | SurfaceCompare,
		Doc: "Format of --dataset: auto (from the first byte), jsonl or sharegpt."},
	{Field: "Workload.Dataset.Sampling", Flag: "dataset-sampling", Kind: KindString, Default: workload.SamplingRandom, Surfaces: SurfaceSweep | SurfaceCompare,
		Doc: "How each step picks --dataset entries, from the step's seed: random (with replacement), " +
			"shuffle (without replacement; more requests than entries is an error), cycle (shuffle, going round again) " +
			"or sequential (file order)."},
	{Field: "Workload.Dataset.MaxEntries", Flag: "dataset-max-entries", Kind: KindInt, Default: strconv.Itoa(workload.DefaultDatasetMaxEntries), Bound: Bound{HasMin: true, Max: workload.MaxDatasetEntries, HasMax: true, Text: "must be 0 (every entry) to " + strconv.Itoa(workload.MaxDatasetEntries)}, Unit: "entries", Surfaces: SurfaceSweep | SurfaceCompare,
		Doc: "Measure and sample from at most this many --dataset entries (0: all): a subset chosen " +
			"once from --seed before any is counted (random, shuffle) or the first N in file order (sequential, cycle), " +
			"the same for every step; ShareGPT's pruning applies to the subset."},
	{Field: "SavePrompts", Flag: "save-prompts", Kind: KindBool, Surfaces: SurfaceSweep | SurfaceCompare,
		Doc: "Write the prompt text of every request into records.jsonl (off: no prompt text in artifacts)."},
	{Field: "Workload.Request.Temperature", Flag: "temperature", Kind: KindFloat, Surfaces: SurfaceSweep | SurfaceCompare,
		Doc: "Sampling temperature sent with every request (workload request.temperature; default: the server's)."},
	{Field: "Workload.Request.TopP", Flag: "top-p", Kind: KindFloat, Surfaces: SurfaceSweep | SurfaceCompare,
		Doc: "Nucleus sampling top_p sent with every request, in (0, 1]."},
	{Field: "Workload.Request.Seed", Flag: "sampling-seed", Kind: KindInt64, Surfaces: SurfaceSweep | SurfaceCompare,
		Doc: "The server's sampling seed sent as \"seed\" with every request (not --seed, the workload's)."},
	{Field: "Workload.Request.Stop", Flag: "stop", Kind: KindStrings, Surfaces: SurfaceSweep | SurfaceCompare,
		Doc: "A stop string sent with every request (repeatable)."},
	{Field: "AttributionHeaders", Flag: "attribution-header", Kind: KindStrings, Surfaces: SurfaceSweep | SurfaceCompare,
		Doc: "A response header that names the backend that answered behind a gateway (repeatable, at most 8, e.g. " +
			"x-served-by): recorded per request in records.jsonl (attribution, backend); docs/discovery.md."},
	{Field: "SLOHeaders", Flag: "slo-headers", Kind: KindBool, Surfaces: SurfaceSweep | SurfaceCompare,
		Doc: "Send the --goodput SLO with every request for an SLO-aware router: x-slo-ttft-ms and x-slo-tpot-ms " +
			"(milliseconds, for the thresholds set) and x-prediction-based-scheduling: true, the Gateway API Inference " +
			"Extension's headers (docs/configuration.md). A daemon sweep takes its target's slo_headers."},
	{Field: "Workload.Request.MinTokens", Flag: "min-tokens", Kind: KindInt, Default: "0", Unit: "tokens", Surfaces: SurfaceSweep | SurfaceCompare,
		Doc: "min_tokens sent with every request (vLLM; 0: none)."},
	{Field: "Workload.Request.ExtraBody", Flag: "extra-body", Kind: KindString, Surfaces: SurfaceSweep | SurfaceCompare,
		Doc: "A JSON object merged into every request body (e.g. '{\"repetition_penalty\":1.1}'); " +
			"keys llmprobe sets are refused. Features (no_stream, logprobs, json_schema, lora) come through --workload."},
	{Field: "Rates", Flag: "rates", Key: "rates", Kind: KindString, Bound: Bound{Min: MinRate, HasMin: true, MaxLen: MaxLevels}, Unit: "req/s", Surfaces: SurfaceSweep | SurfaceCompare | SurfaceSpec,
		Doc: "Open-loop request rates in req/s, one step each: a list such as 1,2,4,8; auto (adaptive " +
			"knee search: doubling, then bisection to within --auto-tolerance); or inf (every request of the step at " +
			"once: a burst, not an open loop). Default auto, unless --concurrency is given.",
		CompareDoc: "Open-loop request rates in req/s: one rate or a short ladder (e.g. 4 or 2,4,8), each round " +
			"running every level. auto is not offered: the knee search would not give both sides the same levels."},
	{Field: "Concurrency", Flag: "concurrency", Key: "concurrency", Kind: KindString, Bound: Bound{Min: 1, HasMin: true, Max: MaxInFlight, HasMax: true, MaxText: inFlightText, MaxLen: MaxLevels}, Unit: "requests", Surfaces: SurfaceSweep | SurfaceCompare | SurfaceSpec,
		Doc: "Closed loop instead of rates: a list of concurrency levels (e.g. 1,2,4,8), each step " +
			"keeping exactly N requests in flight."},
	{Field: "MaxConcurrency", Flag: "max-concurrency", Key: "max_concurrency", Kind: KindInt, Default: "0", Bound: Bound{HasMin: true, Max: MaxInFlight, HasMax: true, MaxText: inFlightText}, Unit: "requests", Surfaces: SurfaceSweep | SurfaceCompare | SurfaceSpec,
		Doc: "With --rates: cap the requests in flight; arrivals wait for a free slot, the wait " +
			"is reported as client queue time and the achieved rate beside the requested one (0: no cap)."},
	{Field: "MaxStepBytes", Flag: "max-step-bytes", Kind: KindString, Default: "1GiB", Bound: Bound{HasMin: true, MinOpen: true, ZeroDefault: true}, Unit: "bytes", Surfaces: SurfaceSweep | SurfaceCompare,
		Doc: "Cap on the bytes one step's records take in records.jsonl (a size such as 512MiB): " +
			"a step that reaches it stops sending, is flagged byte-cap and the sweep stops cleanly after it."},
	{Field: "Arrival", Flag: "arrival", Key: "arrival", Kind: KindString, Default: arrival.KindPoisson, Surfaces: SurfaceSweep | SurfaceCompare | SurfaceSpec,
		Doc: "Arrival process of the open loop: " + strings.Join(arrival.Kinds, ", ") +
			" (gamma with --burstiness)."},
	{Field: "Burstiness", Flag: "burstiness", Key: "burstiness", Kind: KindFloat, Default: "1", Bound: Bound{Min: arrival.MinBurstiness, HasMin: true, Max: arrival.MaxBurstiness, HasMax: true, Finite: true, Text: knob.BurstinessText}, Surfaces: SurfaceSweep | SurfaceCompare | SurfaceSpec,
		Doc: "Gamma shape of the inter-arrival times (vLLM's parametrisation): 1 = Poisson, " +
			"< 1 burstier, > 1 more regular."},
	{Field: "Unscaled", Flag: "unscaled-arrivals", Kind: KindBool, Surfaces: SurfaceSweep | SurfaceCompare,
		Doc: "Send each open-loop step on the arrival process's own absolute schedule " +
			"(the number of arrivals in the step varies as the process does) instead of vllm bench serve's " +
			"normalized schedule (N = rate x duration arrivals, the last at exactly N / rate)."},
	{Field: "NumPrompts", Flag: "num-prompts", Key: "num_prompts", Kind: KindInt, Default: "0", Bound: Bound{Min: 1, HasMin: true, Max: MaxStepRequests, HasMax: true, ZeroDefault: true, MaxText: stepRequestsText}, Unit: "requests per step", Surfaces: SurfaceSweep | SurfaceCompare | SurfaceSpec,
		Doc: "Requests per step (instead of --duration)."},
	{Field: "Duration", Flag: "duration", Key: "duration", Kind: KindDuration, Default: DefaultDuration.String(), Bound: Bound{HasMin: true, MinOpen: true, ZeroDefault: true, Max: float64(MaxStepDuration), HasMax: true, MaxText: "must be at most 24h"}, Surfaces: SurfaceSweep | SurfaceCompare | SurfaceSpec,
		Doc: "Length of each step's arrival window (instead of --num-prompts); the step then drains " +
			"its requests in flight."},
	{Field: "MinPrompts", SpecVia: "num_prompts", Flag: "min-prompts", Kind: KindInt, Default: strconv.Itoa(DefaultMinPrompts), Bound: Bound{HasMin: true, Max: MaxStepRequests, HasMax: true, MaxText: stepRequestsText}, Unit: "requests per step", Surfaces: SurfaceSweep | SurfaceCompare,
		Doc: "With --duration: the least number of requests of an open-loop step; at a low rate the " +
			"step runs past --duration until this many have been sent, so every step has a sample."},
	{Field: "Warmups", Flag: "warmups", Key: "warmups", Kind: KindInt, Default: strconv.Itoa(DefaultWarmups), Bound: Bound{HasMin: true, Max: MaxStepRequests, HasMax: true, MaxText: stepRequestsText}, Unit: "requests", Surfaces: SurfaceSweep | SurfaceCompare | SurfaceSpec,
		Doc: "Unmeasured warmup requests sent before each step (they warm connections and the prefix cache)."},
	{Field: "Rounds", Flag: "rounds", Key: "rounds", Kind: KindInt, Default: strconv.Itoa(DefaultRounds), Bound: Bound{Min: 1, Max: MaxRounds, HasMin: true, HasMax: true}, Surfaces: SurfaceSweep | SurfaceCompare | SurfaceSpec,
		Doc:            "Repeat each step this many times and report the spread; the knee uses every valid round.",
		CompareDefault: "4",
		CompareDoc: "Rounds of each look, both sides together (even, >= 2), in --order: 4 is one " +
			"A/B/B/A block. Each pair of rounds uses its own seed (--seed + pair), the same on both sides. With --budget off, " +
			"the rounds in all."},
	{Field: "Seed", Flag: "seed", Key: "seed", Kind: KindInt64, Default: "0", Surfaces: SurfaceSweep | SurfaceCompare | SurfaceSpec,
		Doc: "Seed of the arrival times and workload draws (each step derives its own)."},
	{Field: "PromptNonce", Flag: "prompt-nonce", Key: "prompt_nonce", Kind: KindInt64, Default: "0", Bound: Bound{HasMin: true}, Surfaces: SurfaceSweep | SurfaceCompare | SurfaceSpec,
		Doc: "Nonce mixed into the prompt texts (not their lengths nor the arrivals, which --seed decides), so that no " +
			"earlier run's prompts meet the server's prefix or prompt cache. 0: a fresh one per run, recorded in result.json " +
			"(prompt_nonce); give a run's nonce back to repeat its prompts exactly (and see the cache hits they cause).",
		CompareDoc: "Nonce of the prompt texts: every round of both sides gets its own, derived from it (the two rounds of a " +
			"pair share lengths and arrivals, not texts). 0: a fresh one, recorded in the compare run's result.json (prompt_nonce, and each round's); give it back to repeat a comparison's prompts."},
	{Field: "ShardIndex", Flag: "shard-index", Kind: KindInt, Default: "0", Surfaces: SurfaceSweep | SurfaceCompare,
		Doc: "This process's shard, 0..--shard-count-1 (a Kubernetes Indexed Job's $(JOB_COMPLETION_INDEX)): " +
			"it sends each rate divided by --shard-count with a seed of its own; `llmprobe merge` combines the shards' run directories."},
	{Field: "ShardCount", Flag: "shard-count", Kind: KindInt, Default: "0", Bound: Bound{HasMin: true, Max: MaxShards, HasMax: true, Text: "must be in 0..1024"}, Unit: "shards", Surfaces: SurfaceSweep | SurfaceCompare,
		Doc: "Number of shards sending the sweep together (0 or 1: not sharded); needs --rates LIST."},
	{Field: "StartAt", Flag: "start-at", Kind: KindString, Surfaces: SurfaceSweep | SurfaceCompare,
		Doc: "Align the steps on the wall clock: the k-th step's load starts at this time + k x --step-interval " +
			"(RFC 3339, or Unix seconds), so shards start each step together."},
	{Field: "StepInterval", Flag: "step-interval", Kind: KindDuration, Bound: Bound{HasMin: true, Max: float64(MaxWait), HasMax: true, MaxText: "must be at most 1h"}, Surfaces: SurfaceSweep | SurfaceCompare,
		Doc: "With --start-at: the wall-clock period between step starts (longer than a step with its idle wait and warmups)."},
	{Field: "SLO", Flag: "goodput", Key: "goodput", Kind: KindStrings, Unit: "ms", Surfaces: SurfaceSweep | SurfaceCompare | SurfaceSpec,
		Doc: "SLO thresholds in milliseconds, vllm bench serve's syntax: --goodput ttft:800 tpot:50 " +
			"e2el:5000 (keys ttft, tpot, e2el; several pairs after one flag, or the flag repeated). A request is good " +
			"when it succeeded and every threshold holds; a step's SLOs hold when their p99s do."},
	{Field: "Percentiles", Flag: "percentiles", Kind: KindString, Bound: Bound{HasMin: true, Max: 100, HasMax: true, MaxLen: MaxLevels}, Surfaces: SurfaceSweep | SurfaceCompare,
		Doc: "Extra latency percentiles reported beside p50, p90 and p99 (e.g. 75,99.9)."},
	{Field: "Validity.MaxSendLag", Flag: "max-send-lag", Key: "max_send_lag", Kind: KindDuration, Default: DefaultMaxSendLag.String(), Bound: Bound{HasMin: true, MinOpen: true, ZeroDefault: true, Max: float64(MaxWait), HasMax: true, MaxText: "must be at most 1h"}, Surfaces: SurfaceSweep | SurfaceCompare | SurfaceSpec,
		Doc: "Validity: a step whose client send-lag p99 exceeds this is client-saturated."},
	{Field: "Validity.MaxClientCPU", Flag: "max-client-cpu", Key: "max_client_cpu", Kind: KindFloat, Default: strconv.FormatFloat(DefaultMaxClientCPU, 'g', -1, 64), Bound: Bound{HasMin: true, MinOpen: true, ZeroDefault: true, Max: 1024, HasMax: true}, Unit: "cores", Surfaces: SurfaceSweep | SurfaceCompare | SurfaceSpec,
		Doc: "Validity: a step during which this process used more CPU than this many cores " +
			"is client-saturated (not checked against the in-process simulator, which shares the process)."},
	{Field: "Validity.MaxErrorRate", DaemonDefault: true, Flag: "max-error-rate", Kind: KindFloat, Default: strconv.FormatFloat(DefaultMaxErrorRate, 'g', -1, 64), Bound: Bound{HasMin: true, MinOpen: true, Max: 1, HasMax: true, ZeroDefault: true}, Surfaces: SurfaceSweep | SurfaceCompare,
		Doc: "Validity: a step whose failed/requests ratio exceeds this is flagged errors."},
	{Field: "Validity.MaxSchedLatency", Flag: "max-sched-latency", Key: "max_sched_latency", Kind: KindDuration, Default: DefaultMaxSchedLatency.String(), Bound: Bound{HasMin: true, MinOpen: true, ZeroDefault: true, Max: float64(MaxWait), HasMax: true, MaxText: "must be at most 1h"}, Surfaces: SurfaceSweep | SurfaceCompare | SurfaceSpec,
		Doc: "Validity: a step over which the p99 of Go's scheduling latency (runtime/metrics /sched/latencies:seconds: how long " +
			"this process's runnable goroutines, the stream readers among them, waited to run) exceeds this is client-read-lag: " +
			"its read timestamps are late although its sends may keep their schedule (a busy host, CPU throttling)."},
	{Field: "SweepMode", Flag: "sweep-mode", Key: "sweep_mode", Kind: KindString, Default: SweepIsolated, Surfaces: SurfaceSweep | SurfaceSpec,
		Doc: "isolated (every step starts from an idle server) or background (steps run beside the server's production " +
			"traffic without waiting for idle; its request counter gives the production rate of each step, and the knee is " +
			"reported in total requests/s with the production share beside it). See docs/sweep.md#background-sweeps."},
	{Field: "BackgroundBand", Flag: "background-band", Key: "background_band", Kind: KindFloat, Default: strconv.FormatFloat(DefaultBackgroundBand, 'g', -1, 64), Bound: Bound{HasMin: true, MinOpen: true, Max: MaxBackgroundBand, HasMax: true, ZeroDefault: true}, Surfaces: SurfaceSweep | SurfaceSpec,
		Doc: "--sweep-mode background: a step is flagged production-unsteady when the production rate of either half of it " +
			"differs from the whole step's by more than this fraction (of at least 1 req/s), in (0, 1]."},
	{Field: "Search.Start", SpecVia: "rates", Flag: "auto-start", Kind: KindString, Default: "probe", Bound: Bound{HasMin: true, MinOpen: true, Finite: true, ZeroDefault: true}, Unit: "req/s", Surfaces: SurfaceSweep,
		Doc: "--rates auto: the first rate tried, in req/s, or probe: a short closed-loop throughput probe " +
			"(concurrency 32, 128, 512, 2048 until the throughput stops growing) estimates the capacity and the search starts there.",
		CompareHidden: true},
	{Field: "Search.MaxSteps", SpecVia: "rates", DaemonDefault: true, Flag: "auto-max-steps", Kind: KindInt, Default: strconv.Itoa(DefaultAutoMaxSteps), Bound: Bound{Min: 1, Max: MaxAutoSteps, HasMin: true, HasMax: true, ZeroDefault: true}, Unit: "steps", Surfaces: SurfaceSweep,
		Doc:           "--rates auto: the most steps run, reruns of invalid levels included.",
		CompareHidden: true},
	{Field: "Search.Repeats", Flag: "knee-repeats", Kind: KindInt, Default: strconv.Itoa(DefaultKneeRepeats), Bound: Bound{Min: 1, Max: MaxKneeRepeats, HasMin: true, HasMax: true, ZeroDefault: true}, Unit: "runs", Surfaces: SurfaceSweep,
		Doc: "The valid runs, each with arrivals of its own, of the knee level and of the first failing level above it " +
			"(--rates auto, and a ladder of one round, which reruns them after its last level); the reruns back the knee's " +
			"interval with their spread and cost at most this many steps per level (1: none).",
		CompareHidden: true},
	{Field: "Search.Tolerance", SpecVia: "rates", DaemonDefault: true, Flag: "auto-tolerance", Kind: KindFloat, Default: strconv.FormatFloat(DefaultAutoTolerance, 'g', -1, 64), Bound: Bound{HasMin: true, MinOpen: true, Max: 1, HasMax: true, MaxOpen: true, ZeroDefault: true}, Surfaces: SurfaceSweep,
		Doc: "--rates auto: stop when the highest passing and lowest failing rates are within " +
			"this relative distance.",
		CompareHidden: true},
	{Field: "MetricsInterval", DaemonDefault: true, Flag: "metrics-interval", Kind: KindDuration, Default: DefaultMetricsInterval.String(), Bound: Bound{HasMin: true, MinOpen: true, Max: float64(MaxWait), HasMax: true, MaxText: "must be at most 1h"}, Surfaces: SurfaceSweep | SurfaceCompare,
		Doc: "Period of the /metrics scrapes during a step (metrics-during.txt, max running, " +
			"waiting and KV usage)."},
	{Field: "IdleTimeout", DaemonDefault: true, Flag: "idle-timeout", Kind: KindDuration, Default: DefaultIdleTimeout.String(), Bound: Bound{HasMin: true, Max: float64(MaxWait), HasMax: true, MaxText: "must be at most 1h"}, Surfaces: SurfaceSweep | SurfaceCompare,
		Doc: "Before each step, wait up to this long for the server's running + waiting request gauges " +
			"(vLLM's vllm:num_requests_running and _waiting, or the detected engine's: docs/engines.md) " +
			"to read 0; a step that never saw it is flagged not-idle."},
	{Field: "OutDir", Flag: "out", Kind: KindString, Default: "runs", Surfaces: SurfaceSweep | SurfaceCompare,
		Doc: "Directory under which the run directory <UTC stamp>-<name>/ is created."},
	{Field: "Name", Flag: "name", Key: "name", Kind: KindString, Default: "sweep", Surfaces: SurfaceSweep | SurfaceCompare | SurfaceSpec,
		Doc:            "Run name, the suffix of the run directory.",
		CompareDefault: "compare", SpecDefault: "api"},
	{Field: "Metadata", Flag: "metadata", Kind: KindStrings, Surfaces: SurfaceSweep | SurfaceCompare,
		Doc: "KEY=VALUE written into result.json and the fingerprint (repeatable), as vLLM's --metadata."},
	{Field: "CostPerHour", Flag: "cost-per-hour", Kind: KindFloat, Default: "0", Bound: Bound{HasMin: true, Max: MaxCostPerHour, HasMax: true, Finite: true, Text: knob.CostPerHourText}, Unit: "USD per hour", Surfaces: SurfaceSweep | SurfaceCompare,
		Doc: "Price of the target's serving in USD per hour (e.g. 2.5 for one GPU): every step and " +
			"the knee then report the cost per million good output tokens, price / (good output tokens/s x 3600) x 1e6, " +
			"counting only requests that met every SLO (so SLO misses cost more). Recorded in result.json and the manifest. " +
			"0: no price."},
	{Field: "AnswerChecks", Flag: "answer-checks", Key: "answer_checks", Kind: KindString, Surfaces: SurfaceSweep | SurfaceCompare | SurfaceSpec,
		Doc: "Answer checks sent once after the last step of a complete sweep: builtin (the embedded set) or the path of a " +
			"JSONL check set (docs/quality.md). Each reply is judged and recorded in result.json (answers) and analysis.md; no " +
			"step's figures count them. Default: none.",
		CompareDoc: "Answer checks run against both sides after the rounds, for the verdict's quality section: " +
			"builtin (the embedded set) or the path of a JSONL check set (docs/quality.md). Default: none."},
	{Field: "Trace", SpecVia: "workload.trace", Flag: "trace", Kind: KindString, Surfaces: SurfaceSweep,
		Doc: "Replay a trace instead of --rates: JSONL of Mooncake entries {\"timestamp\" (ms), \"input_length\", " +
			"\"output_length\", \"hash_ids\"} or {\"offset_ms\", \"input_tokens\", \"output_tokens\"}, sent open loop on its own " +
			"timing divided by --trace-speed, prompts of its lengths, hash_ids as shared prompt prefixes. --num-prompts " +
			"(the first N entries) or --duration (the entries due within it) cut it. See docs/workload.md."},
	{Field: "TraceSpeeds", SpecVia: "workload.trace.speeds", Flag: "trace-speed", Kind: KindString, Default: "1", Bound: Bound{HasMin: true, MinOpen: true, Max: MaxTraceSpeed, HasMax: true, Finite: true, MaxLen: MaxLevels}, Surfaces: SurfaceSweep,
		Doc: "With --trace: replay speeds, one step each (1: the trace's own timing, 2: twice as fast; " +
			"a list such as 1,2,4 is a ladder)."},

	// Config fields that are no user setting: the program fills them.
	{Field: "WorkloadSource", Internal: true, Doc: "Where the workload came from: flags, config or the file path."},
	{Field: "Auto", Internal: true, Doc: "Set by rates auto: the adaptive knee search."},
	{Field: "RatesText", Internal: true, Doc: "The rates as given, for the fingerprint."},
	{Field: "Search.Factor", Internal: true, Doc: "The search's rate multiplier while steps pass (default 2)."},
	{Field: "Search.Retries", Internal: true, Doc: "Reruns of an invalid level (DefaultSearchRetries)."},
	{Field: "Search.Lengthen", Internal: true, Doc: "Longer reruns of a level too short to decide (DefaultSearchLengthen)."},
	{Field: "Search.MinRate", Internal: true, Doc: "The lowest rate the search tries (default Start/64)."},
	{Field: "Search.MaxRate", Internal: true, Doc: "The highest rate the search tries (a target's max_sweep_rate)."},
	{Field: "Search.Capacity", Internal: true, Doc: "The throughput probe's capacity estimate, which sizes a bound's shard advice (set by the sweep)."},
	{Field: "Search.Ratio", Internal: true, Doc: "The goodput/offered ratio a passing level reaches (DefaultGoodputRatio)."},
	{Field: "Embedded", Internal: true, Doc: "The target is the in-process simulator (the CPU check is skipped)."},
	{Field: "TraceSampleRatio", Key: "trace_sample_ratio", Kind: KindFloat, Default: strconv.FormatFloat(DefaultTraceSampleRatio, 'g', -1, 64),
		Flag: "tracing.sample-ratio", Bound: Bound{HasMin: true, MinOpen: true, Max: 1, HasMax: true, ZeroDefault: true},
		Surfaces: SurfaceSweep | SurfaceCompare | SurfaceSpec,
		Doc: "With tracing on (--tracing.endpoint; the daemon's serve --tracing.*): the share of the sweep's requests sent in a " +
			"traced span with their traceparent; a traced request's trace_id is in its records.jsonl line (docs/tracing.md)."},
	{Field: "Tracer", Internal: true, Doc: "The daemon's tracer of a sampling ratio (nil: no tracing)."},
	{Field: "ReferenceCapacity", Internal: true, Unit: "req/s", Doc: "The target's capacity when known independently (the built-in simulator's)."},
	{Field: "Workload.OutputTokens.RangeRatio", Flag: "range-ratio", Key: "range_ratio", Internal: true,
		Doc: "The output lengths' range ratio, set with the input lengths' (--range-ratio)."},
}
