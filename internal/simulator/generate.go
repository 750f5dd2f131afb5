package simulator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/go-kit/log/level"
)

type apiKind int

const (
	kindCompletion apiKind = iota
	kindChat
)

type streamOptions struct {
	IncludeUsage         bool `json:"include_usage"`
	ContinuousUsageStats bool `json:"continuous_usage_stats"`
}

// genRequestJSON is the body of /v1/completions and /v1/chat/completions;
// fields the simulator does not model (temperature, top_p, ...) are ignored.
type genRequestJSON struct {
	Model               *string         `json:"model"`
	Prompt              json.RawMessage `json:"prompt"`
	Messages            *[]chatMessage  `json:"messages"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	MinTokens           *int            `json:"min_tokens"`
	IgnoreEOS           bool            `json:"ignore_eos"`
	Stream              bool            `json:"stream"`
	StreamOptions       *streamOptions  `json:"stream_options"`
	N                   *int            `json:"n"`
	featureFields                       // logprobs, response_format, sampling (features.go)
}

// genRequest is a validated generation request.
type genRequest struct {
	kind            apiKind
	prompt          []int
	maxTokens       int
	minTokens       int
	ignoreEOS       bool
	stream          bool
	includeUsage    bool
	continuousUsage bool
	// Request features (features.go): the model named (the served one or
	// a LoRA adapter), logprobs, and the JSON of a response_format.
	model       string
	logprobs    bool
	topLogprobs int
	structured  []byte
}

// parseGen reads and validates a generation request as vLLM does.
func (s *Simulator) parseGen(w http.ResponseWriter, r *http.Request, kind apiKind) (*genRequest, *apiError) {
	var body genRequestJSON
	if e := readJSON(w, r, &body); e != nil {
		return nil, e
	}
	if e := s.checkModel(body.Model); e != nil {
		return nil, e
	}
	g := &genRequest{kind: kind, ignoreEOS: body.IgnoreEOS, stream: body.Stream}
	if e := s.parseFeatures(&body, g); e != nil {
		return nil, e
	}
	if body.StreamOptions != nil {
		if !body.Stream {
			return nil, badRequest("stream_options", "Stream options can only be defined when `stream=True`.")
		}
		g.includeUsage = body.StreamOptions.IncludeUsage
		g.continuousUsage = g.includeUsage && body.StreamOptions.ContinuousUsageStats
	}
	if body.N != nil && *body.N != 1 {
		return nil, badRequest("n", "n must be 1: the simulator generates one choice per request, got %d", *body.N)
	}
	maxTokens := body.MaxTokens
	switch kind {
	case kindCompletion:
		p, e := parsePrompt(body.Prompt)
		if e != nil {
			return nil, e
		}
		g.prompt = p
		if maxTokens == nil {
			sixteen := 16 // vLLM's (and OpenAI's) completions default
			maxTokens = &sixteen
		}
	case kindChat:
		if body.Messages == nil || len(*body.Messages) == 0 {
			return nil, badRequest("messages", "messages must be a non-empty list")
		}
		text, err := renderChat(*body.Messages, true)
		if err != nil {
			return nil, badRequest("messages", "%v", err)
		}
		g.prompt = tokenize(text)
		if body.MaxCompletionTokens != nil {
			maxTokens = body.MaxCompletionTokens
		}
	}
	if len(g.prompt) >= s.cfg.MaxModelLen {
		return nil, badRequest("", "This model's maximum context length is %d tokens. However, your request has %d input tokens. "+
			"Please reduce the length of the input messages.", s.cfg.MaxModelLen, len(g.prompt))
	}
	if maxTokens == nil {
		g.maxTokens = s.cfg.MaxModelLen - len(g.prompt)
	} else {
		g.maxTokens = *maxTokens
	}
	param := "max_tokens"
	if kind == kindChat && body.MaxCompletionTokens != nil {
		param = "max_completion_tokens"
	}
	if g.maxTokens < 1 {
		return nil, badRequest(param, "max_tokens must be at least 1, got %d.", g.maxTokens)
	}
	// Written so that a huge max_tokens cannot overflow (len(prompt) < MaxModelLen here).
	if g.maxTokens > s.cfg.MaxModelLen-len(g.prompt) {
		return nil, badRequest(param, "This model's maximum context length is %d tokens. However, you requested %d tokens "+
			"(%d in the messages, %d in the completion). Please reduce the length of the messages or completion.",
			s.cfg.MaxModelLen, uint64(len(g.prompt))+uint64(g.maxTokens), len(g.prompt), g.maxTokens)
	}
	if body.MinTokens != nil {
		g.minTokens = *body.MinTokens
		if g.minTokens < 0 {
			return nil, badRequest("min_tokens", "min_tokens must be greater than or equal to 0, got %d.", g.minTokens)
		}
		if g.minTokens > g.maxTokens {
			return nil, badRequest("min_tokens", "min_tokens must be less than or equal to max_tokens=%d, got %d.", g.maxTokens, g.minTokens)
		}
	}
	return g, nil
}

// parsePrompt accepts a string, an array of token ids, or a one-element
// array of either (batched prompts are not simulated).
func parsePrompt(raw json.RawMessage) ([]int, *apiError) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, badRequest("prompt", "Either prompt or prompt_embeds must be provided and non-empty.")
	}
	var ids []int
	var text string
	var texts []string
	var idLists [][]int
	switch {
	case json.Unmarshal(raw, &text) == nil:
		ids = tokenize(text)
	case json.Unmarshal(raw, &ids) == nil:
	case json.Unmarshal(raw, &texts) == nil:
		if len(texts) != 1 {
			return nil, badRequest("prompt", "the simulator takes exactly one prompt per request, got %d", len(texts))
		}
		ids = tokenize(texts[0])
	case json.Unmarshal(raw, &idLists) == nil:
		if len(idLists) != 1 {
			return nil, badRequest("prompt", "the simulator takes exactly one prompt per request, got %d", len(idLists))
		}
		ids = idLists[0]
	default:
		return nil, badRequest("prompt", "prompt must be a string, an array of token ids, or a one-element array of either")
	}
	for _, id := range ids {
		if id < 0 || id >= VocabSize {
			return nil, badRequest("prompt", "token id %d is out of vocabulary [0, %d)", id, VocabSize)
		}
	}
	if len(ids) == 0 {
		return nil, badRequest("prompt", "the prompt must contain at least one token")
	}
	return ids, nil
}

// faultPlan is the faults drawn for one request.
type faultPlan struct {
	terminal                                    string // reset, 429, 500, 503, hang or ""
	stallBefore, stallMid, cut, malformed, drip bool
	errorEvent                                  bool
	stallFor, dripEvery                         time.Duration
	names                                       []string
}

// drawFaults draws each fault independently from (seed, request number,
// fault index). The first terminal fault drawn (in the order connection
// reset, 429, 500, 503, hang) decides the request's fate; the others combine.
func (s *Simulator) drawFaults(reqNo uint64) faultPlan {
	f := s.faults.Load()
	fp := faultPlan{stallFor: f.StallDuration, dripEvery: f.SlowDripInterval}
	base := hash2(uint64(s.cfg.Seed)^0xfa017, reqNo)
	for i, p := range f.probabilities() {
		if !(p.p > 0) || uniform(hash2(base, uint64(i))) >= p.p {
			continue
		}
		switch p.name {
		case faultReset, faultHTTP429, faultHTTP500, faultHTTP503, faultHang:
			if fp.terminal != "" {
				continue
			}
			fp.terminal = p.name
		case faultStallBefore:
			fp.stallBefore = true
		case faultStallMid:
			fp.stallMid = true
		case faultCut:
			fp.cut = true
		case faultMalformed:
			fp.malformed = true
		case faultSlowDrip:
			fp.drip = true
		case faultErrorEvent:
			fp.errorEvent = true
		}
		fp.names = append(fp.names, p.name)
	}
	return fp
}

// newSequence draws the request's output: with ignore_eos (or EOS
// probability 0) it runs to max_tokens; otherwise its natural length is
// min_tokens + Geometric(eos-probability), a pure function of the seed and
// the prompt, and it stops there (finish_reason stop, the EOS token counted
// but without text) unless max_tokens comes first (length).
func (s *Simulator) newSequence(g *genRequest) *sequence {
	seq := &sequence{
		prompt:     g.prompt,
		hashes:     promptBlockHashes(g.prompt, s.cfg.BlockSize),
		maxTokens:  g.maxTokens,
		finishLen:  g.maxTokens,
		finishWhy:  finishLength,
		notify:     make(chan struct{}, 1),
		textSeed:   hashTokens(hash2(uint64(s.cfg.Seed), 0x7e47), g.prompt),
		structured: g.structured,
	}
	if !g.ignoreEOS && s.cfg.EOSProbability > 0 {
		// natural = min_tokens + eos <= max_tokens, compared without
		// overflow (parseGen guarantees 0 <= min_tokens <= max_tokens).
		eos := geometric(s.cfg.EOSProbability, uniform(hash2(seq.textSeed, 0xe05)))
		if eos <= g.maxTokens-g.minTokens {
			seq.finishLen, seq.finishWhy = g.minTokens+eos, finishStop
		}
	}
	return seq
}

// outputText is the text of output tokens [from, to) of seq; the EOS token
// of a stopped sequence has no text.
func outputText(seq *sequence, from, to int) string {
	if seq.structured != nil {
		return structuredText(seq, from, to)
	}
	var b strings.Builder
	for i := from; i < to; i++ {
		if i == seq.finishLen-1 && seq.finishWhy == finishStop {
			continue
		}
		b.WriteByte(' ')
		b.WriteString(vocabWord(int(hash2(seq.textSeed, uint64(i)+1) % VocabSize)))
	}
	return b.String()
}

// call is the per-request response state: the writer, its controller, the
// slow-drip setting and the trace record being filled.
type call struct {
	s       *Simulator
	w       http.ResponseWriter
	rc      *http.ResponseController
	ctx     context.Context
	drip    time.Duration
	dripped bool
	tr      TraceRecord
	buf     []byte
}

var errInterrupted = errors.New("interrupted")

// sleep waits d; false when the client left or the simulator stops first.
func (c *call) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.ctx.Done():
	case <-c.s.quit:
	case <-c.s.done:
	}
	return false
}

// write sends b and flushes it (one byte at a time under slow drip).
func (c *call) write(b []byte) error {
	if !c.dripped {
		if _, err := c.w.Write(b); err != nil {
			return err
		}
		return c.rc.Flush()
	}
	for i := range b {
		if _, err := c.w.Write(b[i : i+1]); err != nil {
			return err
		}
		if err := c.rc.Flush(); err != nil {
			return err
		}
		if c.drip > 0 && i < len(b)-1 && !c.sleep(c.drip) {
			return errInterrupted
		}
	}
	return nil
}

// event writes one SSE event and records its flush time if it is a
// content event.
func (c *call) event(payload []byte, content bool) error {
	c.buf = append(c.buf[:0], "data: "...)
	c.buf = append(c.buf, payload...)
	c.buf = append(c.buf, "\n\n"...)
	if err := c.write(c.buf); err != nil {
		return err
	}
	if content {
		c.tr.EventsNS = append(c.tr.EventsNS, time.Now().UnixNano())
	}
	return nil
}

// fail answers with a vLLM-shaped error.
func (c *call) fail(e *apiError) {
	writeError(c.w, e)
	c.rc.Flush()
	c.tr.Status = e.Status
	c.tr.HeadersNS = time.Now().UnixNano()
}

// reset closes the connection with a TCP RST and no response bytes.
func (c *call) reset() {
	conn, _, err := c.rc.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // HTTP/2: abort the stream instead
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

// generate serves /v1/completions and /v1/chat/completions.
func (s *Simulator) generate(w http.ResponseWriter, r *http.Request, kind apiKind) {
	if s.light != nil {
		s.generateLight(w, r, kind)
		return
	}
	reqNo := s.reqNo.Add(1)
	rid := r.Header.Get("X-Request-Id")
	if rid == "" {
		rid = fmt.Sprintf("%016x%016x", hash2(s.idSeed, reqNo), hash2(reqNo, s.idSeed))
	}
	w.Header().Set("X-Request-Id", rid)
	c := &call{s: s, w: w, rc: http.NewResponseController(w), ctx: r.Context(),
		tr: TraceRecord{RequestID: rid, Endpoint: r.URL.Path}}
	if s.trace != nil {
		defer func() {
			if err := s.trace.write(&c.tr); err != nil {
				level.Warn(s.logger).Log("msg", "trace record lost", "err", err)
			}
		}()
	}
	g, e := s.parseGen(w, r, kind)
	if e != nil {
		c.fail(e)
		return
	}
	c.tr.Stream = g.stream
	c.tr.PromptTokens = len(g.prompt)
	c.tr.Model, c.tr.Features = g.model, g.traceFeatures() // features.go
	fp := s.drawFaults(reqNo)
	c.tr.Faults = fp.names
	c.dripped, c.drip = fp.drip, fp.dripEvery
	switch fp.terminal {
	case faultReset:
		c.reset()
		return
	case faultHTTP429:
		w.Header().Set("Retry-After", "1")
		c.fail(&apiError{Status: http.StatusTooManyRequests, Type: "RateLimitError", Message: "simulated fault: too many requests"})
		return
	case faultHTTP500:
		c.fail(&apiError{Status: http.StatusInternalServerError, Type: "InternalServerError", Message: "simulated fault: internal server error"})
		return
	case faultHTTP503:
		c.fail(&apiError{Status: http.StatusServiceUnavailable, Type: "ServiceUnavailableError", Message: "simulated fault: service unavailable"})
		return
	}
	seq := s.newSequence(g)
	id := "cmpl-" + rid
	if kind == kindChat {
		id = "chatcmpl-" + rid
	}
	if g.stream {
		s.stream(c, g, seq, fp, id)
	} else {
		s.complete(c, g, seq, fp, id)
	}
}

// errShuttingDown is the answer to requests the stopping engine will not take.
var errShuttingDown = &apiError{Status: http.StatusServiceUnavailable, Type: "ServiceUnavailableError",
	Message: "the simulator is shutting down"}

// wait blocks until seq finishes; false when the client left (the sequence
// is aborted) or the simulator closed.
func (c *call) wait(seq *sequence) bool {
	for {
		if _, finished, _ := seq.snapshot(); finished {
			return true
		}
		select {
		case <-seq.notify:
		case <-c.ctx.Done():
			c.s.eng.abort(seq)
			return false
		case <-c.s.done:
			return false
		}
	}
}

// hang blocks until the client leaves or serving stops.
func (c *call) hang() {
	select {
	case <-c.ctx.Done():
	case <-c.s.quit:
	case <-c.s.done:
	}
}

// complete serves a non-streaming request.
func (s *Simulator) complete(c *call, g *genRequest, seq *sequence, fp faultPlan, id string) {
	if fp.terminal == faultHang {
		c.hang()
		if c.ctx.Err() == nil {
			c.fail(errShuttingDown)
		}
		return
	}
	if fp.stallBefore && !c.sleep(fp.stallFor) {
		if c.ctx.Err() == nil {
			c.fail(errShuttingDown)
		}
		return
	}
	if fp.errorEvent {
		c.fail(&apiError{Status: http.StatusInternalServerError, Type: "InternalServerError",
			Message: "simulated fault: error during generation"})
		return
	}
	if err := s.eng.submit(seq); err != nil {
		c.fail(errShuttingDown)
		return
	}
	if !c.wait(seq) {
		return
	}
	produced, _, reason := seq.snapshot()
	if reason == finishAbort {
		c.fail(errShuttingDown)
		return
	}
	if fp.stallMid && !c.sleep(fp.stallFor) {
		return
	}
	created := time.Now().Unix()
	text := outputText(seq, 0, produced)
	// vLLM answers with model_dump(): every field, unset ones as null.
	use := usage{PromptTokens: len(g.prompt), CompletionTokens: produced, TotalTokens: len(g.prompt) + produced,
		PromptTokensDetails: jsonNull}
	var resp any
	if g.kind == kindChat {
		resp = chatResponse{ID: id, Object: "chat.completion", Created: created, Model: g.model,
			Choices: []chatChoice{{Message: chatMessageOut{Role: "assistant", Content: text, ToolCalls: []any{}}, FinishReason: reason,
				Logprobs: logprobsOf(g, seq, 0, produced, 0)}},
			Usage: use}
	} else {
		resp = completionResponse{ID: id, Object: "text_completion", Created: created, Model: g.model,
			Choices: []completionChoice{{Text: text, FinishReason: &reason, Logprobs: logprobsOf(g, seq, 0, produced, 0)}}, Usage: use}
	}
	body, err := json.Marshal(resp)
	if err != nil {
		c.fail(&apiError{Status: http.StatusInternalServerError, Type: "InternalServerError", Message: err.Error()})
		return
	}
	h := c.w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", fmt.Sprint(len(body)))
	if fp.malformed {
		body = body[:len(body)/2]
		h.Set("Content-Length", fmt.Sprint(len(body)))
	}
	c.w.WriteHeader(http.StatusOK)
	c.tr.Status = http.StatusOK
	c.tr.CompletionTokens = produced
	c.tr.FinishReason = reason
	if fp.cut {
		// Half of the declared body, then abort the connection.
		c.write(body[:len(body)/2])
		c.tr.HeadersNS = time.Now().UnixNano()
		panic(http.ErrAbortHandler)
	}
	c.write(body)
	c.tr.HeadersNS = time.Now().UnixNano()
}

// stream serves a streaming request as vLLM's OpenAI server does.
func (s *Simulator) stream(c *call, g *genRequest, seq *sequence, fp faultPlan, id string) {
	h := c.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	c.w.WriteHeader(http.StatusOK)
	if err := c.rc.Flush(); err != nil {
		return
	}
	c.tr.Status = http.StatusOK
	c.tr.HeadersNS = time.Now().UnixNano()
	if fp.terminal == faultHang {
		c.hang()
		return
	}
	if fp.stallBefore && !c.sleep(fp.stallFor) {
		return
	}
	if err := s.eng.submit(seq); err != nil {
		return
	}
	w := s.newWire(g, id, time.Now().Unix())
	abort := func() {
		s.eng.abort(seq)
		c.tr.FinishReason = finishAbort
	}
	sent, roleSent, midDone := 0, false, false
	half := max(1, seq.finishLen/2)
	for {
		select {
		case <-seq.notify:
		case <-c.ctx.Done():
			abort()
			return
		case <-s.done:
			return
		}
		produced, finished, reason := seq.snapshot()
		if reason == finishAbort {
			c.tr.FinishReason = finishAbort
			return
		}
		if produced == sent && !finished {
			continue
		}
		if g.kind == kindChat && !roleSent {
			// vLLM sends the role with empty content on the first engine
			// output (llama.cpp with null content; Ollama sends none).
			roleSent = true
			if b := w.role(); b != nil {
				if err := c.event(b, true); err != nil {
					abort()
					return
				}
			}
		}
		if fp.cut && produced > half {
			// A cut stream delivers exactly half of the tokens, however many
			// the engine produced while the client was not reading.
			produced, finished = half, false
		}
		var finish *string
		if finished && !w.separateFinish() {
			finish = &reason
		}
		text := outputText(seq, sent, produced)
		w.lp = logprobsOf(g, seq, sent, produced, w.offset)
		w.offset += len(text)
		b := w.token(text, finish, produced, sent == 0)
		if err := c.event(b, true); err != nil {
			abort()
			return
		}
		sent = produced
		c.tr.CompletionTokens = sent
		if !midDone && (sent >= half || finished) {
			midDone = true
			if fp.errorEvent {
				if err := c.event(w.errorEvent(), false); err == nil && !finished {
					abort()
				}
				c.tr.FinishReason = finishError
				return
			}
			if fp.malformed {
				bad := b[:len(b)/2]
				if err := c.event(bad, false); err != nil {
					abort()
					return
				}
			}
			if fp.cut {
				if finished {
					c.tr.FinishReason = reason
				} else if _, done, _ := seq.snapshot(); !done {
					abort()
				} else {
					c.tr.FinishReason = finishAbort // the client never saw the end
				}
				return
			}
			if fp.stallMid && !c.sleep(fp.stallFor) {
				if !finished {
					abort()
				}
				return
			}
		}
		if finished {
			c.tr.FinishReason = reason
			break
		}
	}
	if w.separateFinish() {
		// llama.cpp and Ollama end with a chunk that has no text and the
		// finish_reason (llama.cpp: with usage and timings on it).
		if err := c.event(w.finish(c.tr.FinishReason, sent), true); err != nil {
			return
		}
	}
	if g.includeUsage && !w.usageOnFinish() {
		if err := c.event(w.usage(sent), false); err != nil {
			return
		}
	}
	if err := c.write([]byte("data: [DONE]\n\n")); err != nil {
		return
	}
	c.tr.DoneNS = time.Now().UnixNano()
}

// Response shapes: vLLM 0.11's protocol.py models, fields in declaration
// order (pydantic's serialisation order). A json.RawMessage field with
// omitempty is left out when nil and written as null when jsonNull, which
// mirrors pydantic's exclude_unset for fields that are set to None.

// jsonNull marks a field that is present with the value null.
var jsonNull = json.RawMessage("null")

// usage is UsageInfo. PromptTokensDetails is null in model_dump() answers
// and absent where vLLM excludes unset or None fields.
type usage struct {
	PromptTokens        int             `json:"prompt_tokens"`
	TotalTokens         int             `json:"total_tokens"`
	CompletionTokens    int             `json:"completion_tokens"`
	PromptTokensDetails json.RawMessage `json:"prompt_tokens_details,omitempty"`
}

// completionChoice is CompletionResponseChoice (non-streaming).
type completionChoice struct {
	Index          int     `json:"index"`
	Text           string  `json:"text"`
	Logprobs       any     `json:"logprobs"`
	FinishReason   *string `json:"finish_reason"`
	StopReason     any     `json:"stop_reason"`
	TokenIDs       any     `json:"token_ids"`
	PromptLogprobs any     `json:"prompt_logprobs"`
	PromptTokenIDs any     `json:"prompt_token_ids"`
}

// completionResponse is CompletionResponse.
type completionResponse struct {
	ID                string             `json:"id"`
	Object            string             `json:"object"`
	Created           int64              `json:"created"`
	Model             string             `json:"model"`
	Choices           []completionChoice `json:"choices"`
	ServiceTier       any                `json:"service_tier"`
	SystemFingerprint any                `json:"system_fingerprint"`
	Usage             usage              `json:"usage"`
	KVTransferParams  any                `json:"kv_transfer_params"`
}

// completionStreamChoice is CompletionResponseStreamChoice; a nil
// PromptTokenIDs is written as null.
type completionStreamChoice struct {
	Index          int     `json:"index"`
	Text           string  `json:"text"`
	Logprobs       any     `json:"logprobs"`
	FinishReason   *string `json:"finish_reason"`
	StopReason     any     `json:"stop_reason"`
	PromptTokenIDs []int   `json:"prompt_token_ids"`
	TokenIDs       any     `json:"token_ids"`
}

// completionChunk is CompletionStreamResponse; a nil Usage is written as
// null (token chunks are dumped with exclude_unset=False).
type completionChunk struct {
	ID      string                   `json:"id"`
	Object  string                   `json:"object"`
	Created int64                    `json:"created"`
	Model   string                   `json:"model"`
	Choices []completionStreamChoice `json:"choices"`
	Usage   *usage                   `json:"usage"`
	// SystemFingerprint is set by the TGI persona only (vLLM has none).
	SystemFingerprint string `json:"system_fingerprint,omitempty"`
}

// chatDelta is DeltaMessage with the fields serving_chat sets.
type chatDelta struct {
	Role    string `json:"role,omitempty"`
	Content string `json:"content"`
}

// chatChunkChoice is ChatCompletionResponseStreamChoice (exclude_unset).
type chatChunkChoice struct {
	Index        int             `json:"index"`
	Delta        chatDelta       `json:"delta"`
	Logprobs     any             `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
	StopReason   json.RawMessage `json:"stop_reason,omitempty"`
	TokenIDs     json.RawMessage `json:"token_ids,omitempty"`
}

