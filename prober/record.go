// Package prober holds the types shared by the probing engine: the per-request
// Record that every measurement produces and the closed set of error classes.
//
// Data flows one way: config -> prober (schedules, sends, measures) -> Record
// -> collector (metrics) and artifacts (files). Sub-packages implement the
// pieces: sse (stream parsing), client (the streaming OpenAI client),
// arrival (open-loop arrival processes), workload (prompt and length
// distributions), slo (SLO thresholds and goodput).
package prober

import (
	"time"
)

// ErrorClass classifies a failed request. It is used as a Prometheus label
// value, so the set is closed: add a class only together with its docs.
type ErrorClass string

// The error classes. ClassNone means the request succeeded.
const (
	ClassNone            ErrorClass = ""
	ClassTimeout         ErrorClass = "timeout"          // total request timeout
	ClassTTFTTimeout     ErrorClass = "ttft_timeout"     // no token event within ttft_timeout
	ClassStall           ErrorClass = "stall"            // no event for stall_timeout mid-stream
	ClassConnect         ErrorClass = "connect"          // dial, TLS, connection refused/reset before a response
	ClassHTTP4xx         ErrorClass = "http_4xx"         // 4xx other than 429
	ClassHTTP429         ErrorClass = "http_429"         // rate limited
	ClassHTTP5xx         ErrorClass = "http_5xx"         // 5xx
	ClassStream          ErrorClass = "stream"           // cut before [DONE], malformed event, error event mid-stream
	ClassInvalidResponse ErrorClass = "invalid_response" // 200 without token events, wrong content type, bad JSON
	ClassCanceled        ErrorClass = "canceled"         // shutdown or config reload
)

// ErrorClasses lists every error class in a stable order (for pre-declaring
// label values and for docs).
var ErrorClasses = []ErrorClass{
	ClassTimeout, ClassTTFTTimeout, ClassStall, ClassConnect, ClassHTTP4xx,
	ClassHTTP429, ClassHTTP5xx, ClassStream, ClassInvalidResponse, ClassCanceled,
}

// ClassForStatus classifies a non-2xx HTTP status code: 429 is http_429,
// other 4xx http_4xx, 5xx http_5xx; anything else (1xx, 3xx — redirects are
// never followed —, or a code outside 100..599) is invalid_response. It is
// the one mapping from status to class for requests, discovery and
// tokenizer calls alike.
func ClassForStatus(code int) ErrorClass {
	switch {
	case code == 429:
		return ClassHTTP429
	case code >= 400 && code < 500:
		return ClassHTTP4xx
	case code >= 500 && code < 600:
		return ClassHTTP5xx
	}
	return ClassInvalidResponse
}

// RetryReason says why a request was sent a second time (Record.Retry).
// It is used as a Prometheus label value, so the set is closed.
type RetryReason string

// The retry reasons: the request was first sent on a kept-alive connection
// the client reused, and that connection failed before any byte of a
// response arrived — the server had closed it (RetryConnClosed: EOF, "server
// closed idle connection"), reset it (RetryConnReset: ECONNRESET, EPIPE) or
// it failed otherwise (RetryConnError). Such a request is resent once, on a
// new connection (docs/measurement.md, "Resending on a stale connection").
const (
	RetryNone       RetryReason = ""
	RetryConnClosed RetryReason = "reused_conn_closed"
	RetryConnReset  RetryReason = "reused_conn_reset"
	RetryConnError  RetryReason = "reused_conn_error"
)

// RetryReasons lists every retry reason in a stable order (for
// pre-declaring label values and for docs).
var RetryReasons = []RetryReason{RetryConnClosed, RetryConnReset, RetryConnError}

// OutcomeSuccess is the outcome label value of a successful request; failed
// requests use their ErrorClass as outcome.
const OutcomeSuccess = "success"

