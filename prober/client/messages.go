package client

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/llmprobe/llmprobe/prober"
)

// The Anthropic Messages API (POST /v1/messages), as Anthropic serves it
// and as vLLM and SGLang serve it beside their OpenAI endpoints (vLLM:
// vllm/entrypoints/anthropic/serving.py and protocol.py; docs/engines.md).
// A streamed answer is a sequence of named SSE events whose JSON "type"
// repeats the event name:
//
//	message_start        {"message": {"id", "model", "usage": {input_tokens,
//	                     cache_read_input_tokens}}}
//	content_block_start  {"index": i, "content_block": {"type": "text" |
//	                     "thinking" | "tool_use", "name": ...}}
//	content_block_delta  {"index": i, "delta": {"type": "text_delta", "text"} |
//	                     {"type": "thinking_delta", "thinking"} |
//	                     {"type": "input_json_delta", "partial_json"} |
//	                     {"type": "signature_delta", ...}}
//	content_block_stop   {"index": i}
//	message_delta        {"delta": {"stop_reason"}, "usage": {output_tokens}}
//	message_stop         the end (vLLM then sends data: [DONE] as well)
//	ping                 nothing
//	error                {"error": {"type", "message"}}: a failure; an
//	                     event named error is one whatever its data
//	                     (llama.cpp sends its OpenAI-style error object,
//	                     {"code", "message", "type": "server_error"})
//
// A text, thinking or input_json delta is a token event (chat's rules for
// TTFT, ITL and E2E); message_start is not (Anthropic sends it before the
// first token). Errors of a non-200 answer come as {"type": "error",
// "error": {"type", "message"}}, which errorBodyMessage reads.

// AnthropicVersion is the anthropic-version header of every Messages API
// request.
const AnthropicVersion = "2023-06-01"

// messagesDefaultMaxTokens is the max_tokens of a Messages API request
// whose Request sets none: the API requires the field.
const messagesDefaultMaxTokens = 4096

var headerAnthropicVersion = []string{AnthropicVersion}

// msgKind is the kind of a Messages API stream event.
type msgKind uint8

const (
	msgOther msgKind = iota // ping, content_block_stop, anything unknown
	msgStart
	msgBlockStart
	msgDelta
	msgMessageDelta
	msgStop
	msgError
)

// deltaKind is what a delta event carries: a content_block_delta's delta
// type, or the Responses API's delta events (measurer.delta).
type deltaKind uint8

const (
	deltaOther deltaKind = iota // signature_delta and unknown ones
	deltaText
	deltaThinking
	deltaToolArgs
)

// msgEvent is what the measurement needs of one Messages API event; byte
// slices alias the event data (raw JSON string contents).
type msgEvent struct {
	kind      msgKind
	index     int
	toolBlock bool // content_block.type is tool_use
	name      []byte
	nameEsc   bool
	dkind     deltaKind
	delta     []byte // the text, thinking or partial_json of the delta
	deltaEsc  bool
	stop      []byte // delta.stop_reason
	stopEsc   bool
	id, model []byte
	idEsc     bool
	modelEsc  bool
	errType   []byte
	errMsg    []byte
	errEsc    bool

	hasInput, hasOutput, hasCached bool
	input, output, cached          int
}

// decodeMsgEvent parses data into e, which it overwrites. The text must be
// one JSON object; the last of duplicate keys wins.
func decodeMsgEvent(data []byte, e *msgEvent) error {
	*e = msgEvent{}
	d := decoder{b: data}
	var typ []byte
	var typEsc bool
	err := d.event(func(k []byte) (err error) {
		switch string(k) {
		case "type":
			typ, typEsc, _, err = d.optString("type")
		case "index":
			e.index, err = d.intOrSkip("index", 2)
		case "message":
			if d.peek() == '"' { // an OpenAI-style error object's message
				err = d.strOrSkip(2, &e.errMsg, &e.errEsc)
			} else {
				err = d.msgMessage(e)
			}
		case "content_block":
			err = d.msgBlock(e)
		case "delta":
			err = d.msgDelta(e)
		case "usage":
			err = d.msgUsage(e, 2)
		case "error":
			err = d.msgErr(e)
		default:
			err = d.skip(2)
		}
		return err
	})
	if err != nil {
		return err
	}
	if typEsc {
		typ = unescape(typ)
	}
	switch string(typ) {
	case "message_start":
		e.kind = msgStart
	case "content_block_start":
		e.kind = msgBlockStart
	case "content_block_delta":
		e.kind = msgDelta
	case "message_delta":
		e.kind = msgMessageDelta
	case "message_stop":
		e.kind = msgStop
	case "error":
		e.kind = msgError
	}
	return nil
}

