package client

// The Responses API's stream (POST /v1/responses, "stream": true), decoded
// and measured (measurer.respEvent): one JSON object per SSE event, its
// "type" naming the event (the SSE event: line repeats it). What the
// measurement needs of each, decoded without allocation like a chat chunk
// (chunk.go):
//
//	response.output_text.delta            {"delta": "..."}: answer text
//	response.reasoning_text.delta,
//	response.reasoning_summary_text.delta,
//	response.reasoning.delta              {"delta": "..."}: reasoning
//	response.output_item.added            {"output_index": i, "item": {"type": "function_call", "name": ...}}
//	response.function_call_arguments.delta {"output_index": i, "delta": "..."}: a tool call's arguments
//	response.completed, response.incomplete {"response": {"status", "usage": {input_tokens,
//	                                        output_tokens, input_tokens_details.cached_tokens,
//	                                        output_tokens_details.reasoning_tokens}}}: the end
//	response.failed                       {"response": {"error": {"message"}}}: a failure
//	error                                 {"message": "..."}: a failure
//
// Every other event (response.created, response.in_progress, the *.added
// and *.done events) is validated and carries nothing measured.

import (
	"time"

	"github.com/llmprobe/llmprobe/prober"
)

// respKind is the kind of a Responses API event.
type respKind uint8

const (
	respOther respKind = iota
	respText
	respReasoning
	respItemAdded
	respToolArgs
	respCompleted
	respIncomplete
	respFailed
	respError
)

// respEvent is what the measurement needs from one Responses API event;
// byte slices alias the event data (raw JSON string contents).
type respEvent struct {
	kind      respKind
	delta     []byte // "delta" when a string
	deltaEsc  bool
	index     int  // "output_index"
	fnItem    bool // item.type is function_call
	name      []byte
	nameEsc   bool
	msg       []byte // error: "message"; response.failed: response.error.message
	msgEsc    bool
	status    []byte // response.status (unescaped only when plain)
	incReason []byte // response.incomplete_details.reason

	hasUsage                   bool
	hasInput, hasOutput        bool
	hasCached, hasReasonTokens bool
	input, output              int
	cached, reasonTokens       int
}

// respTypes maps the event types measured to their kinds.
var respTypes = map[string]respKind{
	"response.output_text.delta":             respText,
	"response.reasoning_text.delta":          respReasoning,
	"response.reasoning_summary_text.delta":  respReasoning,
	"response.reasoning.delta":               respReasoning,
	"response.output_item.added":             respItemAdded,
	"response.function_call_arguments.delta": respToolArgs,
	"response.completed":                     respCompleted,
	"response.incomplete":                    respIncomplete,
	"response.failed":                        respFailed,
	"error":                                  respError,
}

// decodeRespEvent parses data into e, which it overwrites. The text must be
// one JSON object; the last of duplicate keys wins.
func decodeRespEvent(data []byte, e *respEvent) error {
	*e = respEvent{}
	d := decoder{b: data}
	var typ []byte
	var typEsc bool
	var topMsg, errMsg []byte
	var topMsgEsc, errMsgEsc bool
	err := d.event(func(k []byte) (err error) {
		switch string(k) {
		case "type":
			typ, typEsc, _, err = d.optString("type")
		case "delta":
			err = d.strOrSkip(2, &e.delta, &e.deltaEsc)
		case "output_index":
			e.index, err = d.intOrSkip("output_index", 2)
		case "message":
			err = d.strOrSkip(2, &topMsg, &topMsgEsc)
		case "item":
			err = d.respItem(e)
		case "response":
			errMsg = nil
			err = d.respResponse(e, &errMsg, &errMsgEsc)
		default:
			err = d.skip(2)
		}
		return err
	})
	if err != nil {
		return err
	}
	if typ != nil {
		if typEsc {
			typ = unescape(typ)
		}
		e.kind = respTypes[string(typ)]
	}
	switch e.kind {
	case respError:
		e.msg, e.msgEsc = topMsg, topMsgEsc
	case respFailed:
		e.msg, e.msgEsc = errMsg, errMsgEsc
	}
	return nil
}

// respItem reads "item": whether it is a function_call, and its name.
func (d *decoder) respItem(e *respEvent) error {
	e.fnItem, e.name = false, nil
	return d.typeAndName("function_call", &e.fnItem, &e.name, &e.nameEsc)
}

// typeAndName reads a member of an event that may open a tool call (the
// Responses API's output item, the Messages API's content block): *is
// says whether its "type" is typ, *name is its "name" (a value that is not
// an object is skipped).
func (d *decoder) typeAndName(typ string, is *bool, name *[]byte, nameEsc *bool) error {
	return d.objectOrSkip(2, func(k []byte) (err error) {
		switch string(k) {
		case "type":
			var s []byte
			var esc bool
			err = d.strOrSkip(3, &s, &esc)
			*is = stringIs(s, esc, typ)
		case "name":
			err = d.strOrSkip(3, name, nameEsc)
		default:
			err = d.skip(3)
		}
		return err
	})
}