// Record is the measurement of one request. All durations are measured on
// Go's monotonic clock relative to Sent (t0, taken just before the request is
// issued, connect included, as vllm bench serve does), unless said otherwise.
// A Record is written by one goroutine and handed over when complete; it is
// not safe for concurrent mutation.
type Record struct {
	Target    string `json:"target"`
	Probe     string `json:"probe"`
	Model     string `json:"model,omitempty"`
	RequestID string `json:"request_id"`
	// TraceID is the W3C trace id (32 hex digits) of the request's client
	// span when tracing is on and the span was sampled (prober/tracing);
	// the request carried it in its traceparent header. Empty otherwise.
	TraceID string `json:"trace_id,omitempty"`

	// Scheduled is the intended send time from the arrival process; Sent is
	// the actual send time (t0). Both carry monotonic readings.
	Scheduled time.Time `json:"scheduled"`
	Sent      time.Time `json:"sent"`
	// SendLag is Sent - Scheduled (how late the client was).
	SendLag time.Duration `json:"send_lag_ns"`
	// QueueWait is the time an arrival waited for a concurrency slot before
	// it was sent (sweeps with rate + max concurrency); it is part of SendLag.
	QueueWait time.Duration `json:"queue_wait_ns,omitempty"`

	// TTFT is t0 -> first SSE event with a non-empty choices array (vLLM's
	// rule; a reasoning delta is one). TTFTText is t0 -> first event with
	// non-empty text/content: the answer TTFT (the SLO ttfa), which for a
	// reasoning model comes after the thinking.
	TTFT     time.Duration `json:"ttft_ns"`
	TTFTText time.Duration `json:"ttft_text_ns"`
	// TTFR is t0 -> the first reasoning delta (chat's reasoning_content
	// or reasoning, the Responses API's reasoning text deltas), 0 when the
	// response had none. ThinkingTime is the first reasoning delta -> the
	// first answer delta (content or a tool call), or to the last
	// reasoning delta when no answer came; 0 without reasoning.
	TTFR         time.Duration `json:"ttfr_ns,omitempty"`
	ThinkingTime time.Duration `json:"thinking_ns,omitempty"`
	// FirstToolCall is t0 -> the first tool-call delta (chat's
	// delta.tool_calls, the Responses API's function-call argument
	// deltas), 0 when none came.
	FirstToolCall time.Duration `json:"first_tool_call_ns,omitempty"`
	// ITL holds the gaps between consecutive token-bearing events (one gap
	// per event, never per token).
	ITL []time.Duration `json:"itl_ns,omitempty"`
	// E2E is t0 -> the last token-bearing event (vLLM's rule). Done is t0 ->
	// the [DONE] event (0 when none arrived).
	E2E  time.Duration `json:"e2e_ns"`
	Done time.Duration `json:"done_ns,omitempty"`

	// The HTTP phases (Phases; docs/measurement.md, "HTTP phases"), each 0
	// when it did not happen: a reused connection has no resolve, connect
	// or TLS time, an IP address no resolve time, a request that failed
	// before its first token no first-token or transfer time. ResolveTime
	// is the DNS lookup, ConnectTime the TCP connect (every address tried),
	// TLSTime the TLS handshake, WriteTime the write of the request
	// (connection obtained -> request written: phase "request"), WaitTime
	// request written -> first response byte, FirstTokenTime first response
	// byte -> first token-bearing event, TransferTime first token-bearing
	// event -> the end of the stream ([DONE], else the last token event;
	// for a non-streamed request first response byte -> end of the body),
	// successful requests only.
	ResolveTime    time.Duration `json:"resolve_ns,omitempty"`
	ConnectTime    time.Duration `json:"connect_ns,omitempty"`
	TLSTime        time.Duration `json:"tls_ns,omitempty"`
	WriteTime      time.Duration `json:"request_ns,omitempty"`
	WaitTime       time.Duration `json:"wait_ns,omitempty"`
	FirstTokenTime time.Duration `json:"first_token_ns,omitempty"`
	TransferTime   time.Duration `json:"transfer_ns,omitempty"`
	HeadersTime    time.Duration `json:"headers_ns,omitempty"` // t0 -> response headers

	// InputTokens / OutputTokensRequested are what the workload asked for.
	InputTokens           int `json:"input_tokens"`
	OutputTokensRequested int `json:"output_tokens_requested"`
	// PromptTokens and CompletionTokens come from the server's usage chunk;
	// when the server sent none, CompletionTokens is the count of token
	// events and TokensCounted is true.
	PromptTokens     int  `json:"prompt_tokens"`
	CompletionTokens int  `json:"completion_tokens"`
	TokensCounted    bool `json:"tokens_counted,omitempty"`
	// CachedTokens is usage.prompt_tokens_details.cached_tokens, the
	// prompt tokens the server reports it served from its prefix or
	// prompt cache; CachedTokensReported is true when the usage carried
	// it (vLLM with --enable-prompt-tokens-details, SGLang with
	// --enable-cache-report, llama.cpp always), so that 0 is a reported
	// zero, not a missing figure.
	CachedTokens         int  `json:"cached_tokens,omitempty"`
	CachedTokensReported bool `json:"cached_tokens_reported,omitempty"`
	// DraftTokens and DraftAccepted are speculative decoding's tokens the
	// draft model proposed for this request and those the target model
	// accepted, from llama.cpp llama-server's timings.draft_n and
	// timings.draft_n_accepted; DraftReported is true when the response
	// carried both (llama-server sends them only when it drafted).
	DraftTokens   int  `json:"draft_tokens,omitempty"`
	DraftAccepted int  `json:"draft_accepted,omitempty"`
	DraftReported bool `json:"draft_reported,omitempty"`
	// ServerQueueTime, ServerTTFT and ServerGenerationTime are the
	// server's own timing of this request, from vLLM's per-request metrics
	// object (--enable-per-request-metrics, asked with include_metrics):
	// queue_time_ms (queued to scheduled), time_to_first_token_ms
	// (scheduled to the first output token: the prefill) and
	// generation_time_ms (first to last output token). Each Has flag is
	// true when the response carried that figure (a finite non-negative
	// number), so that 0 is a reported zero. TTFTOverhead gives the rest
	// of the client's TTFT.
	ServerQueueTime         time.Duration `json:"server_queue_ns,omitempty"`
	ServerTTFT              time.Duration `json:"server_ttft_ns,omitempty"`
	ServerGenerationTime    time.Duration `json:"server_generation_ns,omitempty"`
	HasServerQueue          bool          `json:"server_queue_reported,omitempty"`
	HasServerTTFT           bool          `json:"server_ttft_reported,omitempty"`
	HasServerGenerationTime bool          `json:"server_generation_reported,omitempty"`
	// ReasoningTokens is usage.completion_tokens_details.reasoning_tokens
	// (Responses API: usage.output_tokens_details.reasoning_tokens), part of
	// CompletionTokens; without it, the number of reasoning deltas, and
	// ReasoningTokensCounted is true (a delta of several tokens counts
	// once). AnswerTokens is the rest.
	ReasoningTokens int `json:"reasoning_tokens,omitempty"`
	// ResponseID and ResponseModel are the first streamed chunk's id and
	// model (at most MaxResponseIDBytes each), for the trace span
	// (gen_ai.response.id, gen_ai.response.model) only: a server chooses
	// them, so they are not written to records.jsonl.
	ResponseID             string `json:"-"`
	ResponseModel          string `json:"-"`
	ReasoningTokensCounted bool   `json:"reasoning_tokens_counted,omitempty"`
	// ToolCalls is the number of tool calls the response made (assembled
	// from their deltas; only counted for requests that sent tools).
	ToolCalls int `json:"tool_calls,omitempty"`
	// Inputs is the number of inputs an embeddings request embedded or of
	// documents a rerank request scored (0 for generation APIs); Dimension
	// is the embeddings' dimension.
	Inputs    int `json:"inputs,omitempty"`
	Dimension int `json:"dimension,omitempty"`
	// Events is the number of token-bearing SSE events received.
	Events int `json:"events"`

	FinishReason string     `json:"finish_reason,omitempty"`
	HTTPStatus   int        `json:"http_status"`
	Error        ErrorClass `json:"error,omitempty"`
	// ErrorMessage is a short human-readable reason; it never contains
	// secrets, prompts or response bodies beyond a short server message.
	ErrorMessage string `json:"error_message,omitempty"`

	// NotSent is true when the request failed before it was sent (the
	// model or the prompt sizing could not be learned from the server);
	// Sent is then the time of the failure and SendLag is not meaningful.
	NotSent bool `json:"not_sent,omitempty"`

	// Retry is why the request was resent (RetryReasons), empty when it was
	// sent once. A resent request is measured by its resend alone: Sent,
	// SendLag, TTFT and every other time are the resend's (SendLag then
	// includes the failed first attempt), and the first attempt leaves no
	// other trace.
	Retry RetryReason `json:"retry,omitempty"`

	// WallStart is the wall-clock time of Sent, for artifacts and traces.
	WallStart time.Time `json:"wall_start"`

	// SessionID ties the turns of a multi-turn chat session together and
	// Turn is the request's turn in it (1-based); both empty for a
	// single-turn request. A failed turn is its session's last.
	SessionID string `json:"session_id,omitempty"`
	Turn      int    `json:"turn,omitempty"`
	// SessionReplica is, for turn 2 and up of a session, whether the
	// replica that answered it (Backend) is the one that answered the
	// previous turn: SessionSameReplica, SessionOtherReplica or
	// SessionReplicaUnknown (either backend not known: no attribution
	// header configured or answered, or folded into AttributionOther);
	// empty for turn 1, a turn not sent and single-turn requests
	// (docs/measurement.md, "Session affinity").
	SessionReplica string `json:"session_replica,omitempty"`
	// Features names the request features the request carried
	// (workload.request.features kinds: no_stream, logprobs, json_schema,
	// lora, tools, images), nil when none; a LoRA adapter is also Model.
	Features []string `json:"features,omitempty"`
	// Images and ImageBytes are the images the request sent (the images
	// feature) and their encoded bytes (before base64), 0 when none.
	Images     int   `json:"images,omitempty"`
	ImageBytes int64 `json:"image_bytes,omitempty"`
	// NoStream marks a request sent with "stream": false: E2E is t0 to the
	// end of the response body, and TTFT, TTFTText and ITL are not
	// recorded (0, empty); TPOT reports none. Consumers skip them for
	// TTFT, ITL and TPOT figures and SLOs.
	NoStream bool `json:"no_stream,omitempty"`
	// Logprobs is true when the response carried log probabilities (a
	// choices[0].logprobs that is not null).
	Logprobs bool `json:"logprobs,omitempty"`

	// RequestIDEcho is the x-request-id header of the response (vLLM
	// echoes the request's with --enable-request-id-headers; a gateway may
	// answer its own), at most MaxHeaderValueLen bytes; empty when the
	// response had none.
	RequestIDEcho string `json:"request_id_echo,omitempty"`
	// Attribution holds the response headers the target's
	// attribution_headers name (lower-case name -> value), each value at
	// most MaxHeaderValueLen bytes and folded into AttributionOther past
	// the target's MaxAttributionValues distinct values of that header;
	// nil when none is configured or none came back.
	Attribution map[string]string `json:"attribution,omitempty"`
	// Backend is the attributed backend: the value of the first
	// attribution header (in configured order) the response carried,
	// BackendNone when it carried none of them, empty when the target
	// names no attribution header (docs/discovery.md, "Which backend
	// answered").
	Backend string `json:"backend,omitempty"`
}

