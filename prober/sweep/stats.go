package sweep

import (
	"math"
	"slices"
	"time"

	"github.com/llmprobe/llmprobe/prober/slo"
	"github.com/llmprobe/llmprobe/prober/stats"
)

// StatsOptions configures ComputeStats.
type StatsOptions struct {
	// SLO decides good requests (slo.SLO.Evaluate, vLLM's --goodput rule)
	// and the SLO p99 checks; the zero SLO makes every success good.
	SLO slo.SLO
	// Percentiles are extra percentiles (0..100) reported beside
	// p50/p90/p99 for every latency metric.
	Percentiles []float64
	// Duration is the step's benchmark duration (vLLM's dur_s: from just
	// before the first dispatch, after warmups, to after the last request
	// ended). Zero derives it from the records: earliest intended send to
	// latest end.
	Duration time.Duration
	// RequestedRate is the requested arrival rate in req/s: +Inf for a
	// burst, 0 for closed loop.
	RequestedRate float64
	// Start is the origin of the step's schedule and Window its arrival
	// window (--duration); with Window zero the window ends at the latest
	// intended send. They give the offered rate of an open loop.
	Start  time.Time
	Window time.Duration
	// BootstrapIters is the number of bootstrap resamples of the p99
	// confidence interval when it is unreliable. Default 1000.
	BootstrapIters int
	// Seed seeds the bootstrap.
	Seed uint64
}

// Latency is the summary of one latency metric in milliseconds.
type Latency struct {
	stats.Summary
	// P99CI is a 95 % bootstrap confidence interval of the p99, present
	// when the p99 is unreliable (fewer than 100 samples) and there is data.
	P99CI *stats.CI `json:"p99_ci,omitempty"`
	// P99Reliable is false when N < 100.
	P99Reliable bool `json:"p99_reliable"`
}

