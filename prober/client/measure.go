package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http/httptrace"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/sse"
)

// measurer turns the events of one stream into a Record. It is the per-token
// hot path: per event it does one parser call, one allocation-free JSON
// decode and a few field updates.
type measurer struct {
	rec *prober.Record
	api *API // the request's API (api.go)
	// rerankPath, inputs, topN: an embeddings or rerank request
	// (pooling.go).
	rerankPath string
	inputs     int
	topN       int
	t0         time.Time

	timeout, ttftTimeout, stallTimeout time.Duration
	maxTokens                          int
	collect                            *bytes.Buffer // Request.Collect
	lps                                *Logprobs     // Request.CollectLogprobs
	ttftTimer                          *time.Timer   // nil when off
	stall                              *watchdog     // nil when off

	c           chunk
	re          respEvent
	me          msgEvent   // the Messages API (messages.go)
	tools       *toolCalls // Request.Tools: the calls assembled (nil when off)
	toolList    []Tool
	checkTool   func(name string, args []byte) error
	gotToken    bool // a token-bearing event arrived
	gotText     bool // an event with non-empty text arrived
	gotReason   bool // a reasoning delta arrived
	gotAnswer   bool // content or a tool call arrived (ends the thinking)
	gotTool     bool // a tool-call delta arrived
	reasonTok   bool // reasoning tokens came from a usage chunk
	reasonings  int  // reasoning deltas
	lastReason  time.Time
	done        bool // [DONE] arrived
	usageTokens bool // completion tokens came from a usage chunk
	readErr     bool // the stream ended with a read error (or EOF)
	counted     int  // token events that carry a token (see token)
	lastTok     time.Time
	lastEvent   time.Time
}

// EmptyAnswer is the error text of a response that ended without content,
// a tool call or reasoning (class invalid_response), streamed or not.
const EmptyAnswer = "empty answer: the response ended without content, a tool call or reasoning"

// run reads events until [DONE] or a failure and fills the Record. It
// returns the error class (ClassNone on success), a message, and whether the
// message comes from the server (so it may echo the prompt).
func (m *measurer) run(p *sse.Parser) (prober.ErrorClass, string, bool) {
	class, msg, fromServer := m.loop(p)
	rec := m.rec
	if m.gotToken {
		rec.E2E = m.lastTok.Sub(m.t0)
	}
	if !m.usageTokens {
		rec.CompletionTokens = m.counted
		rec.TokensCounted = true
	}
	if m.gotReason {
		if !m.gotAnswer {
			rec.ThinkingTime = m.lastReason.Sub(m.t0) - rec.TTFR
		}
		if !m.reasonTok {
			rec.ReasoningTokens, rec.ReasoningTokensCounted = m.reasonings, true
		}
	}
	if m.tools != nil {
		rec.ToolCalls = len(m.tools.calls)
	}
	if class == prober.ClassNone && !m.gotToken {
		return prober.ClassInvalidResponse, "stream finished without a token event", false
	}
	if class == prober.ClassNone && !m.gotText && !m.gotTool && !m.gotReason {
		// A chat role chunk (or chunks of empty text) and then the end: no
		// answer came (an immediate EOS, a broken template).
		return prober.ClassInvalidResponse, EmptyAnswer, false
	}
	if class == prober.ClassNone && m.tools != nil {
		if why := m.tools.check(m.toolList, m.checkTool); why != "" {
			return prober.ClassInvalidResponse, why, true
		}
	}
	return class, msg, fromServer
}