// The values of Record.SessionReplica, a closed set (the result label of
// llmprobe_session_turns_total).
const (
	SessionSameReplica    = "same_replica"
	SessionOtherReplica   = "other_replica"
	SessionReplicaUnknown = "unknown"
)

// SessionReplicaResults lists Record.SessionReplica's values in a stable
// order.
var SessionReplicaResults = []string{SessionSameReplica, SessionOtherReplica, SessionReplicaUnknown}

// SameReplica returns Record.SessionReplica of a later turn answered by
// backend when the previous turn was answered by prev (Record.Backend
// values).
func SameReplica(prev, backend string) string {
	known := func(b string) bool { return b != "" && b != BackendNone && b != AttributionOther }
	switch {
	case !known(prev) || !known(backend):
		return SessionReplicaUnknown
	case prev == backend:
		return SessionSameReplica
	}
	return SessionOtherReplica
}

// Bounds and values of the attribution of a request (Record.Attribution,
// Record.Backend, Record.RequestIDEcho).
const (
	// MaxHeaderValueLen bounds a recorded response header value (bytes);
	// a longer one is cut at a UTF-8 boundary.
	MaxHeaderValueLen = 128
	// MaxAttributionValues bounds the distinct values of one attribution
	// header, and of Record.Backend, per target: later new values are
	// recorded as AttributionOther, so that a gateway that answers a
	// fresh value per request cannot grow a label without bound.
	MaxAttributionValues = 64
	// AttributionOther is the value recorded past MaxAttributionValues.
	AttributionOther = "other"
	// BackendNone is Record.Backend of a response that carried none of
	// the attribution headers.
	BackendNone = "none"
)

