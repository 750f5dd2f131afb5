// Package client owns the streaming OpenAI-compatible client that sends one
// probe request (/v1/completions, /v1/chat/completions or /v1/responses)
// and measures it into a prober.Record exactly as `vllm bench serve` does:
// t0 just before the request is issued, TTFT at the first event with a
// non-empty choices array, one ITL gap per token-bearing event, E2E at the
// last token-bearing event, tokens from the final usage chunk. Failures are
// classified into prober's closed set of error classes. See
// docs/measurement.md for the definitions and the error-class table.
package client

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/config"
	"go.opentelemetry.io/otel/trace"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/bounded"
	"github.com/llmprobe/llmprobe/prober/redact"
	"github.com/llmprobe/llmprobe/prober/sse"
	"github.com/llmprobe/llmprobe/prober/tracing"
)

const (
	// maxErrorBody bounds how much of a non-200 response body is read.
	maxErrorBody = 4 << 10
	// maxErrorMessage bounds Record.ErrorMessage (bytes).
	maxErrorMessage = 256
	// drainTimeout bounds the wait for the end of the body after [DONE],
	// which lets the connection be reused.
	drainTimeout = 250 * time.Millisecond
	// maxITLPrealloc caps the ITL slice preallocated from MaxTokens.
	maxITLPrealloc = 8192
)

// Client sends streaming requests to one endpoint and measures them. It is
// safe for concurrent use; each Do call is independent.
type Client struct {
	o       Options
	api     *API // the row of o.API (api.go)
	url     string
	server  *url.URL // the request URL, for the span's server.address and server.port
	auth    []string // the Authorization header value, nil without a key
	extra   []byte   // `,"key":value` pairs, sorted by key
	hc      *http.Client
	resend  *http.Client // nil: resends go through hc
	parsers sync.Pool
	secrets []string // APIKey and Options.Secrets, longest first
	// noResend turns resending off (tests that show what it prevents).
	noResend bool
	red      *redact.Redactor
	metrics  *tracing.ClientMetrics
}

