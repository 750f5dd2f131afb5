// Package endpoint owns what every consumer of a serving endpoint (the
// daemon's probes, sweeps, compare) needs before and around a request, so
// that they all reach a server the same way:
//
//   - discovery: the one reader of GET /v1/models, GET /version and each
//     engine's own info endpoint (Discover, Info), with the server engine
//     configured or detected (Engine, prober/engine) and failures classified
//     like failed requests (*Error);
//   - prompt sizing with one fallback policy (PromptSizing, Sizing): the
//     server's tokenizer endpoint in its engine's shape, else a calibration
//     from the
//     usage.prompt_tokens of two requests, failures cached with a growing
//     backoff;
//   - the one function that turns a workload item into a client.Request
//     (NewRequest), which fixes what Record.InputTokens means;
//   - the streaming client for a model (Client), built from the endpoint's
//     options over one shared connection pool;
//   - redaction of the API key, the secrets of the HTTP config, every
//     credential its client sent (an OAuth2 access token, a rotated file:
//     the client registers them with the endpoint's redact.Redactor
//     as it sends them) and credential-shaped text from every message
//     (Redact).
//
// Every request of an endpoint goes through one HTTP client, built from
// its prometheus/common HTTPClientConfig (client.NewHTTPClient: TLS,
// bearer token, basic auth, OAuth2, proxy, http_headers), so the same TLS
// settings and headers apply to generation, discovery, /tokenize,
// calibration and /metrics. The API key is attached by client.Authorize,
// redirects are never followed (a redirect is a classified failure naming
// its Location), response bodies are bounded and every call has a timeout.
//
// An Endpoint is safe for concurrent use.
package endpoint

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/common/config"
	"go.opentelemetry.io/otel/trace"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/bounded"
	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/engine"
	"github.com/llmprobe/llmprobe/prober/redact"
	"github.com/llmprobe/llmprobe/prober/slo"
	"github.com/llmprobe/llmprobe/prober/tracing"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// Defaults of Options.
const (
	// DefaultDiscoveryTimeout bounds each GET /v1/models and GET /version.
	DefaultDiscoveryTimeout = 10 * time.Second
	// DefaultTokenizeTimeout bounds each POST /tokenize.
	DefaultTokenizeTimeout = 30 * time.Second
	// MaxInfoBodyBytes bounds a /v1/models or /version response body (a
	// server with many LoRA adapters lists them all).
	MaxInfoBodyBytes = 4 << 20
)

// Sentinel causes of discovery errors, for errors.Is on an *Error.
var (
	// ErrNoModel: no model is configured and /v1/models lists none.
	ErrNoModel = errors.New("no model listed")
	// ErrModelNotListed: the configured model is not among the models
	// /v1/models lists (a non-empty list).
	ErrModelNotListed = errors.New("model not listed")
)

// Error is a failure to discover the endpoint or to size prompts,
// classified like a failed request so that a down endpoint shows up with its
// real class. Msg is short, redacted and never contains the API key.
type Error struct {
	Class prober.ErrorClass
	Msg   string
	// Err is the cause for errors.Is (ErrNoModel, ErrModelNotListed,
	// context.Canceled, ...); nil when there is none. Its text is never
	// part of Msg unless redacted.
	Err error
}