// msgMessage reads message_start's "message": id, model and usage.
func (d *decoder) msgMessage(e *msgEvent) error {
	return d.objectOrSkip(2, func(k []byte) (err error) {
		switch string(k) {
		case "id":
			err = d.strOrSkip(3, &e.id, &e.idEsc)
		case "model":
			err = d.strOrSkip(3, &e.model, &e.modelEsc)
		case "usage":
			err = d.msgUsage(e, 3)
		default:
			err = d.skip(3)
		}
		return err
	})
}

// msgBlock reads content_block_start's "content_block": whether it is a
// tool_use block, and its name.
func (d *decoder) msgBlock(e *msgEvent) error {
	return d.typeAndName("tool_use", &e.toolBlock, &e.name, &e.nameEsc)
}

// msgDelta reads "delta": a content block's (type and its text, thinking
// or partial_json) or message_delta's (stop_reason).
func (d *decoder) msgDelta(e *msgEvent) error {
	if d.peek() != '{' {
		return d.skip(2)
	}
	var text, thinking, args []byte
	var textEsc, thinkingEsc, argsEsc bool
	err := d.members(func(k []byte) (err error) {
		switch string(k) {
		case "type":
			var s []byte
			var esc bool
			err = d.strOrSkip(3, &s, &esc)
			if esc {
				s = unescape(s)
			}
			switch string(s) {
			case "text_delta":
				e.dkind = deltaText
			case "thinking_delta":
				e.dkind = deltaThinking
			case "input_json_delta":
				e.dkind = deltaToolArgs
			default:
				e.dkind = deltaOther
			}
		case "text":
			err = d.strOrSkip(3, &text, &textEsc)
		case "thinking":
			err = d.strOrSkip(3, &thinking, &thinkingEsc)
		case "partial_json":
			err = d.strOrSkip(3, &args, &argsEsc)
		case "stop_reason":
			err = d.strOrSkip(3, &e.stop, &e.stopEsc)
		default:
			err = d.skip(3)
		}
		return err
	})
	switch e.dkind {
	case deltaText:
		e.delta, e.deltaEsc = text, textEsc
	case deltaThinking:
		e.delta, e.deltaEsc = thinking, thinkingEsc
	case deltaToolArgs:
		e.delta, e.deltaEsc = args, argsEsc
	}
	return err
}

// msgUsage reads a usage object (message_start's message.usage at depth
// 3, message_delta's usage at depth 2).
func (d *decoder) msgUsage(e *msgEvent, depth int) error {
	if ok, err := d.usageObject(); !ok {
		return err
	}
	return d.members(func(k []byte) (err error) {
		switch string(k) {
		case "input_tokens":
			e.input, e.hasInput, err = d.optInt("input_tokens")
		case "output_tokens":
			e.output, e.hasOutput, err = d.optInt("output_tokens")
		case "cache_read_input_tokens":
			e.cached, e.hasCached, err = d.optInt("cache_read_input_tokens")
		default:
			err = d.skip(depth + 1)
		}
		return err
	})
}

// msgErr reads an error event's "error": its type and message.
func (d *decoder) msgErr(e *msgEvent) error {
	return d.objectOrSkip(2, func(k []byte) (err error) {
		var esc bool
		switch string(k) {
		case "type":
			if err = d.strOrSkip(3, &e.errType, &esc); err == nil && esc {
				e.errType = unescape(e.errType)
			}
		case "message":
			err = d.strOrSkip(3, &e.errMsg, &e.errEsc)
		default:
			err = d.skip(3)
		}
		return err
	})
}