// respResponse reads "response": status, usage, error.message and
// incomplete_details.reason.
func (d *decoder) respResponse(e *respEvent, errMsg *[]byte, errMsgEsc *bool) error {
	return d.objectOrSkip(2, func(k []byte) (err error) {
		switch string(k) {
		case "status":
			var esc bool
			if err = d.strOrSkip(3, &e.status, &esc); esc {
				e.status = unescape(e.status)
			}
		case "usage":
			err = d.respUsage(e)
		case "error":
			*errMsg = nil
			err = d.objectString(3, "message", errMsg, errMsgEsc)
		case "incomplete_details":
			e.incReason = nil
			var esc bool
			if err = d.objectString(3, "reason", &e.incReason, &esc); err == nil && esc {
				e.incReason = unescape(e.incReason)
			}
		default:
			err = d.skip(3)
		}
		return err
	})
}

// objectString reads an object (anything else is skipped) and its string
// member key into *s (nil when absent or not a string).
func (d *decoder) objectString(depth int, key string, s *[]byte, esc *bool) error {
	return d.objectOrSkip(depth, func(k []byte) (err error) {
		if string(k) == key {
			return d.strOrSkip(depth+1, s, esc)
		}
		return d.skip(depth + 1)
	})
}

// respUsage reads response.usage.
func (d *decoder) respUsage(e *respEvent) error {
	e.hasUsage, e.hasInput, e.hasOutput, e.hasCached, e.hasReasonTokens = false, false, false, false, false
	if ok, err := d.usageObject(); !ok {
		return err
	}
	e.hasUsage = true
	return d.members(func(k []byte) (err error) {
		switch string(k) {
		case "input_tokens":
			e.input, e.hasInput, err = d.optInt("input_tokens")
		case "output_tokens":
			e.output, e.hasOutput, err = d.optInt("output_tokens")
		case "input_tokens_details":
			e.hasCached = false
			err = d.detailInt(4, "cached_tokens", &e.cached, &e.hasCached)
		case "output_tokens_details":
			e.hasReasonTokens = false
			err = d.detailInt(4, "reasoning_tokens", &e.reasonTokens, &e.hasReasonTokens)
		default:
			err = d.skip(4)
		}
		return err
	})
}

// namedEvent decodes and measures one event of the Responses or the
// Messages API (respEvent, msgEvent), name being its SSE event name; end
// is true when the stream is over, with its class.
func (m *measurer) namedEvent(at time.Time, since time.Duration, name, data []byte) (
	class prober.ErrorClass, msg string, fromServer, end bool) {
	var err error
	if m.api.decode == decodeResponses {
		if err = decodeRespEvent(data, &m.re); err == nil {
			return m.respEvent(at, since)
		}
	} else {
		err = decodeMsgEvent(data, &m.me)
		if string(name) == "error" && m.me.kind != msgError {
			// A Messages error event in another shape (llama.cpp's
			// OpenAI-style error object): its message, or its data
			// when that is not JSON.
			msg := "server error event: " + trimTo(string(data), maxErrorMessage)
			if err == nil && m.me.errMsg != nil {
				msg = "server error event: " + rawString(m.me.errMsg, m.me.errEsc)
			}
			return prober.ClassStream, msg, true, true
		}
		if err == nil {
			return m.msgEvent(at, since)
		}
	}
	class, msg = m.malformed(err)
	return class, msg, false, true
}

// respEvent measures one decoded Responses API event (m.re); end is true when the stream
// is over (completed, incomplete, failed or an error), with its class.
func (m *measurer) respEvent(at time.Time, since time.Duration) (
	class prober.ErrorClass, msg string, fromServer, end bool) {
	rec, e := m.rec, &m.re
	switch e.kind {
	case respText:
		m.delta(at, since, deltaText, e.index, e.delta, e.deltaEsc)
	case respReasoning:
		m.delta(at, since, deltaThinking, e.index, e.delta, e.deltaEsc)
	case respToolArgs:
		m.delta(at, since, deltaToolArgs, e.index, e.delta, e.deltaEsc)
	case respItemAdded:
		if e.fnItem && m.tools != nil {
			m.tools.add(e.index, rawString(e.name, e.nameEsc), "")
		}
	case respCompleted, respIncomplete:
		if e.hasUsage {
			if e.hasOutput {
				rec.CompletionTokens, m.usageTokens = e.output, true
			}
			if e.hasInput {
				rec.PromptTokens = e.input
			}
			if e.hasCached {
				rec.CachedTokens, rec.CachedTokensReported = e.cached, true
			}
			if e.hasReasonTokens {
				rec.ReasoningTokens, m.reasonTok = e.reasonTokens, true
			}
		}
		incomplete := e.kind == respIncomplete || string(e.status) == "incomplete"
		switch {
		case incomplete && string(e.incReason) == "max_output_tokens":
			rec.FinishReason = "length"
		case incomplete:
			rec.FinishReason = "incomplete"
			if len(e.incReason) > 0 {
				rec.FinishReason += ": " + trimTo(string(e.incReason), 64)
			}
		case m.gotTool:
			rec.FinishReason = "tool_calls"
		default:
			rec.FinishReason = "stop"
		}
		rec.Done = since
		m.done = true
		return prober.ClassNone, "", false, true
	case respFailed, respError:
		msg := "server error event"
		if e.kind == respFailed {
			msg = "response.failed"
		}
		if e.msg != nil {
			msg += ": " + rawString(e.msg, e.msgEsc)
		}
		return prober.ClassStream, msg, true, true
	}
	return prober.ClassNone, "", false, false
}