// chatChunk is ChatCompletionStreamResponse (exclude_unset).
type chatChunk struct {
	ID             string            `json:"id"`
	Object         string            `json:"object"`
	Created        int64             `json:"created"`
	Model          string            `json:"model"`
	Choices        []chatChunkChoice `json:"choices"`
	Usage          *usage            `json:"usage,omitempty"`
	PromptTokenIDs json.RawMessage   `json:"prompt_token_ids,omitempty"`
	// SystemFingerprint is set by the TGI persona only (vLLM has none).
	SystemFingerprint string `json:"system_fingerprint,omitempty"`
}

// chatMessageOut is ChatMessage.
type chatMessageOut struct {
	Role             string `json:"role"`
	Content          string `json:"content"`
	Refusal          any    `json:"refusal"`
	Annotations      any    `json:"annotations"`
	Audio            any    `json:"audio"`
	FunctionCall     any    `json:"function_call"`
	ToolCalls        []any  `json:"tool_calls"`
	ReasoningContent any    `json:"reasoning_content"`
}

// chatChoice is ChatCompletionResponseChoice.
type chatChoice struct {
	Index        int            `json:"index"`
	Message      chatMessageOut `json:"message"`
	Logprobs     any            `json:"logprobs"`
	FinishReason string         `json:"finish_reason"`
	StopReason   any            `json:"stop_reason"`
	TokenIDs     any            `json:"token_ids"`
}

// chatResponse is ChatCompletionResponse.
type chatResponse struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	Choices           []chatChoice `json:"choices"`
	ServiceTier       any          `json:"service_tier"`
	SystemFingerprint any          `json:"system_fingerprint"`
	Usage             usage        `json:"usage"`
	PromptLogprobs    any          `json:"prompt_logprobs"`
	PromptTokenIDs    any          `json:"prompt_token_ids"`
	KVTransferParams  any          `json:"kv_transfer_params"`
}