// msgEvent measures one decoded Messages API event (m.me); end is true when the stream
// is over (message_stop or an error event), with its class.
func (m *measurer) msgEvent(at time.Time, since time.Duration) (
	class prober.ErrorClass, msg string, fromServer, end bool) {
	rec, e := m.rec, &m.me
	switch e.kind {
	case msgStart:
		if rec.ResponseID == "" && e.id != nil {
			rec.ResponseID = trimTo(rawString(e.id, e.idEsc), prober.MaxResponseIDBytes)
		}
		if rec.ResponseModel == "" && e.model != nil {
			rec.ResponseModel = trimTo(rawString(e.model, e.modelEsc), prober.MaxResponseIDBytes)
		}
		m.msgUsage(e)
	case msgBlockStart:
		if e.toolBlock && m.tools != nil {
			m.tools.add(e.index, rawString(e.name, e.nameEsc), "")
		}
	case msgDelta:
		if e.dkind != deltaOther { // deltaOther: a signature, no token
			m.delta(at, since, e.dkind, e.index, e.delta, e.deltaEsc)
		}
	case msgMessageDelta:
		m.msgUsage(e)
		if e.stop != nil {
			rec.FinishReason = finishOfStop(rawString(e.stop, e.stopEsc))
		}
	case msgStop:
		if rec.FinishReason == "" {
			rec.FinishReason = "stop"
			if m.gotTool {
				rec.FinishReason = "tool_calls"
			}
		}
		rec.Done = since
		m.done = true
		return prober.ClassNone, "", false, true
	case msgError:
		msg := "server error event"
		if len(e.errType) > 0 {
			msg += " " + trimTo(string(e.errType), 64)
		}
		if e.errMsg != nil {
			msg += ": " + rawString(e.errMsg, e.errEsc)
		}
		return prober.ClassStream, msg, true, true
	}
	return prober.ClassNone, "", false, false
}

// msgUsage records an event's usage: input tokens (message_start; vLLM
// repeats them in message_delta), output tokens (message_delta, the
// running total) and cache_read_input_tokens.
func (m *measurer) msgUsage(e *msgEvent) {
	rec := m.rec
	if e.hasInput {
		rec.PromptTokens = e.input
	}
	if e.hasOutput && e.kind == msgMessageDelta {
		rec.CompletionTokens, m.usageTokens = e.output, true
	}
	if e.hasCached {
		rec.CachedTokens, rec.CachedTokensReported = e.cached, true
	}
}

// finishOfStop maps a Messages API stop_reason to the finish reason chat
// would report (end_turn and stop_sequence: stop; max_tokens: length;
// tool_use: tool_calls); another one is kept, bounded.
func finishOfStop(s string) string {
	switch s {
	case "end_turn", "stop_sequence":
		return "stop"
	case "max_tokens":
		return "length"
	case "tool_use":
		return "tool_calls"
	}
	return trimTo(s, 64)
}

// messagesPayload is the body of POST /v1/messages. min_tokens and
// ignore_eos are vLLM's sampling extras (vLLM's Messages request model
// ignores unknown fields), sent only when set, as on the other APIs.
type messagesPayload struct {
	Model      string          `json:"model,omitempty"`
	MaxTokens  int             `json:"max_tokens"`
	System     string          `json:"system,omitempty"`
	Messages   any             `json:"messages"`
	MinTokens  int             `json:"min_tokens,omitempty"`
	IgnoreEOS  bool            `json:"ignore_eos,omitempty"`
	Stream     bool            `json:"stream"`
	Tools      []messagesTool  `json:"tools,omitempty"`
	ToolChoice json.RawMessage `json:"tool_choice,omitempty"`
}

type messagesTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// messagesBody is the body of a Messages API request: the chat messages
// (the prompt as one user message), their system messages joined into
// "system" (the API has no system role), the tools as input_schema tools.
// A tool_choice none sends no tools (vLLM takes auto, any and tool only).
func messagesBody(_ *Client, req *Request, model string, _ *streamOptions, _ *int) any {
	p := messagesPayload{Model: model, MaxTokens: req.MaxTokens, MinTokens: req.MinTokens,
		IgnoreEOS: req.IgnoreEOS, Stream: !req.NoStream}
	if p.MaxTokens <= 0 {
		p.MaxTokens = messagesDefaultMaxTokens
	}
	msgs := req.Messages
	if msgs == nil {
		msgs = []Message{{Role: "user", Content: req.Prompt}}
	}
	out := make([]Message, 0, len(msgs))
	for _, m := range msgs {
		if m.Role == "system" || m.Role == "developer" {
			if p.System != "" {
				p.System += "\n"
			}
			p.System += m.Content
			continue
		}
		out = append(out, m)
	}
	p.Messages = out
	if req.ToolChoice == "none" {
		return p
	}
	for _, t := range req.Tools {
		schema := t.Parameters
		if len(schema) == 0 || string(schema) == "null" {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		p.Tools = append(p.Tools, messagesTool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	var v any
	switch c := req.ToolChoice; c {
	case "":
	case "auto":
		v = map[string]string{"type": "auto"}
	case "required":
		v = map[string]string{"type": "any"}
	default:
		v = map[string]string{"type": "tool", "name": c}
	}
	if v != nil {
		p.ToolChoice, _ = json.Marshal(v)
	}
	return p
}

// setMessagesHeaders adds the Messages API's headers: anthropic-version,
// and the API key as x-api-key (besides Authorization: Bearer, which vLLM
// and SGLang check).
func (c *Client) setMessagesHeaders(h http.Header) {
	h["Anthropic-Version"] = headerAnthropicVersion
	if c.o.APIKey != "" {
		h["X-Api-Key"] = []string{string(c.o.APIKey)}
	}
}

// messagesResponse is what the measurement needs of a non-streamed
// Messages API answer.
type messagesResponse struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Model   string `json:"model"`
	Content []struct {
		Type     string          `json:"type"`
		Text     string          `json:"text"`
		Thinking string          `json:"thinking"`
		Name     string          `json:"name"`
		Input    json.RawMessage `json:"input"`
	} `json:"content"`
	StopReason *string `json:"stop_reason"`
	Usage      *struct {
		InputTokens  *int `json:"input_tokens"`
		OutputTokens *int `json:"output_tokens"`
		CacheRead    *int `json:"cache_read_input_tokens"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// measureMessages measures a non-streamed Messages API answer.
func (m *measurer) measureMessages(body []byte, end time.Time) (prober.ErrorClass, string, bool) {
	rec := m.rec
	var r messagesResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return prober.ClassInvalidResponse, "response body: " + err.Error(), false
	}
	if r.Type == "error" || isSet(r.Error) {
		return answerError(body)
	}
	if r.Content == nil {
		return prober.ClassInvalidResponse, "response without content", false
	}
	rec.E2E = end.Sub(m.t0)
	if r.ID != "" {
		rec.ResponseID = trimTo(r.ID, prober.MaxResponseIDBytes)
	}
	if r.Model != "" {
		rec.ResponseModel = trimTo(r.Model, prober.MaxResponseIDBytes)
	}
	answered := false
	for i, b := range r.Content {
		switch b.Type {
		case "text":
			answered = answered || b.Text != ""
			m.collectString(b.Text)
		case "thinking":
			answered = answered || b.Thinking != ""
		case "tool_use":
			answered = true
			if m.tools != nil {
				args := string(b.Input)
				if args == "" || args == "null" {
					args = "{}"
				}
				m.tools.add(i, b.Name, args)
			}
		}
	}
	rec.FinishReason = "stop"
	if r.StopReason != nil {
		rec.FinishReason = finishOfStop(*r.StopReason)
	}
	if u := r.Usage; u != nil {
		setTokens(rec, u.InputTokens, u.OutputTokens)
		if u.CacheRead != nil {
			rec.CachedTokens, rec.CachedTokensReported = *u.CacheRead, true
		}
	}
	if !answered {
		return prober.ClassInvalidResponse, EmptyAnswer, false
	}
	return m.checkTools()
}
