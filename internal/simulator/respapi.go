package simulator

import (
	"encoding/json"
	"time"
)

// The Responses API (POST /v1/responses) as vLLM serves it: a streamed
// request gets named SSE events ("event: <type>" then "data: <json>" with
// the same "type"), every one with a sequence_number, and no [DONE]:
//
//	response.created, response.in_progress
//	response.output_item.added (reasoning), response.reasoning_text.delta..., response.output_item.done
//	response.output_item.added (message), response.content_part.added,
//	  response.output_text.delta..., response.output_text.done, response.content_part.done,
//	  response.output_item.done
//	  (or, for a tool call: response.output_item.added (function_call),
//	  response.function_call_arguments.delta..., response.function_call_arguments.done,
//	  response.output_item.done)
//	response.completed (status completed, or incomplete with
//	  incomplete_details.reason max_output_tokens; usage with input_tokens,
//	  output_tokens, output_tokens_details.reasoning_tokens)
//
// The faults act as on chat streams: error-event sends an "error" event,
// cut-stream ends the body without response.completed, malformed-event
// sends half an event.

// respStream writes the events of one streamed Responses API request.
type respStream struct {
	c       *call
	id      string
	model   string
	created int64
	seqNo   int
	// The output items: reasoning (index 0 when the request thinks),
	// then the message or the function call.
	reasonOpen, answerOpen bool
	reasonIdx, answerIdx   int
	nextIdx                int
}

// emit writes one named event; content marks a delta (a token event for
// the trace).
func (r *respStream) emit(typ string, fields map[string]any, content bool) error {
	fields["type"] = typ
	fields["sequence_number"] = r.seqNo
	r.seqNo++
	b, _ := json.Marshal(fields)
	return r.c.namedEvent(typ, b, content)
}

// response is the response object of the lifecycle events.
func (r *respStream) response(status string, use any, incomplete any) map[string]any {
	return map[string]any{"id": r.id, "object": "response", "created_at": r.created, "model": r.model,
		"status": status, "output": []any{}, "usage": use, "incomplete_details": incomplete, "error": nil,
		"parallel_tool_calls": true, "tools": []any{}, "tool_choice": "auto"}
}

// begin implements namedStream: nothing (response.created and
// response.in_progress precede the engine's first output).
func (r *respStream) begin() error { return nil }

// fail implements namedStream: an error event.
func (r *respStream) fail() error {
	return r.emit("error", map[string]any{"code": "server_error", "message": "simulated fault: error during generation",
		"param": nil}, false)
}

// truncated implements namedStream.
func (r *respStream) truncated() (string, []byte) {
	return "response.output_text.delta", []byte(`{"type":"response.output_text.delta","delta":"`)
}