// MinCacheHitTokens is the fewest cached prompt tokens that make a
// request a prefix-cache hit (CacheHit): one vLLM KV-cache block (16
// tokens, vLLM's default block size, whose prefix cache reports whole
// blocks only). Below it a report is a miss: llama.cpp and SGLang cache
// single tokens and report the BOS token and the chat template's opening
// tokens, which every prompt shares, as cached (llama.cpp reported 1 cached
// token on every fresh prompt, 100 % "hits").
const MinCacheHitTokens = 16

// CacheHit reports whether the server's usage reported at least
// MinCacheHitTokens cached prompt tokens; only meaningful when
// CachedTokensReported.
func (r *Record) CacheHit() bool { return r.CachedTokens >= MinCacheHitTokens }

// OK reports whether the request succeeded.
func (r *Record) OK() bool { return r.Error == ClassNone }

// Outcome is the outcome label value: "success" or the error class.
func (r *Record) Outcome() string {
	if r.Error == ClassNone {
		return OutcomeSuccess
	}
	return string(r.Error)
}

// TPOT returns (E2E - TTFT) / (CompletionTokens - 1) and true, or 0 and false
// when the request produced one token or fewer (vLLM's rule) or was not
// streamed (NoStream: it has no TTFT).
func (r *Record) TPOT() (time.Duration, bool) {
	if r.CompletionTokens <= 1 || r.NoStream {
		return 0, false
	}
	return (r.E2E - r.TTFT) / time.Duration(r.CompletionTokens-1), true
}

