package simulator

import (
	"encoding/json"
	"net/http"
	"time"
)

// The Anthropic Messages API (POST /v1/messages) as vLLM serves it
// (vllm/entrypoints/anthropic/serving.py, protocol.py, api_router.py): the
// request is turned into a chat request (system first as a system message,
// max_tokens required, tools as functions, tool_choice auto / any / tool),
// generated as chat is, and answered in Anthropic's shapes. A streamed
// answer is named SSE events:
//
//	message_start (usage.input_tokens), ping,
//	content_block_start (thinking) / content_block_delta (thinking_delta)... /
//	  content_block_delta (signature_delta) / content_block_stop,
//	content_block_start (text or tool_use) / content_block_delta (text_delta
//	  or input_json_delta)... / content_block_stop,
//	message_delta (delta.stop_reason, usage.input_tokens and output_tokens),
//	message_stop, and vLLM's data: [DONE].
//
// Errors are {"type":"error","error":{"type","message"}} (api_router.py's
// translate_error_response), on a stream an "error" event. The faults act
// as on chat streams.
//
// The SGLang persona answers as SGLang's converter does
// (sglang/srt/entrypoints/anthropic/serving.py
// _generate_anthropic_stream, testdata/engines/sglang/0.5/README.md): its
// pydantic events are dumped with exclude_none (no null fields),
// message_start's usage has input_tokens 0 (the chat role chunk carries no
// usage) and cache_read_input_tokens, no ping, **no thinking block** (the
// chat chunks' reasoning_content is not converted: reasoning tokens are
// counted in output_tokens but never streamed), message_delta's usage
// holds input, output and cache-read tokens, and no data: [DONE] follows
// message_stop.
//
// The Ollama persona answers as Ollama's StreamConverter does
// (github.com/ollama/ollama/anthropic/anthropic.go,
// testdata/engines/ollama/0.33/README.md): no null fields, message_start
// with the prompt's input_tokens, no ping, a thinking block without a
// signature_delta, message_delta with input and output tokens, and no
// data: [DONE].
//
// The llama.cpp persona answers as llama-server does
// (tools/server/server-task.cpp to_json_anthropic and
// to_json_anthropic_stream, testdata/engines/llamacpp/2025-12/README.md):
// message_start with null stop fields and the prompt's input_tokens, no
// ping, a thinking block that stays open while the text streams (both
// closed at the end, the thinking one after an empty signature_delta),
// message_delta with a null stop_sequence and output_tokens only, no
// data: [DONE]; an error is an "error" event whose data is its OpenAI-style
// error object (type "server_error"), and a refused request's body is that
// object too.

// messagesFields are the Messages API's request fields chat has not.
type messagesFields struct {
	System        json.RawMessage `json:"system"`
	StopSequences json.RawMessage `json:"stop_sequences"`
}

// anthropicErrorBody is AnthropicErrorResponse.
type anthropicErrorBody struct {
	Type  string             `json:"type"`
	Error anthropicErrorInfo `json:"error"`
}

type anthropicErrorInfo struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

func anthropicError(e *apiError) anthropicErrorBody {
	return anthropicErrorBody{Type: "error", Error: anthropicErrorInfo{Type: e.Type, Message: e.Message}}
}