// New validates o and returns a Client.
func New(o Options) (*Client, error) {
	c := &Client{o: o}
	c.o.API = cmp.Or(o.API, DefaultAPI)
	api, err := ParseAPI(c.o.API)
	if err != nil {
		return nil, fmt.Errorf("api %w", err)
	}
	c.api = &api
	u, err := url.Parse(o.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("base url: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("base url %q: want http(s)://host[:port][/path]", u.Redacted())
	}
	u.Path = strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/v1")
	u.RawPath = ""
	p, err := api.Path(o.RerankPath)
	if err != nil {
		return nil, fmt.Errorf("%s path %w", api.Name, err)
	}
	u.Path += p
	c.url = u.String()
	c.server = &url.URL{Scheme: u.Scheme, Host: u.Host}
	for name, d := range map[string]time.Duration{"timeout": o.Timeout, "ttft_timeout": o.TTFTTimeout, "stall_timeout": o.StallTimeout} {
		if d < 0 {
			return nil, fmt.Errorf("%s must not be negative, got %v", name, d)
		}
	}
	if o.MaxBodyBytes < 0 {
		return nil, fmt.Errorf("max body bytes must not be negative, got %d", o.MaxBodyBytes)
	}
	if o.MaxBodyBytes == 0 {
		c.o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.APIKey != "" {
		if strings.ContainsAny(string(o.APIKey), "\r\n") {
			return nil, errors.New("api key must not contain line breaks")
		}
		h := http.Header{}
		Authorize(h, o.APIKey)
		c.auth = h["Authorization"]
	}
	keys := make([]string, 0, len(o.ExtraBody))
	for k := range o.ExtraBody {
		if slices.Contains(reservedKeys, k) {
			return nil, fmt.Errorf("extra body may not set %q: the client sets it", k)
		}
		if k == includeMetricsKey && o.IncludeMetrics != nil {
			return nil, fmt.Errorf("extra body may not set %q: server_timing sets it", k)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(o.ExtraBody[k])
		if err != nil {
			return nil, fmt.Errorf("extra body %q: %w", k, err)
		}
		c.extra = append(append(append(append(c.extra, ','), kb...), ':'), vb...)
	}
	c.secrets = redact.SortSecrets(append([]string{string(o.APIKey)}, o.Secrets...))
	c.red = o.Redactor
	if !api.Pooling {
		c.metrics = o.Metrics.Client(api.Operation, c.server, c.red)
	}
	c.hc, c.resend = o.HTTPClient, o.ResendHTTPClient
	if c.hc == nil {
		c.hc = bounded.NewClient(NewTransport(), 0)
		if c.resend == nil {
			c.resend = bounded.NewClient(NewTransport(), 0)
		}
	}
	maxBody := c.o.MaxBodyBytes
	c.parsers.New = func() any { return sse.NewParser(nil, sse.Options{MaxBodyBytes: maxBody}) }
	return c, nil
}

// Authorize attaches the API key to h as "Authorization: Bearer <key>";
// an empty key leaves h as it is. It is the one place where llmprobe builds
// credentials: the streaming client, discovery, /tokenize and the scrape of
// a target's /metrics all go through it. The key must not contain line
// breaks (config and New refuse such keys).
func Authorize(h http.Header, key config.Secret) {
	if key == "" {
		return
	}
	h.Set("Authorization", "Bearer "+string(key))
}

// NoRedirects is bounded.NoRedirects, the CheckRedirect of every client
// llmprobe builds: a redirect is answered as it is (an invalid_response
// naming the Location), never followed, since following would send the
// credentials to another address, turns the POST into a GET and hides a
// misconfigured base URL.
var NoRedirects = bounded.NoRedirects

// NewTransport returns the default transport of a Client: HTTP/1.1 only
// (one stream per connection, as vllm bench serve's aiohttp), keep-alive
// with up to 1024 idle connections per host, no transparent compression
// (it would buffer the stream), no proxy. Exported so that several Clients
// (targets) can share one connection pool.
func NewTransport() *http.Transport {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		DialContext:           d.DialContext,
		MaxIdleConns:          0, // no global limit
		MaxIdleConnsPerHost:   1024,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
		ForceAttemptHTTP2:     false,
		WriteBufferSize:       32 << 10,
		ReadBufferSize:        16 << 10,
	}
}

// CloseIdleConnections closes the idle connections of the Client's HTTP
// clients (call it when the Client is dropped, e.g. on config reload).
func (c *Client) CloseIdleConnections() {
	c.hc.CloseIdleConnections()
	if c.resend != nil {
		c.resend.CloseIdleConnections()
	}
}

// URL is the endpoint URL requests are sent to.
func (c *Client) URL() string { return c.url }

// Do sends req and fills rec with its measurement. The caller sets
// rec.Scheduled (and Target, Probe, QueueWait) beforehand; Do keeps those
// and overwrites every other field. Do never panics: an internal panic
// becomes a failed Record (invalid_response). Cancelling ctx aborts the
// request and classifies it as canceled.
func (c *Client) Do(ctx context.Context, req Request, rec *prober.Record) {
	*rec = prober.Record{
		Target:    rec.Target,
		Probe:     rec.Probe,
		Model:     rec.Model,
		Scheduled: rec.Scheduled,
		QueueWait: rec.QueueWait,
	}
	if rec.Model == "" || req.Model != "" {
		rec.Model = c.model(&req)
	}
	rec.RequestID = req.ID
	rec.InputTokens = req.InputTokens
	rec.OutputTokensRequested = req.MaxTokens
	rec.Features = req.Features
	rec.Images = len(req.Images)
	for _, im := range req.Images {
		rec.ImageBytes += int64(im.Bytes)
	}
	if !c.api.Streams {
		req.NoStream = true
	}
	if c.api.Pooling {
		rec.Inputs = len(req.Inputs)
	}
	rec.NoStream = req.NoStream
	if req.Check != nil && req.Collect == nil {
		req.Collect = &bytes.Buffer{}
	}
	var provider string
	if c.o.Provider != nil && (c.o.Tracer != nil || c.metrics != nil) {
		provider = c.o.Provider()
	}
	// The span ends, and the metrics record, after the recovery below has
	// classified a panic.
	if c.metrics != nil {
		defer c.metrics.Record(ctx, provider, rec)
	}
	if c.o.Tracer != nil {
		var span trace.Span
		ctx, span = tracing.StartRequest(ctx, c.o.Tracer, tracing.Request{Operation: c.api.Operation, Model: rec.Model,
			Provider: provider, RequestID: req.ID, Server: c.server, Stream: !req.NoStream}, c.red)
		rec.TraceID = tracing.TraceID(span)
		defer tracing.EndRequest(span, rec)
	}
	defer func() {
		if p := recover(); p != nil {
			rec.Error = prober.ClassInvalidResponse
			rec.ErrorMessage = c.clean(fmt.Sprintf("internal error: %v", p), &req, false)
		}
	}()
	class, msg, fromServer := c.do(ctx, &req, rec)
	// A response that answered with a tool call has no text to check
	// against a response_format: its calls were checked instead.
	if class == prober.ClassNone && req.Check != nil && !(rec.ToolCalls > 0 && req.Collect.Len() == 0) {
		if err := req.Check(req.Collect.Bytes()); err != nil {
			class, msg, fromServer = prober.ClassInvalidResponse, "response_format: "+err.Error(), true
		}
	}
	if class != prober.ClassNone {
		rec.Error = class
		rec.ErrorMessage = c.clean(msg, &req, fromServer)
	}
}

// Header values shared by every request (the transport only reads them).
var (
	headerJSON        = []string{"application/json"}
	headerEventStream = []string{"text/event-stream"}
	headerUserAgent   = []string{"llmprobe"}
)

// Timer causes.
var (
	errTimeout     = errors.New("request timeout")
	errTTFTTimeout = errors.New("ttft timeout")
	errStall       = errors.New("stream stalled")
	errDrained     = errors.New("drain after [DONE] timed out")
)

func (c *Client) do(parent context.Context, req *Request, rec *prober.Record) (prober.ErrorClass, string, bool) {
	body, err := c.payload(req)
	if err != nil {
		return prober.ClassInvalidResponse, "encode request: " + err.Error(), false
	}
	class, msg, fromServer, retry := c.attempt(parent, req, rec, body, false)
	if retry == prober.RetryNone {
		return class, msg, fromServer
	}
	// The first attempt died on a stale kept-alive connection before any
	// response byte (resend.go): the server never saw it, or never
	// answered it; resend it once, on a new connection, and measure the
	// resend alone.
	rec.Retry = retry
	class, msg, fromServer, _ = c.attempt(parent, req, rec, body, true)
	return class, msg, fromServer
}

// attempt sends body once and measures it into rec. resend marks the
// second attempt of a request: it goes through the resend client on a new
// connection that is closed after it. retry is the reason to resend when
// this first attempt failed on a reused connection before any response
// byte (RetryNone otherwise, and always for a resend).
func (c *Client) attempt(parent context.Context, req *Request, rec *prober.Record, body []byte, resend bool) (
	class prober.ErrorClass, msg string, fromServer bool, retry prober.RetryReason) {
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	tr := &phaseTrace{phases: c.o.Trace}
	ctx = tr.with(ctx)
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return prober.ClassInvalidResponse, "build request: " + err.Error(), false, prober.RetryNone
	}
	c.setHeaders(hreq.Header, req)
	if c.o.Tracer != nil {
		tracing.Inject(ctx, hreq.Header) // traceparent, tracestate
	}
	hc := c.hc
	if resend {
		hc = c.resendClient()
		hreq.Close = true // the resend pool never keeps a connection: each resend dials
	}

	m := measurer{
		rec:          rec,
		api:          c.api,
		rerankPath:   c.o.RerankPath,
		inputs:       len(req.Inputs),
		topN:         req.TopN,
		timeout:      c.o.Timeout,
		ttftTimeout:  c.o.TTFTTimeout,
		stallTimeout: c.o.StallTimeout,
		maxTokens:    req.MaxTokens,
		collect:      req.Collect,
		lps:          req.CollectLogprobs,
	}
	if len(req.Tools) > 0 {
		m.tools, m.toolList, m.checkTool = &toolCalls{}, req.Tools, req.CheckTool
	}
	t0 := time.Now()
	m.t0 = t0
	rec.Sent = t0
	rec.WallStart = t0.Round(0)
	if !rec.Scheduled.IsZero() {
		rec.SendLag = t0.Sub(rec.Scheduled)
	}
	var timeout *time.Timer
	if c.o.Timeout > 0 {
		timeout = time.AfterFunc(c.o.Timeout, func() { cancel(errTimeout) })
		defer timeout.Stop()
	}
	if c.o.TTFTTimeout > 0 && !req.NoStream {
		m.ttftTimer = time.AfterFunc(c.o.TTFTTimeout, func() { cancel(errTTFTTimeout) })
		defer m.ttftTimer.Stop()
	}
	if c.o.StallTimeout > 0 && !req.NoStream {
		m.stall = &watchdog{d: c.o.StallTimeout, t0: t0, cancel: cancel}
		defer m.stall.stop()
	}

	resp, err := hc.Do(hreq)
	var firstByte time.Time
	if c.o.Trace {
		// Also when Do failed: the phases that happened before it did.
		firstByte = tr.setPhases(rec)
	}
	if err != nil {
		if class, msg, ok := ctxClass(ctx, parent, &m); ok {
			return class, msg, false, prober.RetryNone
		}
		if badResponseHeader(err) {
			// The server answered, with a header block the transport
			// refused: not a connection failure.
			return prober.ClassInvalidResponse, err.Error(), false, prober.RetryNone
		}
		if !resend && !c.noResend {
			retry = resendReason(tr, err)
		}
		return prober.ClassConnect, err.Error(), false, retry
	}
	defer resp.Body.Close()
	rec.HTTPStatus = resp.StatusCode
	rec.HeadersTime = time.Since(t0)
	c.recordEcho(resp.Header, rec) // attribution.go
	class, msg, fromServer = c.read(ctx, parent, req, resp, &m, timeout, cancel)
	if c.o.Trace {
		m.setStreamPhases(firstByte, class)
	}
	return class, msg, fromServer, prober.RetryNone
}

// setHeaders sets the request headers of req.
func (c *Client) setHeaders(h http.Header, req *Request) {
	for k, v := range req.Header {
		h[k] = v
	}
	h["Content-Type"] = headerJSON
	h["Accept"] = headerEventStream
	if req.NoStream {
		h["Accept"] = headerJSON
	}
	h["User-Agent"] = headerUserAgent
	if c.auth != nil {
		h["Authorization"] = c.auth
	}
	if req.ID != "" {
		h["X-Request-Id"] = []string{req.ID}
	}
	if c.api.decode == decodeMessages {
		c.setMessagesHeaders(h) // messages.go
	}
}

// read checks and measures the response of one attempt. timeout is the
// request's timeout timer (nil when off); it bounds the drain after [DONE].
func (c *Client) read(ctx, parent context.Context, req *Request, resp *http.Response, m *measurer,
	timeout *time.Timer, cancel context.CancelCauseFunc) (prober.ErrorClass, string, bool) {
	if resp.StatusCode != http.StatusOK {
		return statusError(resp)
	}
	if req.NoStream {
		return c.readResponse(ctx, parent, resp, m)
	}
	if ct := resp.Header.Get("Content-Type"); !isEventStream(ct) {
		return prober.ClassInvalidResponse, fmt.Sprintf("content type %q, want text/event-stream", trimTo(ct, 64)), false
	}
	if ce := resp.Header.Get("Content-Encoding"); !isIdentity(ce) {
		// The client asks for no encoding (no Accept-Encoding, the
		// transport's compression is off): an encoded body is not the
		// stream it asked for, whatever it would decode to.
		return prober.ClassInvalidResponse, fmt.Sprintf("unsolicited content encoding %q, want none", trimTo(ce, 64)), false
	}

	p := c.parsers.Get().(*sse.Parser)
	p.Reset(resp.Body)
	defer func() {
		p.Reset(nil)
		c.parsers.Put(p)
	}()
	class, msg, fromServer := m.run(p)
	if class == prober.ClassNone && m.done {
		// Read to the end of the body so the connection can be reused;
		// anything after [DONE] no longer changes the result.
		// The request's timeout timer, when there is one, bounds the drain
		// (whatever it cancels with no longer matters); else a timer of its
		// own.
		m.stopTimers()
		if timeout != nil {
			timeout.Reset(drainTimeout)
		} else {
			timeout = time.AfterFunc(drainTimeout, func() { cancel(errDrained) })
		}
		for range 16 {
			if _, err := p.Next(); err != nil {
				break
			}
		}
		timeout.Stop()
		return class, msg, fromServer
	}
	if class == prober.ClassStream || class == prober.ClassInvalidResponse {
		// A read error may be the consequence of a timer or the caller
		// cancelling: that is the real reason.
		if c2, msg2, ok := ctxClass(ctx, parent, m); ok && m.readErr {
			return c2, msg2, false
		}
	}
	return class, msg, fromServer
}

// isIdentity reports whether a Content-Encoding value means no encoding.
func isIdentity(ce string) bool {
	ce = strings.TrimSpace(ce)
	return ce == "" || strings.EqualFold(ce, "identity")
}

func isEventStream(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "text/event-stream")
}