// deltas writes the deltas of output tokens [from, to): reasoning text,
// then the answer's text or the tool call's arguments, opening (and
// closing) the output items as the stream crosses into them.
func (r *respStream) deltas(seq *sequence, from, to int) error {
	reasoning, answer := parts(seq, from, to)
	if reasoning != "" {
		if !r.reasonOpen {
			r.reasonOpen, r.reasonIdx = true, r.nextIdx
			r.nextIdx++
			if err := r.emit("response.output_item.added", map[string]any{"output_index": r.reasonIdx,
				"item": map[string]any{"type": "reasoning", "id": "rs_" + r.id, "summary": []any{}, "content": []any{}, "status": "in_progress"}}, false); err != nil {
				return err
			}
		}
		if err := r.emit("response.reasoning_text.delta", map[string]any{"item_id": "rs_" + r.id, "output_index": r.reasonIdx,
			"content_index": 0, "delta": reasoning}, true); err != nil {
			return err
		}
	}
	if to <= seq.reasoning {
		return nil
	}
	if !r.answerOpen {
		if r.reasonOpen {
			if err := r.emit("response.output_item.done", map[string]any{"output_index": r.reasonIdx,
				"item": map[string]any{"type": "reasoning", "id": "rs_" + r.id, "status": "completed"}}, false); err != nil {
				return err
			}
		}
		r.answerOpen, r.answerIdx = true, r.nextIdx
		r.nextIdx++
		item := map[string]any{"type": "message", "id": "msg_" + r.id, "role": "assistant", "status": "in_progress", "content": []any{}}
		if seq.tool != nil {
			item = map[string]any{"type": "function_call", "id": "fc_" + r.id, "call_id": "call_" + r.id,
				"name": seq.tool.name, "arguments": "", "status": "in_progress"}
		}
		if err := r.emit("response.output_item.added", map[string]any{"output_index": r.answerIdx, "item": item}, false); err != nil {
			return err
		}
		if seq.tool == nil {
			if err := r.emit("response.content_part.added", map[string]any{"item_id": "msg_" + r.id, "output_index": r.answerIdx,
				"content_index": 0, "part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}}, false); err != nil {
				return err
			}
		}
	}
	if seq.tool != nil {
		return r.emit("response.function_call_arguments.delta", map[string]any{"item_id": "fc_" + r.id,
			"output_index": r.answerIdx, "delta": answer}, true)
	}
	return r.emit("response.output_text.delta", map[string]any{"item_id": "msg_" + r.id, "output_index": r.answerIdx,
		"content_index": 0, "delta": answer, "logprobs": []any{}}, true)
}

// streamResponses serves a streamed Responses API request.
func (s *Simulator) streamResponses(c *call, g *genRequest, seq *sequence, fp faultPlan, id string) {
	if !c.openStream(fp.terminal == faultHang) {
		return
	}
	r := &respStream{c: c, id: id, model: g.model, created: time.Now().Unix()}
	if r.emit("response.created", map[string]any{"response": r.response("in_progress", nil, nil)}, false) != nil ||
		r.emit("response.in_progress", map[string]any{"response": r.response("in_progress", nil, nil)}, false) != nil {
		return
	}
	if fp.stallBefore && !c.sleep(fp.stallFor) {
		return
	}
	sent, ok := s.namedTokens(c, seq, fp, r)
	if !ok {
		return
	}
	if r.answerOpen {
		typ := "message"
		if seq.tool != nil {
			typ = "function_call"
		}
		if r.emit("response.output_item.done", map[string]any{"output_index": r.answerIdx,
			"item": map[string]any{"type": typ, "status": "completed"}}, false) != nil {
			return
		}
	}
	status, incomplete := "completed", any(nil)
	if c.tr.FinishReason == finishLength {
		status, incomplete = "incomplete", map[string]any{"reason": "max_output_tokens"}
	}
	if r.emit("response.completed", map[string]any{"response": r.response(status, responsesUsage(g, seq, sent), incomplete)}, false) != nil {
		return
	}
	c.tr.DoneNS = time.Now().UnixNano()
}

// responsesUsage is the usage of a Responses API answer.
func responsesUsage(g *genRequest, seq *sequence, completion int) map[string]any {
	p := len(g.prompt)
	return map[string]any{"input_tokens": p, "input_tokens_details": map[string]any{"cached_tokens": seq.cachedPrompt()},
		"output_tokens": completion, "output_tokens_details": map[string]any{"reasoning_tokens": reasoningDone(seq, completion)},
		"total_tokens": p + completion}
}

// completeResponses answers a non-streamed Responses API request.
func (s *Simulator) completeResponses(c *call, g *genRequest, seq *sequence, produced int, reason, id string) {
	reasoning, answer := parts(seq, 0, produced)
	var output []any
	if reasoning != "" {
		output = append(output, map[string]any{"type": "reasoning", "id": "rs_" + id, "summary": []any{},
			"content": []any{map[string]any{"type": "reasoning_text", "text": reasoning}}, "status": "completed"})
	}
	if produced > seq.reasoning {
		if seq.tool != nil {
			output = append(output, map[string]any{"type": "function_call", "id": "fc_" + id, "call_id": "call_" + id,
				"name": seq.tool.name, "arguments": answer, "status": "completed"})
		} else {
			output = append(output, map[string]any{"type": "message", "id": "msg_" + id, "role": "assistant", "status": "completed",
				"content": []any{map[string]any{"type": "output_text", "text": answer, "annotations": []any{}}}})
		}
	}
	r := &respStream{id: id, model: g.model, created: time.Now().Unix()}
	status, incomplete := "completed", any(nil)
	if reason == finishLength {
		status, incomplete = "incomplete", map[string]any{"reason": "max_output_tokens"}
	}
	resp := r.response(status, responsesUsage(g, seq, produced), incomplete)
	resp["output"] = output
	body, _ := json.Marshal(resp)
	c.answer(body, produced, reason, faultPlan{}) // this API's answers take no body faults
}

// toolFinish is the finish reason of a finished sequence: tool_calls for
// one that answered with a tool call.
func toolFinish(seq *sequence, reason string) string {
	if seq.tool != nil && reason != finishAbort && reason != finishError {
		return finishToolCalls
	}
	return reason
}