// messagesRequest rewrites a Messages API body in chat's terms, as vLLM's
// _convert_anthropic_to_openai_request does: the system prompt becomes the
// first message, tools become flat functions (name, parameters from
// input_schema), tool_choice {type: auto | any | tool, name} becomes auto,
// required or the function's name, stop_sequences the stop list.
func messagesRequest(body *genRequestJSON) *apiError {
	if body.MaxTokens == nil {
		return badRequest("max_tokens", "max_tokens: Field required")
	}
	if *body.MaxTokens <= 0 {
		return badRequest("max_tokens", "max_tokens must be positive")
	}
	if body.MaxCompletionTokens != nil {
		body.MaxCompletionTokens = nil // not a field of this API
	}
	if body.Messages != nil {
		for i, m := range *body.Messages {
			if m.Role != "user" && m.Role != "assistant" {
				return badRequest("messages", "messages[%d].role must be user or assistant, got %q", i, m.Role)
			}
		}
	}
	if s := body.System; len(s) > 0 && string(s) != "null" {
		var text string
		if json.Unmarshal(s, &text) != nil {
			var blocks []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			if err := json.Unmarshal(s, &blocks); err != nil {
				return badRequest("system", "system must be a string or a list of text blocks")
			}
			for _, b := range blocks {
				if b.Type == "text" {
					text += b.Text
				}
			}
		}
		if body.Messages != nil {
			msgs := append([]chatMessage{{Role: "system", Content: mustJSON(text)}}, *body.Messages...)
			body.Messages = &msgs
		}
	}
	if len(body.StopSequences) > 0 && string(body.StopSequences) != "null" {
		body.Stop = body.StopSequences
	}
	if t := body.Tools; len(t) > 0 && string(t) != "null" {
		var tools []struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		}
		if err := json.Unmarshal(t, &tools); err != nil {
			return badRequest("tools", "tools: %v", err)
		}
		if len(tools) > maxTools {
			return badRequest("tools", "at most %d tools, got %d", maxTools, len(tools))
		}
		flat := make([]map[string]any, 0, len(tools))
		for i, tl := range tools {
			if len(tl.InputSchema) == 0 || tl.InputSchema[0] != '{' {
				return badRequest("tools", "tools[%d].input_schema must be a dictionary", i)
			}
			flat = append(flat, map[string]any{"type": "function", "name": tl.Name, "parameters": tl.InputSchema})
		}
		body.Tools, _ = json.Marshal(flat)
	}
	if tc := body.ToolChoice; len(tc) > 0 && string(tc) != "null" {
		var choice struct {
			Type string  `json:"type"`
			Name *string `json:"name"`
		}
		if err := json.Unmarshal(tc, &choice); err != nil {
			return badRequest("tool_choice", "tool_choice must be an object with a type")
		}
		switch choice.Type {
		case "auto":
			body.ToolChoice = mustJSON("auto")
		case "any":
			body.ToolChoice = mustJSON("required")
		case "tool":
			if choice.Name == nil {
				return badRequest("tool_choice", "tool_choice of type tool needs a name")
			}
			body.ToolChoice, _ = json.Marshal(map[string]string{"name": *choice.Name})
		default:
			return badRequest("tool_choice", "tool_choice.type must be auto, any or tool, got %q", choice.Type)
		}
	}
	return nil
}

// stopReason is the Messages API's stop_reason of a finish reason.
func stopReason(reason string) string {
	switch reason {
	case finishLength:
		return "max_tokens"
	case finishToolCalls:
		return "tool_use"
	}
	return "end_turn"
}

// msgStream writes the events of one streamed Messages API request.
type msgStream struct {
	c      *call
	id     string
	model  string
	prompt int    // the prompt's tokens
	active string // the open content block's type ("" none)
	index  int    // the open (or next) content block's index
	sglang bool   // SGLang's shape (see the file comment)
	ollama bool   // Ollama's shape (see the file comment)
	llama  bool   // llama.cpp's shape (see the file comment)
	// thinking is the index of llama.cpp's thinking block, left open
	// while the text streams (-1: none).
	thinking int
	// seq and cacheReport give SGLang's cache_read_input_tokens.
	seq         *sequence
	cacheReport bool
}

func (m *msgStream) emit(typ string, fields map[string]any, content bool) error {
	fields["type"] = typ
	b, _ := json.Marshal(fields)
	return m.c.namedEvent(typ, b, content)
}