func (m *measurer) loop(p *sse.Parser) (prober.ErrorClass, string, bool) {
	rec := m.rec
	for {
		if m.tools != nil && m.tools.err != "" {
			// A cap passed (MaxToolCalls, MaxToolCallBytes) or a call
			// that cannot be assembled: the response is invalid whatever
			// follows, so it ends here rather than read on until the
			// timeout.
			return prober.ClassInvalidResponse, m.tools.err, false
		}
		ev, err := p.Next()
		if err != nil {
			return m.endError(err)
		}
		at := ev.At
		since := at.Sub(m.t0)
		// The timers cancel the request; these checks make the class agree
		// with the timestamps when an event beats its timer by a hair.
		switch {
		case m.timeout > 0 && since > m.timeout:
			return prober.ClassTimeout, "no complete response within timeout " + m.timeout.String(), false
		case !m.gotToken && m.ttftTimeout > 0 && since > m.ttftTimeout:
			return prober.ClassTTFTTimeout, "no token event within ttft_timeout " + m.ttftTimeout.String(), false
		case m.gotToken && m.stallTimeout > 0 && at.Sub(m.lastEvent) > m.stallTimeout:
			return prober.ClassStall, "no event for stall_timeout " + m.stallTimeout.String() +
				" after " + strconv.Itoa(rec.Events) + " token events", false
		}
		m.lastEvent = at
		if m.gotToken && m.stall != nil {
			m.stall.touch(since)
		}
		if ev.IsDone() {
			rec.Done = since
			m.done = true
			return prober.ClassNone, "", false
		}
		if ev.Partial {
			return prober.ClassStream, "stream ended in the middle of an event", false
		}
		if m.api.decode == decodeResponses || m.api.decode == decodeMessages {
			if class, msg, fromServer, end := m.namedEvent(at, since, ev.Type, ev.Data); end {
				return class, msg, fromServer
			}
			continue
		}
		if string(ev.Type) == "error" {
			return prober.ClassStream, "server error event: " + trimTo(string(ev.Data), maxErrorMessage), true
		}
		c := &m.c
		if err := decodeChunk(ev.Data, c); err != nil {
			class, msg := m.malformed(err)
			return class, msg, false
		}
		if c.isError {
			msg := "server error event"
			if c.errMsg != nil {
				msg += ": " + rawString(c.errMsg, c.errMsgEscaped)
			}
			return prober.ClassStream, msg, true
		}
		if rec.ResponseID == "" && c.id != nil {
			rec.ResponseID = trimTo(rawString(c.id, c.idEsc), prober.MaxResponseIDBytes)
		}
		if rec.ResponseModel == "" && c.model != nil {
			rec.ResponseModel = trimTo(rawString(c.model, c.modelEsc), prober.MaxResponseIDBytes)
		}
		if c.choices > 0 {
			m.token(at, since, c)
		}
		if c.hasUsage {
			if c.hasCompletion {
				rec.CompletionTokens = c.completionTokens
				m.usageTokens = true
			}
			if c.hasPrompt {
				rec.PromptTokens = c.promptTokens
			}
			if c.hasCached {
				rec.CachedTokens, rec.CachedTokensReported = c.cachedTokens, true
			}
			if c.hasReasonTokens {
				rec.ReasoningTokens = c.reasonTokens
				m.reasonTok = true
			}
		}
		if c.hasDraft && c.hasDraftAccepted {
			rec.DraftTokens, rec.DraftAccepted, rec.DraftReported = c.draftTokens, c.draftAccepted, true
		}
		if c.hasSrvQueue || c.hasSrvTTFT || c.hasSrvGen {
			serverTiming(rec, c.hasSrvQueue, c.srvQueue, c.hasSrvTTFT, c.srvTTFT, c.hasSrvGen, c.srvGen)
		}
	}
}

// MaxServerMillis bounds a server-reported time (vLLM's per-request
// metrics, in milliseconds): a figure above it (about 11.6 days, longer
// than any request's timeout) is not a request's timing and is not kept.
const MaxServerMillis = 1e9

// serverTiming keeps the server's per-request timing figures (each known
// when its has flag is set and it is at most MaxServerMillis) in rec.
func serverTiming(rec *prober.Record, hasQueue bool, queue float64, hasTTFT bool, ttft float64, hasGen bool, gen float64) {
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	if hasQueue && queue <= MaxServerMillis {
		rec.ServerQueueTime, rec.HasServerQueue = ms(queue), true
	}
	if hasTTFT && ttft <= MaxServerMillis {
		rec.ServerTTFT, rec.HasServerTTFT = ms(ttft), true
	}
	if hasGen && gen <= MaxServerMillis {
		rec.ServerGenerationTime, rec.HasServerGenerationTime = ms(gen), true
	}
}

// token records a token-bearing event (non-empty choices), vLLM's rule.
func (m *measurer) token(at time.Time, since time.Duration, c *chunk) {
	rec := m.rec
	if !m.gotToken {
		m.gotToken = true
		rec.TTFT = since
		if m.ttftTimer != nil {
			m.ttftTimer.Stop()
		}
		if m.stall != nil {
			m.stall.start(since)
		}
		n := 64
		if m.maxTokens > 0 {
			n = min(max(m.maxTokens, 16), maxITLPrealloc)
		}
		rec.ITL = make([]time.Duration, 0, n)
	} else {
		rec.ITL = append(rec.ITL, at.Sub(m.lastTok))
	}
	m.lastTok = at
	rec.Events++
	if c.hasReasoning {
		m.reasoning(at, since)
	}
	if c.hasText && !m.gotText {
		m.gotText = true
		rec.TTFTText = since
		m.answer(since)
	}
	if c.toolCalls != nil {
		m.toolCall(since, c.toolCalls)
	}
	if c.hasText && m.collect != nil {
		m.collectText(c.text, c.textEscaped)
	}
	// Without usage, output tokens are counted one per token event, except
	// chat's role-only chunk (a role and no content) and the finish-only
	// chunk (no text or content, a finish_reason), which carry none. The
	// events still count for TTFT, ITL and E2E (vLLM's rule).
	if c.hasText || !(m.api.Messages && c.hasRole) && !c.hasFinish {
		m.counted++
	}
	if c.hasLogprobs {
		rec.Logprobs = true
		if m.lps != nil {
			m.lps.add(c.logprobs)
		}
	}
	if c.hasFinish && (c.finishEscaped || string(c.finish) != rec.FinishReason) {
		rec.FinishReason = rawString(c.finish, c.finishEscaped)
	}
}