// Error returns Msg.
func (e *Error) Error() string { return e.Msg }

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// Options configures an Endpoint. BaseURL is the only required field.
type Options struct {
	// BaseURL is the server root, e.g. http://vllm:8000; a trailing "/" or
	// "/v1" is removed.
	BaseURL string
	// API names a row of client's API table (default client.DefaultAPI).
	API string
	// RerankPath is the path of rerank requests (client.Options.RerankPath).
	RerankPath string
	// Model is the model to request; empty means the first id that
	// GET /v1/models lists.
	Model string
	// APIKey is attached to every request with client.Authorize and
	// redacted from every message.
	APIKey config.Secret
	// Timeout, TTFTTimeout, StallTimeout and MaxBodyBytes configure the
	// streaming clients (see client.Options).
	Timeout, TTFTTimeout, StallTimeout time.Duration
	MaxBodyBytes                       int64
	// HTTPClient carries every request of the endpoint (its Transport is
	// the connection pool; its CheckRedirect is replaced by
	// client.NoRedirects). Nil means client.NewHTTPClient(HTTPConfig).
	HTTPClient *http.Client
	// DiscoveryTimeout bounds each discovery GET (default
	// DefaultDiscoveryTimeout); TokenizeTimeout each POST /tokenize
	// (default DefaultTokenizeTimeout).
	DiscoveryTimeout, TokenizeTimeout time.Duration
	// Logger receives the prompt-sizing decisions (which method, why a
	// fallback, failures with their retry time). Nil discards them.
	Logger log.Logger
	// NewRequestID names the calibration requests (sent as x-request-id);
	// nil means "llmprobe-calibrate-<random>-<n>".
	NewRequestID func() string
	// Engine is the server engine (the `engine:` config key); engine.Auto
	// (the default) detects it on first use.
	Engine engine.Name
	// MetricsURL is the server's Prometheus endpoint, read to detect the
	// engine and for vLLM's cache_config_info: empty means BaseURL +
	// "/metrics"; NoMetrics means it has none.
	MetricsURL string
	// HTTPConfig is the target's HTTP client configuration (TLS,
	// credentials, proxy, headers; prometheus/common's, as in a Prometheus
	// scrape config). New builds the endpoint's client from it when
	// HTTPClient is nil.
	HTTPConfig config.HTTPClientConfig
	// Redactor is the registry of the secrets the endpoint's requests
	// send, which Redact removes. Nil: New builds one for APIKey and
	// HTTPConfig (client.NewRedactor) and the client it builds registers
	// every credential it sends (an OAuth2 access token as fetched, a
	// rotated file as read at send time). A caller that passes HTTPClient
	// passes the Redactor that client registers with (sweeps do); without
	// one only the secrets of the config are known.
	Redactor *redact.Redactor
	// AttributionHeaders are the response headers that say which backend
	// answered (the target's attribution_headers): every request of the
	// endpoint records them (client.Attribution, one per endpoint, so the
	// bound on distinct values is per target).
	AttributionHeaders []string
	// Tracer, when not nil, traces every request of the endpoint: the
	// streaming clients' generation spans (client.Options.Tracer) and a
	// client span with its traceparent for each discovery, engine-info,
	// /metrics and /tokenize request (tracing.Transport). Nil: no tracing.
	Tracer trace.Tracer
	// Metrics, when not nil, records every generation request into the
	// OTLP GenAI client histograms (client.Options.Metrics).
	Metrics *tracing.Metrics
	// ServerTiming asks a vLLM server (configured, or detected: until the
	// engine is known nothing is asked) for its per-request timing with
	// include_metrics on every completions and chat request
	// (client.Options.IncludeMetrics; the server must run with
	// --enable-per-request-metrics to answer). Other engines are never
	// sent the field. False (the Go zero value; the config surfaces
	// default it to true) asks nothing.
	ServerTiming bool
}

// NoMetrics is the Options.MetricsURL of a server whose /metrics is not to
// be read.
const NoMetrics = "none"

// Endpoint is one serving endpoint as every consumer reaches it. Create it
// with New.
type Endpoint struct {
	o    Options
	base string
	hc   *http.Client
	// info carries discovery, engine info, /metrics and /tokenize: hc's
	// transport, in a span of its own when tracing is on.
	info   http.RoundTripper
	resend *http.Client     // resends on stale connections (client.Options.ResendHTTPClient)
	red    *redact.Redactor // the API key, the HTTP config's secrets, what the client sent
	logger log.Logger
	now    func() time.Time // tests replace it

	attribution *client.Attribution // nil without AttributionHeaders

	clientMu  sync.Mutex
	client    *client.Client
	clientMdl string

	// sizeMu serialises prompt-sizing set-up (one /tokenize probe or
	// calibration at a time).
	sizeMu   sync.Mutex
	sizings  map[string]*Sizing
	failures map[string]*failure

	// engMu guards the detected engine (nil until detection found one).
	engMu      sync.Mutex
	detected   *engine.Engine
	detectedBy string
}

// failure is the cached failure of a model's prompt-sizing set-up.
type failure struct {
	err   *Error
	retry time.Time     // when the next try may go out
	wait  time.Duration // the current backoff
}