// begin implements namedStream: message_start, then a ping. vLLM sends
// message_start on the first chat chunk (the role chunk, at the first
// engine output); Anthropic follows it with a ping.
func (m *msgStream) begin() error {
	if m.ollama {
		// Ollama: message_start on the first chunk with the prompt
		// count (Ollama's len/4 estimate of the request while its
		// prompt_eval_count is 0; the persona has its count), no ping.
		return m.emit("message_start", map[string]any{"message": map[string]any{"id": m.id, "type": "message",
			"role": "assistant", "model": m.model, "content": []any{},
			"usage": map[string]any{"input_tokens": m.prompt, "output_tokens": 0}}}, false)
	}
	if m.llama {
		// llama.cpp: message_start with the first token, null stop
		// fields, no ping.
		return m.emit("message_start", map[string]any{"message": map[string]any{"id": m.id, "type": "message",
			"role": "assistant", "content": []any{}, "model": m.model, "stop_reason": nil, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": m.prompt, "output_tokens": 0}}}, false)
	}
	if m.sglang {
		// SGLang: message_start on the role chunk, whose usage is
		// null (input_tokens 0); no ping.
		return m.emit("message_start", map[string]any{"message": map[string]any{"id": m.id, "type": "message",
			"role": "assistant", "content": []any{}, "model": m.model,
			"usage": map[string]any{"input_tokens": 0, "output_tokens": 0, "cache_read_input_tokens": 0}}}, false)
	}
	if err := m.emit("message_start", map[string]any{"message": map[string]any{"id": m.id, "type": "message",
		"role": "assistant", "content": []any{}, "model": m.model, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": m.prompt, "output_tokens": 0}}}, false); err != nil {
		return err
	}
	return m.emit("ping", map[string]any{}, false)
}

// end closes the stream: the open content block, message_delta (the stop
// reason, the usage of sent tokens), message_stop and vLLM's [DONE] (not
// SGLang's or Ollama's).
func (m *msgStream) end(reason string, sent int) {
	if m.thinking >= 0 { // llama.cpp: the thinking block closes first
		active, index := m.active, m.index
		m.active, m.index = "thinking", m.thinking
		if m.stop() != nil {
			return
		}
		m.active, m.index = active, index
	}
	if m.stop() != nil {
		return
	}
	delta, usage := map[string]any{"stop_reason": stopReason(reason), "stop_sequence": nil},
		map[string]any{"input_tokens": m.prompt, "output_tokens": sent}
	if m.sglang {
		// cache_read_input_tokens is the usage chunk's
		// prompt_tokens_details.cached_tokens: 0 unless SGLang runs
		// with --enable-cache-report (here
		// --enable-prompt-tokens-details).
		cached := 0
		if m.cacheReport {
			cached = m.seq.cachedPrompt()
		}
		delta, usage = map[string]any{"stop_reason": stopReason(reason)},
			map[string]any{"input_tokens": m.prompt, "output_tokens": sent, "cache_read_input_tokens": cached}
	}
	if m.ollama {
		delta = map[string]any{"stop_reason": stopReason(reason)}
	}
	if m.llama {
		usage = map[string]any{"output_tokens": sent}
	}
	if m.emit("message_delta", map[string]any{"delta": delta, "usage": usage}, false) != nil {
		return
	}
	if m.emit("message_stop", map[string]any{}, false) != nil || !m.sglang && !m.ollama && !m.llama && m.c.write([]byte("data: [DONE]\n\n")) != nil {
		return
	}
	m.c.tr.DoneNS = time.Now().UnixNano()
}

// fail implements namedStream: an error event.
func (m *msgStream) fail() error {
	if m.llama {
		return m.c.namedEvent("error", []byte(`{"code":500,"message":"simulated fault: error during generation","type":"server_error"}`), false)
	}
	return m.emit("error", map[string]any{"error": map[string]any{"type": "internal_error",
		"message": "simulated fault: error during generation"}}, false)
}

// truncated implements namedStream.
func (m *msgStream) truncated() (string, []byte) {
	return "content_block_delta", []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`)
}

// start opens a content block of type typ, closing the open one.
func (m *msgStream) start(typ string, block map[string]any) error {
	if m.active == typ {
		return nil
	}
	if m.llama && m.active == "thinking" {
		// llama.cpp leaves the thinking block open (end closes it).
		m.thinking, m.active = m.index, ""
		m.index++
	}
	if err := m.stop(); err != nil {
		return err
	}
	m.active = typ
	block["type"] = typ
	return m.emit("content_block_start", map[string]any{"index": m.index, "content_block": block}, false)
}

// stop closes the open content block (a thinking block with its
// signature_delta first).
func (m *msgStream) stop() error {
	if m.active == "" {
		return nil
	}
	if m.active == "thinking" && !m.ollama {
		sig := "sig_" + m.id
		if m.llama {
			sig = "" // no signature for a local model
		}
		if err := m.emit("content_block_delta", map[string]any{"index": m.index,
			"delta": map[string]any{"type": "signature_delta", "signature": sig}}, false); err != nil {
			return err
		}
	}
	m.active = ""
	err := m.emit("content_block_stop", map[string]any{"index": m.index}, false)
	m.index++
	return err
}

// deltas writes the deltas of output tokens [from, to): one delta event per
// block the tokens fall in (thinking, then text or the tool call's
// arguments), as vLLM converts each chat chunk.
func (m *msgStream) deltas(seq *sequence, from, to int) error {
	reasoning, answer := parts(seq, from, to)
	if reasoning != "" && !m.sglang {
		if err := m.start("thinking", map[string]any{"thinking": ""}); err != nil {
			return err
		}
		if err := m.emit("content_block_delta", map[string]any{"index": m.index,
			"delta": map[string]any{"type": "thinking_delta", "thinking": reasoning}}, true); err != nil {
			return err
		}
	}
	if to <= seq.reasoning || answer == "" && seq.tool == nil {
		return nil
	}
	if seq.tool != nil {
		if err := m.start("tool_use", map[string]any{"id": "toolu_" + m.id, "name": seq.tool.name, "input": map[string]any{}}); err != nil {
			return err
		}
		return m.emit("content_block_delta", map[string]any{"index": m.index,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": answer}}, true)
	}
	if err := m.start("text", map[string]any{"text": ""}); err != nil {
		return err
	}
	return m.emit("content_block_delta", map[string]any{"index": m.index,
		"delta": map[string]any{"type": "text_delta", "text": answer}}, true)
}

// streamMessages serves a streamed Messages API request.
func (s *Simulator) streamMessages(c *call, g *genRequest, seq *sequence, fp faultPlan, id string) {
	if !c.openStream(fp.terminal == faultHang) {
		return
	}
	if fp.stallBefore && !c.sleep(fp.stallFor) {
		return
	}
	m := &msgStream{c: c, id: id, model: g.model, prompt: len(g.prompt), seq: seq,
		sglang: s.cfg.Engine == EngineSGLang, ollama: s.cfg.Engine == EngineOllama, llama: s.cfg.Engine == EngineLlamaCpp,
		thinking: -1, cacheReport: s.cfg.EnablePromptTokensDetails}
	if fp.empty {
		if m.begin() == nil {
			c.tr.FinishReason = finishStop
			m.end(finishStop, 0)
		}
		return
	}
	if sent, ok := s.namedTokens(c, seq, fp, m); ok {
		m.end(c.tr.FinishReason, sent)
	}
}

// completeMessages answers a non-streamed Messages API request: the
// content blocks (thinking, then text or tool_use), stop_reason and usage,
// as vLLM's messages_full_converter (whose json.loads of a tool call's
// arguments fails on ones that are not JSON: a 500).
func (s *Simulator) completeMessages(c *call, g *genRequest, seq *sequence, produced int, reason, id string) {
	reasoning, answer := parts(seq, 0, produced)
	content := []any{}
	if reasoning != "" {
		content = append(content, map[string]any{"type": "thinking", "thinking": reasoning, "signature": "sig_" + id})
	}
	if produced > seq.reasoning {
		if seq.tool != nil {
			var input map[string]any
			if err := json.Unmarshal([]byte(answer), &input); err != nil {
				c.fail(&apiError{Status: http.StatusInternalServerError, Type: "internal_error", Message: err.Error()})
				return
			}
			content = append(content, map[string]any{"type": "tool_use", "id": "toolu_" + id, "name": seq.tool.name, "input": input})
		} else if answer != "" {
			content = append(content, map[string]any{"type": "text", "text": answer})
		}
	}
	body, _ := json.Marshal(map[string]any{"id": id, "type": "message", "role": "assistant", "content": content,
		"model": g.model, "stop_reason": stopReason(reason), "usage": map[string]any{"input_tokens": len(g.prompt), "output_tokens": produced}})
	c.answer(body, produced, reason, faultPlan{}) // this API's answers take no body faults
}