// delta measures one delta event of the Responses or the Messages API (its
// answer text, reasoning or a tool call's arguments, of output item or
// content block index) as a chat chunk with choices: the same TTFT, ITL
// and E2E rules.
func (m *measurer) delta(at time.Time, since time.Duration, k deltaKind, index int, delta []byte, esc bool) {
	c := &m.c
	*c = chunk{choices: 1}
	switch k {
	case deltaText:
		c.hasText = len(delta) > 0
		c.text, c.textEscaped = delta, esc
	case deltaThinking:
		c.hasReasoning = true
	}
	m.token(at, since, c)
	if k == deltaToolArgs {
		m.toolCall(since, nil)
		if m.tools != nil {
			m.tools.add(index, "", rawString(delta, esc))
		}
	}
}

// reasoning records a reasoning delta.
func (m *measurer) reasoning(at time.Time, since time.Duration) {
	if !m.gotReason {
		m.gotReason = true
		m.rec.TTFR = since
	}
	m.reasonings++
	m.lastReason = at
}

// answer records the first answer delta (content or a tool call): it ends
// the thinking.
func (m *measurer) answer(since time.Duration) {
	if m.gotAnswer {
		return
	}
	m.gotAnswer = true
	if m.gotReason {
		m.rec.ThinkingTime = since - m.rec.TTFR
	}
}

// toolCall records a tool-call delta; raw is its tool_calls array (chat)
// or nil (the Responses API, whose argument deltas toolArgs assembles).
func (m *measurer) toolCall(since time.Duration, raw []byte) {
	if !m.gotTool {
		m.gotTool = true
		m.rec.FirstToolCall = since
		m.answer(since)
	}
	if m.tools != nil && raw != nil {
		m.tools.addChat(raw)
	}
}

// collectText appends one event's text to Request.Collect, unescaped,
// within MaxCollect.
func (m *measurer) collectText(raw []byte, esc bool) {
	room := MaxCollect - m.collect.Len()
	if room <= 0 {
		return
	}
	t := raw
	if esc {
		t = unescape(raw)
	}
	if len(t) > room {
		t = t[:room]
	}
	m.collect.Write(t)
}

// endError classifies the end of the stream before [DONE].
func (m *measurer) endError(err error) (prober.ErrorClass, string, bool) {
	m.readErr = true
	switch {
	case errors.Is(err, io.EOF):
		return prober.ClassStream, "stream ended before " + m.api.streamEnd + " after " + strconv.Itoa(m.rec.Events) + " token events", false
	case errors.Is(err, sse.ErrTooLarge):
		if !m.gotToken {
			return prober.ClassInvalidResponse, err.Error(), false
		}
		return prober.ClassStream, err.Error(), false
	}
	return prober.ClassStream, "read: " + err.Error(), false
}

func (m *measurer) stopTimers() {
	if m.ttftTimer != nil {
		m.ttftTimer.Stop()
	}
	if m.stall != nil {
		m.stall.stop()
	}
}

// watchdog cancels the request when no event arrived for d. It is lazy: an
// event only stores its time (one atomic store, no timer reset on the hot
// path); when the timer fires it re-arms itself for the remaining time
// unless the stream really was silent for d.
type watchdog struct {
	d      time.Duration
	t0     time.Time
	cancel context.CancelCauseFunc
	last   atomic.Int64 // time of the last event, ns since t0

	mu      sync.Mutex
	t       *time.Timer
	stopped bool
}

func (w *watchdog) start(since time.Duration) {
	w.last.Store(int64(since))
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped {
		w.t = time.AfterFunc(w.d, w.fire)
	}
}

func (w *watchdog) touch(since time.Duration) { w.last.Store(int64(since)) }

func (w *watchdog) fire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	idle := time.Since(w.t0) - time.Duration(w.last.Load())
	if idle >= w.d {
		w.cancel(errStall)
		return
	}
	w.t.Reset(w.d - idle)
}

func (w *watchdog) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	if w.t != nil {
		w.t.Stop()
	}
}