// New validates o and returns an Endpoint. It sends nothing: the client
// options are checked by building the client of o.Model, so bad settings
// fail here and not at the first request.
func New(o Options) (*Endpoint, error) {
	o.API = cmp.Or(o.API, client.DefaultAPI)
	if o.DiscoveryTimeout <= 0 {
		o.DiscoveryTimeout = DefaultDiscoveryTimeout
	}
	if o.TokenizeTimeout <= 0 {
		o.TokenizeTimeout = DefaultTokenizeTimeout
	}
	if o.Logger == nil {
		o.Logger = log.NewNopLogger()
	}
	if o.NewRequestID == nil {
		var b [4]byte
		_, _ = rand.Read(b[:])
		prefix := "llmprobe-calibrate-" + hex.EncodeToString(b[:]) + "-"
		var n atomic.Uint64
		o.NewRequestID = func() string { return fmt.Sprint(prefix, n.Add(1)) }
	}
	red := o.Redactor
	if red == nil {
		var err error
		if red, err = client.NewRedactor(o.APIKey, o.HTTPConfig); err != nil {
			return nil, fmt.Errorf("http_config: %w", err)
		}
	}
	var hc *http.Client
	if o.HTTPClient != nil {
		c := *o.HTTPClient
		hc = &c
	} else {
		var err error
		if hc, err = client.NewHTTPClient(o.HTTPConfig, "llmprobe", red); err != nil {
			return nil, fmt.Errorf("http_config: %w", err)
		}
	}
	hc.CheckRedirect = client.NoRedirects
	// The one resend of a request whose reused connection was stale goes
	// on a pool of its own (client.Options.ResendHTTPClient): a clone of
	// a given plain transport, else a client built from HTTPConfig.
	var resend *http.Client
	if t, ok := hc.Transport.(*http.Transport); ok {
		resend = bounded.NewClient(t.Clone(), 0)
	} else {
		var err error
		if resend, err = client.NewHTTPClient(o.HTTPConfig, "llmprobe-resend", red); err != nil {
			return nil, fmt.Errorf("http_config: %w", err)
		}
	}
	attribution, err := client.NewAttribution(o.AttributionHeaders)
	if err != nil {
		return nil, fmt.Errorf("attribution_headers: %w", err)
	}
	e := &Endpoint{
		o:        o,
		base:     strings.TrimSuffix(strings.TrimRight(o.BaseURL, "/"), "/v1"),
		hc:       hc,
		info:     tracing.Transport(hc.Transport, o.Tracer, red),
		resend:   resend,
		red:      red,
		logger:   o.Logger,
		now:      time.Now,
		sizings:  map[string]*Sizing{},
		failures: map[string]*failure{},
	}
	e.attribution = attribution
	if _, err := e.Client(o.Model); err != nil {
		return nil, err
	}
	return e, nil
}

// BaseURL is the server root requests go to (no trailing "/" or "/v1").
func (e *Endpoint) BaseURL() string { return e.base }

// API is the name of the endpoint's API (a row of client's API table).
func (e *Endpoint) API() string { return e.o.API }

// Redact removes the API key, every secret of the HTTP config, every
// credential the endpoint's client has sent (Options.Redactor) and
// anything else credential-shaped (redact.Text) from a message
// that may echo request data.
func (e *Endpoint) Redact(msg string) string { return e.red.Redact(msg) }

// Secrets returns the literal secrets the endpoint knows now (the API key,
// those of the HTTP config and those its client sent), longest first.
func (e *Endpoint) Secrets() []string { return e.red.Secrets() }

// Redactor returns the endpoint's registry of secrets, for callers that
// redact text the endpoint did not produce (a /metrics body written to an
// artifact).
func (e *Endpoint) Redactor() *redact.Redactor { return e.red }

// Client returns the streaming client for model (empty: the server's
// default), built from the endpoint's options. The latest client is kept
// and returned again while the model stays the same; all clients share the
// endpoint's connections. An API the endpoint's engine is known not to
// serve (engine.Unserved: TGI and api messages) is an *Error of class
// http_4xx naming the engine and why, instead of the server's bare 404.
func (e *Endpoint) Client(model string) (*client.Client, error) {
	e.clientMu.Lock()
	defer e.clientMu.Unlock()
	if e.client != nil && e.clientMdl == model {
		return e.client, nil
	}
	if reason := e.Engine().Unserved(e.o.API); reason != "" {
		// The server would answer a bare 404: say which engine and why.
		return nil, &Error{Class: prober.ClassHTTP4xx, Msg: "api " + e.o.API + ": " + reason}
	}
	c, err := client.New(client.Options{
		BaseURL:          e.base,
		API:              e.o.API,
		RerankPath:       e.o.RerankPath,
		Model:            model,
		APIKey:           e.o.APIKey,
		Timeout:          e.o.Timeout,
		TTFTTimeout:      e.o.TTFTTimeout,
		StallTimeout:     e.o.StallTimeout,
		MaxBodyBytes:     e.o.MaxBodyBytes,
		HTTPClient:       e.hc,
		ResendHTTPClient: e.resend,
		Trace:            true,
		Redactor:         e.red,
		Attribution:      e.attribution,
		Tracer:           e.o.Tracer,
		Metrics:          e.o.Metrics,
		Provider:         e.provider,
		IncludeMetrics:   e.includeMetrics(),
		BothOutputLimits: e.knownEngine,
	})
	if err != nil {
		return nil, err
	}
	e.client, e.clientMdl = c, model
	return c, nil
}

