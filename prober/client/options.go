package client

// What a Client is built from (Options) and what ExtraBody may not set.

import (
	"net/http"
	"time"

	"github.com/prometheus/common/config"
	"go.opentelemetry.io/otel/trace"

	"github.com/llmprobe/llmprobe/prober/redact"
	"github.com/llmprobe/llmprobe/prober/tracing"
)

// DefaultMaxBodyBytes is the default Options.MaxBodyBytes.
const DefaultMaxBodyBytes int64 = 64 << 20

// reservedKeys are payload keys the client owns; ExtraBody may not set them.
var reservedKeys = []string{
	"model", "prompt", "messages", "max_tokens", "max_completion_tokens",
	"min_tokens", "ignore_eos", "stream", "stream_options", "logprobs", "top_logprobs",
	"input", "max_output_tokens", "tools", "tool_choice",
	"encoding_format", "query", "documents", "top_n", "text_1", "text_2", // pooling.go
}

// Options configures a Client. BaseURL and, for chat, the API are the only
// required settings.
type Options struct {
	// BaseURL is the server root, e.g. http://127.0.0.1:8000 (a trailing
	// "/v1" is accepted). Requests go to BaseURL/v1/completions or
	// BaseURL/v1/chat/completions.
	BaseURL string
	// API is the name of a row of the API table (api.go); empty:
	// DefaultAPI.
	API string
	// Model is sent as "model"; empty omits the field (the server's
	// default model).
	Model string
	// APIKey is sent as "Authorization: Bearer <key>" when not empty. It
	// never appears in Record.ErrorMessage.
	APIKey config.Secret
	// Timeout bounds the whole request (t0 to the end of the stream);
	// TTFTTimeout bounds t0 to the first token event; StallTimeout bounds
	// the silence between two events after the first token event (":"
	// keep-alive comments do not count as events). 0 turns each off.
	Timeout, TTFTTimeout, StallTimeout time.Duration
	// MaxBodyBytes bounds the response body; 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// HTTPClient is used when not nil; by default the Client builds its
	// own tuned HTTP/1.1 transport (keep-alive, up to 1024 idle
	// connections per host, no compression, no proxy from environment).
	HTTPClient *http.Client
	// ResendHTTPClient carries the one resend of a request whose first
	// attempt failed on a reused connection before any response byte
	// (resend.go): each resend is sent with Connection: close, so this
	// client's pool never keeps a connection. It must not share
	// HTTPClient's pool (a stale connection of that pool is what failed).
	// Nil: a transport of the Client's own when HTTPClient is nil too,
	// else HTTPClient itself (best effort: its pool may hand the resend
	// another stale connection).
	ResendHTTPClient *http.Client
	// Trace collects the HTTP phase times (Record.ResolveTime ...
	// TransferTime, prober.Phases) through httptrace; a few callbacks per
	// request, nothing per token.
	Trace bool
	// ExtraBody is merged into every request payload (temperature, top_p,
	// seed...). It may not set the keys the client owns (model, prompt,
	// messages, max_tokens, max_completion_tokens, min_tokens, ignore_eos,
	// stream, stream_options, logprobs, top_logprobs).
	ExtraBody map[string]any
	// Secrets are literal secrets the HTTP client sends besides APIKey
	// (those of the target's http_config, HTTPSecrets): like the key they
	// never appear in Record.ErrorMessage, even when a server echoes them.
	Secrets []string
	// Redactor, when set, also removes the secrets it knows (those the
	// HTTP client registered as it sent them: OAuth2 access tokens,
	// rotated files) from Record.ErrorMessage.
	Redactor *redact.Redactor
	// Attribution, when set, records the response headers that say which
	// backend answered (attribution.go); nil records none. The response's
	// x-request-id is always kept (Record.RequestIDEcho).
	Attribution *Attribution
	// Tracer, when not nil, sends every request in a client span of its
	// own (prober/tracing: GenAI attributes, llmprobe's figures, the
	// first-token events) and puts its traceparent on the request; a
	// sampled span's trace id is Record.TraceID. Nil (the default) traces
	// nothing and costs nothing.
	Tracer trace.Tracer
	// Provider, when set, returns gen_ai.provider.name for a request's
	// span: the engine the endpoint detected (it may learn it after the
	// client is built); "" or nil: tracing.ProviderOpenAI.
	Provider func() string
	// IncludeMetrics, when set and returning true, adds
	// "include_metrics": true to every completions and chat request, so
	// that a vLLM started with --enable-per-request-metrics returns its
	// per-request timing (the metrics object of the final usage chunk or of
	// the non-streamed body: Record.ServerQueueTime, ServerTTFT,
	// ServerGenerationTime). It is asked per request (the endpoint may
	// learn the engine after the client is built) and must be cheap and
	// safe for concurrent use. ExtraBody may not set include_metrics then.
	IncludeMetrics func() bool
	// BothOutputLimits, when set and returning true, sends a chat
	// request's output limit as max_tokens beside max_completion_tokens:
	// Ollama reads only max_tokens (a chat probe ran minutes long without
	// it), vLLM, SGLang, TGI and llama.cpp read either, and OpenAI's own
	// reasoning models refuse max_tokens, so the endpoint sends both only
	// to a server whose engine it knows. Asked per request, as
	// IncludeMetrics.
	BothOutputLimits func() bool
	// Metrics, when not nil, records every generation request (not the
	// pooling APIs') into the OTLP GenAI client histograms
	// (tracing.Metrics: duration, time to first chunk, time per output
	// chunk, tokens), with the span's attributes. Nil records nothing.
	Metrics *tracing.Metrics
	// RerankPath chooses the request path of an API with several (rerank:
	// RerankV1, the default when empty, RerankBare or RerankScore).
	RerankPath string
}