// phaseTrace follows one attempt's connection through httptrace: whether
// the transport reused a kept-alive connection and whether a response byte
// arrived (for the resend rule, resend.go), and, with phases, the times of
// the HTTP phases (prober.Phases) up to the first response byte. Its
// callbacks may run on the transport's goroutines, hence the atomics and the
// mutex. None of it runs per token: the callbacks fire a few times per
// request, and the streaming phases are derived from the Record's times
// when the attempt ends (setPhases).
type phaseTrace struct {
	ct                 httptrace.ClientTrace
	phases             bool // Options.Trace: record the phase times
	reused, firstByte  atomic.Bool
	mu                 sync.Mutex
	dnsStart, dnsEnd   time.Time
	connStart, connEnd time.Time
	tlsStart, tlsEnd   time.Time
	gotConn, wrote     time.Time
	firstByteAt        time.Time
}

func (t *phaseTrace) with(ctx context.Context) context.Context {
	t.ct = httptrace.ClientTrace{
		// A transport that retries by itself (a write that failed before
		// any byte) reports a connection per try: the last one counts.
		GotConn: func(ci httptrace.GotConnInfo) {
			t.reused.Store(ci.Reused)
			if t.phases {
				t.set(&t.gotConn, false)
			}
		},
		GotFirstResponseByte: func() {
			t.firstByte.Store(true)
			if t.phases {
				t.set(&t.firstByteAt, true)
			}
		},
	}
	if t.phases {
		t.ct.DNSStart = func(httptrace.DNSStartInfo) { t.set(&t.dnsStart, true) }
		t.ct.DNSDone = func(httptrace.DNSDoneInfo) { t.set(&t.dnsEnd, false) }
		t.ct.ConnectStart = func(string, string) { t.set(&t.connStart, true) }
		t.ct.ConnectDone = func(string, string, error) { t.set(&t.connEnd, false) }
		t.ct.TLSHandshakeStart = func() { t.set(&t.tlsStart, true) }
		t.ct.TLSHandshakeDone = func(tls.ConnectionState, error) { t.set(&t.tlsEnd, false) }
		t.ct.WroteRequest = func(httptrace.WroteRequestInfo) { t.set(&t.wrote, false) }
	}
	return httptrace.WithClientTrace(ctx, &t.ct)
}

// set records now in *p: the first time only when first is set (a dial
// that races several addresses starts several times), else the last.
func (t *phaseTrace) set(p *time.Time, first bool) {
	now := time.Now()
	t.mu.Lock()
	if !first || p.IsZero() {
		*p = now
	}
	t.mu.Unlock()
}

// span returns end - start when both happened in that order, else 0.
func span(start, end time.Time) time.Duration {
	if start.IsZero() || !end.After(start) {
		return 0
	}
	return end.Sub(start)
}

// setPhases writes the phase times up to the first response byte into rec
// (every one of them, so that a resend's replace the first attempt's; 0
// for a phase that did not happen) and returns the time of the first
// response byte (zero when none arrived).
func (t *phaseTrace) setPhases(rec *prober.Record) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	rec.ResolveTime = span(t.dnsStart, t.dnsEnd)
	rec.ConnectTime = span(t.connStart, t.connEnd)
	rec.TLSTime = span(t.tlsStart, t.tlsEnd)
	rec.WriteTime = span(t.gotConn, t.wrote)
	rec.WaitTime = span(t.wrote, t.firstByteAt)
	return t.firstByteAt
}

// setStreamPhases writes the phases after the first response byte
// (firstByte, zero when unknown) into rec once the attempt has ended with
// class: first_token when a token event arrived, transfer when the request
// succeeded. They are derived from the Record's times, so the per-token path
// does nothing for them.
func (m *measurer) setStreamPhases(firstByte time.Time, class prober.ErrorClass) {
	rec := m.rec
	rec.FirstTokenTime, rec.TransferTime = 0, 0
	if firstByte.IsZero() {
		return
	}
	fb := firstByte.Sub(m.t0)
	switch {
	case rec.NoStream:
		if class == prober.ClassNone && rec.E2E > fb {
			rec.TransferTime = rec.E2E - fb
		}
	case m.gotToken:
		if rec.TTFT > fb {
			rec.FirstTokenTime = rec.TTFT - fb
		}
		end := rec.E2E
		if rec.Done > end {
			end = rec.Done
		}
		if class == prober.ClassNone && end > rec.TTFT {
			rec.TransferTime = end - rec.TTFT
		}
	}
}

// malformed classes an event its decoder refused: before the first token
// an invalid response, after it a broken stream.
func (m *measurer) malformed(err error) (prober.ErrorClass, string) {
	if !m.gotToken {
		return prober.ClassInvalidResponse, "first event: " + err.Error()
	}
	return prober.ClassStream, "malformed event: " + err.Error()
}