// TokenDist is a token-count distribution (p10/p50/p90/p99/max, and the
// mean) over requests.
type TokenDist struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	P10  float64 `json:"p10"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
}

// SLOCheck is one SLO's p99 compared with its threshold.
type SLOCheck struct {
	// Metric is "ttft", "tpot" or "e2el" (vLLM's --goodput keys).
	Metric string `json:"metric"`
	// ThresholdMS and P99MS are in milliseconds.
	ThresholdMS float64 `json:"threshold_ms"`
	P99MS       float64 `json:"p99_ms"`
	// Held is P99MS <= ThresholdMS (true when there is no sample).
	Held bool `json:"held"`
	// Reliable is false when the p99 rests on fewer than 100 samples.
	Reliable bool `json:"reliable"`
}

// Stats are the client-side statistics of one step, computed from its
// Records as vllm bench serve computes them (vllm-reference.md §1.2), plus
// llmprobe's extras. Rates are per second of Duration. result.json writes
// them among a step's keys (stepKeys in resultjson.go).
type Stats struct {
	// Duration is the benchmark duration in seconds.
	Duration float64
	// Requests is completed + failed.
	Requests  int
	Completed int
	Failed    int
	// FailedByClass counts failed requests by error class.
	FailedByClass map[string]int
	// ErrorRate is Failed / Requests (0 without requests).
	ErrorRate float64
	// Good counts successful requests meeting every SLO (all successful
	// ones without SLOs).
	Good int
	// TotalInputTokens sums the prompt tokens of successful requests (the
	// server's usage.prompt_tokens, else the workload's length);
	// TotalOutputTokens their output tokens.
	TotalInputTokens  int
	TotalOutputTokens int
	// CachedTokens sums the prompt tokens the server reported it served
	// from its cache (usage.prompt_tokens_details.cached_tokens) over the
	// CachedTokensReports successful requests whose usage carried it
	// (result.json usage_cached_tokens; 0 and 0 when none did).
	CachedTokens        int
	CachedTokensReports int

	RequestThroughput    float64
	RequestGoodput       float64
	OutputThroughput     float64
	TotalTokenThroughput float64
	// MaxOutputTokensPerS is the most token events in any one-second bucket
	// from the first send (vLLM counts events, not tokens).
	MaxOutputTokensPerS float64
	// MaxConcurrentRequests is the most successful requests in flight at
	// once ([sent, sent+E2E) intervals).
	MaxConcurrentRequests int

	// Latency metrics in ms, over successful requests. TPOT only over
	// requests with more than one output token; ITL pools every gap.
	TTFT Latency
	TPOT Latency
	ITL  Latency
	E2EL Latency
	// TTFTText is TTFT to the first event with non-empty text (content
	// TTFT), over the successful streamed requests that had content only:
	// its N is how many (an answer that was only a tool call has none).
	TTFTText Latency
	// TTFA is the answer TTFT (Record.AnswerTTFT, the SLO ttfa): the
	// content TTFT, or the first tool call's; it differs from TTFTText
	// only for answers that are tool calls or that never came.
	TTFA Latency
	// Reasoning holds the reasoning and tool-call figures; nil when no
	// successful request reasoned or called a tool.
	Reasoning *ReasoningStats
	// Pooling holds the embeddings and rerank figures; nil when no
	// successful request was one (result.json "pooling").
	Pooling *PoolingStats
	// Images holds the images feature's figures; nil when no successful
	// request carried images (result.json "images").
	Images *ImageStats
	// SpecDecode holds the per-request speculative decoding figures; nil
	// when no successful request carried them with a token drafted
	// (result.json "speculative_decoding").
	SpecDecode *SpecDecodeStats
	// ServerTiming holds the per-request server timing split of the TTFT
	// (vLLM's per-request metrics); nil when no successful streamed
	// request carried it, and then the step runner puts the reason there
	// (result.json "server_timing").
	ServerTiming *ServerTimingStats
	// SendLag is the client's own lateness (actual - intended send, minus
	// any concurrency-slot wait), over every request.
	SendLag Latency
	// QueueTime is the wait for a concurrency slot (vLLM's
	// client_queue_time), over every request.
	QueueTime Latency
	// E2ELFromScheduled is E2E measured from the intended send time (so it
	// includes send lag and queue time), over successful requests.
	E2ELFromScheduled Latency

	// RequestedRate is the requested arrival rate (+Inf for a burst, 0 for
	// closed loop); ScheduledRate the rate of the drawn intended send times
	// and AchievedRate the rate of the actual sends, both (n-1)/span.
	RequestedRate float64
	ScheduledRate float64
	AchievedRate  float64

	// ArrivalWindow is the open loop's arrival window in seconds (the
	// --duration, or schedule start to the latest intended send) and
	// OfferedRate = Requests / ArrivalWindow: the rate the drawn arrivals
	// actually offered (a finite random sample differs from the requested
	// rate). Both 0 for closed loop and bursts.
	ArrivalWindow float64
	OfferedRate   float64
	// DrainCorrectedDuration is Duration minus the shortest successful
	// E2E: the time the server needed beyond one unloaded request. A step
	// that keeps up finishes about one request latency after its last
	// arrival; an overloaded one pays its whole backlog.
	DrainCorrectedDuration float64
	// GoodputRatio is the knee's keep-up figure. Open loop: (Good /
	// Requests) * ArrivalWindow / DrainCorrectedDuration, i.e. goodput per
	// offered request over the arrival window; closed loop: Good /
	// Completed. KneeGoodput is GoodputRatio times the requested rate (open
	// loop) or RequestGoodput (closed loop, bursts), and KneeThroughput the
	// same with Completed: the step's goodput and throughput at the rate
	// it was asked for, free of arrival-sample noise and drain time.
	GoodputRatio   float64
	KneeGoodput    float64
	KneeThroughput float64

	// InputTokens is the prompt length distribution (server-reported when
	// known), RequestedOutputTokens the max_tokens asked, OutputTokens the
	// actual output of successful requests.
	InputTokens           TokenDist
	RequestedOutputTokens TokenDist
	OutputTokens          TokenDist
	// FinishReasons counts successful requests by finish reason ("unknown"
	// when the server sent none).
	FinishReasons map[string]int

	// SLOChecks compares each set SLO's p99 with its threshold; SLOHeld is
	// true when all hold (and without SLOs).
	SLOChecks []SLOCheck
	SLOHeld   bool

	// Latencies and QueueTimes are vllm bench serve's per-request arrays
	// in arrival order, in seconds: E2E (0 for a failed request, as vLLM
	// writes it) and the client queue time (the wait for a concurrency
	// slot; 0 for a failed request).
	Latencies  []float64
	QueueTimes []float64

	// sendLagsMS is every request's send lag, for Judge.
	sendLagsMS []float64
	// schedLat is the Go scheduling latency over the step, for Judge
	// (schedlatency.go); zero when not measured.
	schedLat schedFigure

	// GoodOutputTokens sums the output tokens of the good requests (every
	// SLO met; every successful request without SLOs), and
	// GoodOutputThroughput is it per second of Duration: the tokens that
	// count towards the cost per million good output tokens (CostPerMillion),
	// so that SLO misses cost more.
	GoodOutputTokens     int
	GoodOutputThroughput float64
	// kneeSamples are the requests in arrival order as the knee's bootstrap
	// resamples them (nil for a step of more than MaxKneeSamples requests,
	// and in a result read back from result.json).
	kneeSamples []kneeSample
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// sloSamples returns the fewest samples behind the step's SLO p99 checks
// (the N of each checked metric) and whether any check counts. A metric
// without a single sample is left out: it does not apply to the step (the
// TPOT of one-token outputs) and no longer step would give it one.
func (s *Stats) sloSamples() (int, bool) {
	n, ok := 0, false
	for _, c := range s.SLOChecks {
		var l Latency
		switch c.Metric {
		case slo.NameTTFT:
			l = s.TTFT
		case slo.NameTPOT:
			l = s.TPOT
		case slo.NameE2EL:
			l = s.E2EL
		case slo.NameTTFA:
			l = s.TTFA
		default:
			continue
		}
		if l.N == 0 {
			continue
		}
		if !ok || l.N < n {
			n = l.N
		}
		ok = true
	}
	return n, ok
}

// KeepUpPct is the knee's keep-up criterion for people: GoodputRatio in
// percent, capped at 100 (a ratio above 1 is arrival-sample noise, not a
// server doing more than it was asked).
func (s *Stats) KeepUpPct() float64 { return 100 * math.Min(s.GoodputRatio, 1) }

func summarizeLatency(xs, ps []float64, iters int, seed uint64) Latency {
	l := Latency{Summary: stats.Summarize(xs, ps...), P99Reliable: !stats.P99Unreliable(len(xs))}
	if !l.P99Reliable && len(xs) > 0 {
		if ci, err := stats.BootstrapCI(xs, 99, 0.95, iters, seed); err == nil {
			l.P99CI = &ci
		}
	}
	return l
}

func tokenDist(xs []float64) TokenDist {
	s := slices.Clone(xs)
	slices.Sort(s)
	d := TokenDist{N: len(s), Mean: stats.Mean(s)}
	if len(s) == 0 {
		return d
	}
	d.P10 = stats.PercentileSorted(s, 10)
	d.P50 = stats.PercentileSorted(s, 50)
	d.P90 = stats.PercentileSorted(s, 90)
	d.P99 = stats.PercentileSorted(s, 99)
	d.Max = s[len(s)-1]
	return d
}

// PoolingStats are a step's embeddings or rerank figures (result.json
// "pooling") over its Requests successful pooling requests: the Inputs
// they carried (embeddings' inputs, rerank documents), inputs/s and prompt
// tokens/s over the step's duration (as request_throughput), and the
// range of the embeddings' dimension (0 and 0 for rerank).
type PoolingStats struct {
	Requests             int     `json:"requests"`
	Inputs               int     `json:"inputs"`
	InputThroughput      float64 `json:"input_throughput"`
	InputTokenThroughput float64 `json:"input_token_throughput"`
	MinDimension         int     `json:"min_dimension"`
	MaxDimension         int     `json:"max_dimension"`
}

// ImageStats are a step's images figures (result.json "images"), over its
// successful requests that carried images (the images feature): Requests
// of them, the Images they sent and their encoded Bytes (before base64),
// Throughput in images/s over the step's duration.
type ImageStats struct {
	Requests   int     `json:"requests"`
	Images     int     `json:"images"`
	Bytes      int64   `json:"image_bytes"`
	Throughput float64 `json:"image_throughput"`
}

// SpecDecodeStats are a step's speculative decoding figures (result.json
// "speculative_decoding") over its successful requests whose response
// carried them (llama-server's timings.draft_n and draft_n_accepted;
// Record.DraftReported): Requests of them, the Drafted tokens the draft
// model proposed, the Accepted ones the target model kept, and
// AcceptanceRate = Accepted / Drafted.
type SpecDecodeStats struct {
	Requests       int     `json:"requests"`
	Drafted        int     `json:"draft_tokens"`
	Accepted       int     `json:"accepted_tokens"`
	AcceptanceRate float64 `json:"acceptance_rate"`
}

// ServerTimingStats split a step's TTFT per request (result.json
// "server_timing"; docs/measurement.md, "Where the TTFT went, per
// request"): over its successful streamed requests whose response carried
// vLLM's per-request metrics with both the queue and the TTFT
// (Record.HasServerQueue, HasServerTTFT; Requests of them), the server's
// queue time (queued to scheduled), its TTFT (scheduled to the first
// token: the prefill), its generation time (first to last token) and the
// Overhead, the client's TTFT minus both (network, gateways, the HTTP
// frontend, tokenization, the first event's flush), all in ms. A negative
// overhead (the server's figures exceed the client's TTFT) is kept as it
// is in the quantiles and counted in NegativeOverhead. NotRecorded says
// why a step has none (the engine, the setting, or a vLLM without
// --enable-per-request-metrics); empty when Requests > 0.
type ServerTimingStats struct {
	Requests         int     `json:"requests"`
	Queue            Latency `json:"server_queue_ms"`
	ServerTTFT       Latency `json:"server_ttft_ms"`
	Generation       Latency `json:"server_generation_ms"`
	Overhead         Latency `json:"ttft_overhead_ms"`
	NegativeOverhead int     `json:"negative_overhead_requests"`
	NotRecorded      string  `json:"not_recorded,omitempty"`
}

// ReasoningStats are a step's reasoning and tool-call figures (result.json
// "reasoning"), over its successful streamed requests: Requests of them
// carried reasoning (Record.Reasoned), ToolCallRequests made tool calls.
type ReasoningStats struct {
	Requests int `json:"requests"`
	// ReasoningTokens and AnswerTokens sum the reasoning requests' tokens
	// (Record.ReasoningTokens, Record.AnswerTokens); CountedRequests of
	// them had no usage reasoning_tokens, so their reasoning deltas were
	// counted instead.
	ReasoningTokens int `json:"reasoning_tokens"`
	AnswerTokens    int `json:"answer_tokens"`
	CountedRequests int `json:"counted_requests"`
	// TTFR is the time to the first reasoning token and ThinkingTime the
	// thinking time (Record.TTFR, Record.ThinkingTime), in ms.
	TTFR         Latency `json:"ttfr_ms"`
	ThinkingTime Latency `json:"thinking_time_ms"`
	// ToolCalls sums Record.ToolCalls; FirstToolCall is the time to the
	// first tool-call delta (ms) over the ToolCallRequests.
	ToolCallRequests int     `json:"tool_call_requests"`
	ToolCalls        int     `json:"tool_calls"`
	FirstToolCall    Latency `json:"first_tool_call_ms"`
}