// provider is the engine a span names as gen_ai.provider.name: the
// configured one, else the detected one; "" while it is not known.
func (e *Endpoint) provider() string {
	if e.o.Engine != engine.Auto {
		return string(e.o.Engine)
	}
	e.engMu.Lock()
	defer e.engMu.Unlock()
	if e.detected == nil || e.detected.Name() == engine.Unknown {
		return ""
	}
	return string(e.detected.Name())
}

// knownEngine is the client's BothOutputLimits: whether the engine is
// configured or detected (a self-hosted server that reads max_tokens on
// chat; an unknown one may be OpenAI's, which refuses it).
func (e *Endpoint) knownEngine() bool { return e.provider() != "" }

// includeMetrics is the client's IncludeMetrics: nil without
// ServerTiming, else whether the engine (configured or detected so far) is
// vLLM, the one engine whose requests take include_metrics.
func (e *Endpoint) includeMetrics() func() bool {
	if !e.o.ServerTiming {
		return nil
	}
	return func() bool { return e.provider() == string(engine.VLLM) }
}

// ServerTimingAsked reports whether the endpoint's requests ask the server
// for its per-request timing now, and when not, why (for a
// not-recorded reason).
func (e *Endpoint) ServerTimingAsked() (bool, string) {
	switch p := e.provider(); {
	case !e.o.ServerTiming:
		return false, "server_timing is off"
	case e.o.API != client.APICompletions && e.o.API != client.APIChat:
		return false, "vLLM returns per-request metrics on completions and chat only, not on api " + e.o.API
	case p == "":
		return false, "the engine is not known (set engine: vllm)"
	case p != string(engine.VLLM):
		return false, "engine " + p + " returns no per-request timing (vLLM's --enable-per-request-metrics only)"
	}
	return true, ""
}

// CloseIdleConnections closes the idle connections of the endpoint's pool
// (call it when the endpoint is dropped).
func (e *Endpoint) CloseIdleConnections() {
	e.hc.CloseIdleConnections()
	e.resend.CloseIdleConnections()
}

// NewRequest builds the client request of one workload item for api (an
// API with client.API.Messages: the item's Messages, or one user message
// holding the prompt; a pooling API: its inputs, pooling.go; anything else:
// a completions prompt), with max_tokens = the drawn output length and
// ignore_eos as given. Its InputTokens, kept as Record.InputTokens, is the
// drawn prompt length including the shared prefix (PrefixTokens +
// InputTokens): the figure the server should report as prompt_tokens (a
// session's turn sets its own, see Session).
func NewRequest(api, id string, it workload.Item, ignoreEOS bool) client.Request {
	req := client.Request{
		ID:          id,
		MaxTokens:   it.OutputTokens,
		IgnoreEOS:   ignoreEOS,
		InputTokens: it.PrefixTokens + it.InputTokens,
	}
	a, _ := client.Lookup(api)
	switch {
	case a.Messages:
		for _, m := range it.ChatMessages() {
			req.Messages = append(req.Messages, client.Message{Role: m.Role, Content: m.Content})
		}
	case a.Pooling:
		poolingRequest(&req, a, it.Prompt, 1) // pooling.go
	default:
		req.Prompt = it.Prompt
	}
	return req
}

// The SLO headers of SLO-aware routing (the Gateway API Inference
// Extension's predicted-latency scorer reads the first two as float
// milliseconds; llm-d's guide turns prediction-based scheduling on per
// request with the third; docs/configuration.md cites the sources).
const (
	HeaderSLOTTFT              = "X-Slo-Ttft-Ms"
	HeaderSLOTPOT              = "X-Slo-Tpot-Ms"
	HeaderPredictionScheduling = "X-Prediction-Based-Scheduling"
)

// SLOHeaders returns the request headers that carry s to an SLO-aware
// router (a target's or sweep's slo_headers: true): x-slo-ttft-ms and
// x-slo-tpot-ms for the thresholds s sets, in milliseconds, and
// x-prediction-based-scheduling: true. The result is shared by every
// request: callers only read it.
func SLOHeaders(s slo.SLO) http.Header {
	h := http.Header{HeaderPredictionScheduling: {"true"}}
	ms := func(d time.Duration) []string {
		return []string{strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', -1, 64)}
	}
	if s.TTFT > 0 {
		h[HeaderSLOTTFT] = ms(s.TTFT)
	}
	if s.TPOT > 0 {
		h[HeaderSLOTPOT] = ms(s.TPOT)
	}
	return h
}