// AnswerTokens is CompletionTokens - ReasoningTokens (never below 0): the
// tokens of the answer after the thinking.
func (r *Record) AnswerTokens() int { return max(r.CompletionTokens-r.ReasoningTokens, 0) }

// AnswerTTFT is the answer TTFT (the SLO ttfa): t0 -> the first answer
// delta, TTFTText, or FirstToolCall when the answer was a tool call (the
// earlier of the two when both came); E2E when no answer came before the
// stream ended (a response that only thought); 0 for a request that was
// not streamed. Without reasoning it is the content TTFT.
func (r *Record) AnswerTTFT() time.Duration {
	switch {
	case r.NoStream:
		return 0
	case r.TTFTText > 0 && r.FirstToolCall > 0:
		return min(r.TTFTText, r.FirstToolCall)
	case r.TTFTText > 0:
		return r.TTFTText
	case r.FirstToolCall > 0:
		return r.FirstToolCall
	}
	return r.E2E
}

// Reasoned reports whether the response carried reasoning (a reasoning
// delta or reasoning tokens in its usage).
func (r *Record) Reasoned() bool { return r.TTFR > 0 || r.ReasoningTokens > 0 }

// LatencyFromScheduled is E2E measured from the intended send time, which
// includes the client's own lateness (coordinated omission correction).
func (r *Record) LatencyFromScheduled() time.Duration { return r.E2E + r.SendLag }

// Phase is one HTTP phase of a request, as blackbox_exporter's
// probe_http_duration_seconds{phase} splits a request, with the streaming
// phases an LLM request adds (docs/measurement.md, "HTTP phases"). It is
// used as a Prometheus label value, so the set is closed.
type Phase string

// The HTTP phases, in the order they happen.
const (
	PhaseResolve    Phase = "resolve"
	PhaseConnect    Phase = "connect"
	PhaseTLS        Phase = "tls"
	PhaseRequest    Phase = "request"
	PhaseWait       Phase = "wait"
	PhaseFirstToken Phase = "first_token"
	PhaseTransfer   Phase = "transfer"
)

// Phases lists every HTTP phase in the order they happen (for
// pre-declaring label values and for docs).
var Phases = []Phase{PhaseResolve, PhaseConnect, PhaseTLS, PhaseRequest, PhaseWait, PhaseFirstToken, PhaseTransfer}

// PhaseTime returns the duration of phase p, 0 when it did not happen (or p
// is not one of Phases).
func (r *Record) PhaseTime(p Phase) time.Duration {
	switch p {
	case PhaseResolve:
		return r.ResolveTime
	case PhaseConnect:
		return r.ConnectTime
	case PhaseTLS:
		return r.TLSTime
	case PhaseRequest:
		return r.WriteTime
	case PhaseWait:
		return r.WaitTime
	case PhaseFirstToken:
		return r.FirstTokenTime
	case PhaseTransfer:
		return r.TransferTime
	}
	return 0
}

// MaxResponseIDBytes caps Record.ResponseID and Record.ResponseModel: a
// longer value the server sent is cut (with "...").
const MaxResponseIDBytes = 256

// TTFTOverhead is the part of the client's TTFT the server's own timing
// does not cover: TTFT − ServerQueueTime − ServerTTFT (the network both
// ways, gateways and proxies, the server's HTTP frontend, tokenization and
// detokenization, and the first event's flush). ok is false unless the
// request has a TTFT and the server reported both figures. A negative
// remainder (the server's figures exceed what the client saw: clocks of
// different resolution, or a server that counts from an earlier instant
// than the request's send) is returned as it is, with negative true, for
// the caller to count or clamp; it is never silently folded into zero.
func (r *Record) TTFTOverhead() (overhead time.Duration, negative, ok bool) {
	if r.TTFT <= 0 || !r.HasServerQueue || !r.HasServerTTFT {
		return 0, false, false
	}
	o := r.TTFT - r.ServerQueueTime - r.ServerTTFT
	return o, o < 0, true
}
