package simulator

import (
	"encoding/json"
	"time"
)

// wire builds the SSE payloads of one streamed request as the persona's
// server writes them:
//
//   - vLLM: vllm 0.11's chunks (prompt token ids on the first completions
//     chunk, the finish_reason on the last token chunk, a usage chunk with
//     empty choices when include_usage);
//   - SGLang and TGI: the same shapes without vLLM's extra fields; SGLang's
//     chat sends the finish_reason on a chunk of its own with an empty delta
//     (serving_chat.py); TGI adds its system_fingerprint "<version>-native"
//     to every chunk, puts the role on every chat delta and sends no role
//     chunk (router/src/lib.rs TextMessage), and ends a completions stream
//     with the finish_reason and usage on its last token chunk, with no
//     usage chunk (CompletionFinal);
//   - llama.cpp: system_fingerprint "b<build>-<commit>", the chat role
//     chunk with "content": null, token chunks without finish_reason, then
//     a last choices chunk with no text and the finish_reason; a chat asked
//     for include_usage then gets a usage chunk with empty choices carrying
//     the timings (server-task.cpp to_json_oaicompat_chat_stream); a
//     completion, or a chat not asked for usage, has usage and timings on
//     the finish chunk;
//   - Ollama: system_fingerprint "fp_ollama", the role on the first chat
//     delta only and no role chunk, the finish_reason on a last chunk with
//     an empty delta or empty text, then the usage chunk when include_usage
//     (github.com/ollama/ollama/openai/openai.go ToStreamChunks,
//     FinishChunk).
type wire struct {
	engine string
	g      *genRequest
	seq    *sequence // the prompt tokens found cached (llama.cpp's usage; nil: 0)
	// details puts prompt_tokens_details.cached_tokens on the usage chunk
	// (--enable-prompt-tokens-details).
	details bool
	id      string
	created int64
	model   string
	fp      string
	start   time.Time
	first   time.Time
	// lp is the logprobs object of the next token chunk (nil: none);
	// offset the text offset of its first token (features.go).
	lp     any
	offset int
	// reasoning is the reasoning text of the next token chunk; toolStart
	// marks the chunk that starts the tool call (reasoning.go).
	reasoning string
	// reasoningField is --reasoning-field.
	reasoningField string
	toolStart      bool
	// specK and specP are --spec-draft-tokens and --spec-acceptance; tr is
	// the request's trace record, which notes the draft figures sent.
	specK int
	specP float64
	tr    *TraceRecord
	// rust frames the chunks as vLLM's Rust frontend does (vllmrust.go).
	rust bool
}

func (s *Simulator) newWire(g *genRequest, id string, created int64) *wire {
	w := &wire{engine: s.cfg.Engine, g: g, id: id, created: created, model: s.cfg.Model, start: time.Now(),
		details: s.cfg.EnablePromptTokensDetails, reasoningField: s.cfg.ReasoningField,
		specK: s.cfg.SpecDraftTokens, specP: s.cfg.SpecAcceptance, tr: &TraceRecord{}, rust: s.cfg.rustFrontend()}
	if g.model != "" {
		w.model = g.model // a LoRA adapter is echoed, as vLLM does
	}
	switch w.engine {
	case EngineTGI:
		w.fp = VersionTGI + "-native"
	case EngineLlamaCpp:
		w.fp = VersionLlamaCpp
	case EngineOllama:
		w.fp = "fp_ollama"
	}
	return w
}

// separateFinish reports whether the finish_reason comes on a chunk of its
// own after the last token.
func (w *wire) separateFinish() bool {
	return w.rust || w.engine == EngineLlamaCpp || w.engine == EngineOllama || w.engine == EngineSGLang && w.g.kind == kindChat
}

// usageOnFinish reports whether the usage rides on the chunk with the
// finish_reason instead of a usage chunk of its own: llama.cpp's
// completions and its chats not asked for include_usage, TGI's completions.
func (w *wire) usageOnFinish() bool {
	switch w.engine {
	case EngineLlamaCpp:
		return w.g.kind != kindChat || !w.g.includeUsage
	case EngineTGI:
		return w.g.kind != kindChat
	}
	return false
}

func (w *wire) vllmLike() bool {
	return w.engine == "" || w.engine == EngineVLLM || w.engine == EngineSGLang || w.engine == EngineTGI
}

func (w *wire) continuous(completion int) *usage {
	if !w.g.continuousUsage {
		return nil
	}
	p := len(w.g.prompt)
	return &usage{PromptTokens: p, CompletionTokens: completion, TotalTokens: p + completion}
}

// role is the chat role chunk, nil when the persona sends none.
func (w *wire) role() []byte {
	switch {
	case w.rust:
		return w.rustRole()
	case w.vllmLike() && w.engine != EngineTGI:
		c := chatChunk{ID: w.id, Object: "chat.completion.chunk", Created: w.created, Model: w.model,
			Usage: w.continuous(0), SystemFingerprint: w.fp}
		c.Choices = []chatChunkChoice{{Delta: chatDelta{Role: "assistant"}}}
		if w.engine == "" || w.engine == EngineVLLM {
			c.PromptTokenIDs = jsonNull
		}
		b, _ := json.Marshal(c)
		return b
	case w.engine == EngineLlamaCpp:
		return w.persona(map[string]any{"role": "assistant", "content": nil}, "", nil, nil)
	}
	return nil
}

// token is one chunk of generated text (finish set on the last one when
// the persona puts the finish_reason there).
func (w *wire) token(text string, finish *string, completion int, first bool) []byte {
	if w.first.IsZero() {
		w.first = time.Now()
	}
	if w.rust {
		return w.rustToken(text, completion)
	}
	if !w.vllmLike() {
		var delta any
		if w.g.kind == kindChat {
			d := map[string]any{"content": text}
			if w.engine == EngineOllama && first {
				d["role"] = "assistant"
			}
			delta = d
		}
		return w.persona(delta, text, finish, w.continuous(completion))
	}
	use := w.continuous(completion)
	vllm := w.engine == "" || w.engine == EngineVLLM
	if w.g.kind == kindChat {
		c := chatChunk{ID: w.id, Object: "chat.completion.chunk", Created: w.created, Model: w.model, Usage: use,
			SystemFingerprint: w.fp}
		ch := chatChunkChoice{Delta: chatDelta{Content: text}, FinishReason: finish, Logprobs: w.lp}
		if w.engine == EngineTGI {
			ch.Delta.Role = "assistant"
		}
		if w.reasoningField == ReasoningField {
			ch.Delta.Reasoning = w.reasoning
		} else {
			ch.Delta.ReasoningContent = w.reasoning
		}
		if w.seq != nil && w.seq.tool != nil {
			ch.Delta.Content = ""
			if text != "" || w.toolStart && completion > w.seq.reasoning {
				d := toolCallDelta{Function: toolFunctionDelta{Arguments: text}}
				if w.toolStart {
					d.ID, d.Type, d.Function.Name = "chatcmpl-tool-"+w.id, "function", w.seq.tool.name
				}
				ch.Delta.ToolCalls = []toolCallDelta{d}
			}
		}
		if vllm {
			ch.TokenIDs = jsonNull
			if finish != nil {
				ch.StopReason = jsonNull
			}
		}
		c.Choices = []chatChunkChoice{ch}
		b, _ := json.Marshal(c)
		return b
	}
	if use != nil {
		use.PromptTokensDetails = jsonNull
	}
	if finish != nil && w.usageOnFinish() {
		p := len(w.g.prompt)
		use = &usage{PromptTokens: p, CompletionTokens: completion, TotalTokens: p + completion}
	}
	ch := completionStreamChoice{Text: text, FinishReason: finish, Logprobs: w.lp}
	if first && vllm {
		ch.PromptTokenIDs = w.g.prompt
	}
	b, _ := json.Marshal(completionChunk{ID: w.id, Object: "text_completion", Created: w.created, Model: w.model,
		Choices: []completionStreamChoice{ch}, Usage: use, SystemFingerprint: w.fp})
	return b
}

// toolStartChunk is, when the chunk about to be written starts the tool
// call and carries argument text, the chunk to send before it: the call's
// id, type and name alone, as both vLLM frontends send it (the Python
// frontend's tool parser, the Rust frontend's tool_call_start_chunk;
// testdata/engines/vllm/0.24*/README.md). It takes the chunk's reasoning
// with it, so that chunk carries the arguments alone. Nil otherwise (only
// the vLLM persona calls tools).
func (w *wire) toolStartChunk(text string, completion int) []byte {
	if w.g.kind != kindChat || w.seq == nil || w.seq.tool == nil || !w.toolStart || completion <= w.seq.reasoning || text == "" {
		return nil
	}
	lp := w.lp
	w.lp = nil // the logprobs go with the arguments' text
	b := w.token("", nil, completion, false)
	w.toolStart, w.reasoning, w.lp = false, "", lp
	return b
}

// finish is the last choices chunk of llama.cpp and Ollama: no text, the
// finish_reason (llama.cpp: with usage and timings).
func (w *wire) finish(reason string, completion int) []byte {
	if w.rust {
		return w.rustFinish(reason, completion)
	}
	var delta any
	if w.g.kind == kindChat {
		delta = map[string]any{}
	}
	var use *usage
	extra := map[string]any{}
	if w.usageOnFinish() {
		use = w.llamaUsage(completion)
		extra["timings"] = w.llamaTimings(completion)
	} else {
		use = w.continuous(completion)
	}
	return w.personaExtra(delta, "", &reason, use, extra)
}

// cached is the number of prompt tokens found cached (llama.cpp's usage).
func (w *wire) cached() int {
	if w.seq != nil {
		return w.seq.cachedPrompt()
	}
	return 0
}

// llamaUsage is llama.cpp's usage, with the cached prompt tokens.
func (w *wire) llamaUsage(completion int) *usage {
	p := len(w.g.prompt)
	return &usage{PromptTokens: p, CompletionTokens: completion, TotalTokens: p + completion,
		PromptTokensDetails: cachedDetails(w.cached())}
}

// llamaTimings is llama.cpp's timings object: prompt_n counts the tokens
// evaluated, cache_n the ones reused.
func (w *wire) llamaTimings(completion int) map[string]any {
	cached := w.cached()
	p := len(w.g.prompt) - cached
	now, first := time.Now(), w.first
	if first.IsZero() {
		first = now // no token was sent (the empty-answer fault)
	}
	promptMS := float64(first.Sub(w.start).Microseconds()) / 1000
	predictedMS := float64(now.Sub(first).Microseconds()) / 1000
	t := map[string]any{"cache_n": cached, "prompt_n": p, "prompt_ms": promptMS, "predicted_n": completion, "predicted_ms": predictedMS}
	if p > 0 && promptMS > 0 {
		t["prompt_per_token_ms"], t["prompt_per_second"] = promptMS/float64(p), 1000*float64(p)/promptMS
	}
	if completion > 0 && predictedMS > 0 {
		t["predicted_per_token_ms"], t["predicted_per_second"] = predictedMS/float64(completion), 1000*float64(completion)/predictedMS
	}
	specTimings(t, completion, w.specK, w.specP, w.tr)
	return t
}

// usage is the trailing usage chunk (empty choices), with the request's
// per-request metrics when m is not nil.
func (w *wire) usage(completion int, m *perRequestMetrics) []byte {
	p := len(w.g.prompt)
	use := usage{PromptTokens: p, CompletionTokens: completion, TotalTokens: p + completion}
	if w.details {
		cached := 0
		if w.seq != nil {
			cached = w.seq.cachedPrompt()
		}
		use.PromptTokensDetails = cachedDetails(cached)
	}
	if w.seq != nil {
		use.CompletionTokensDetails = completionDetails(w.g, w.seq, completion)
	}
	if w.rust {
		return w.rustUsage(use)
	}
	if w.engine == EngineLlamaCpp {
		// llama.cpp's usage chunk: empty choices, usage with the cached
		// prompt tokens, and the timings.
		return w.personaExtra(nil, "", nil, w.llamaUsage(completion),
			map[string]any{"choices": []any{}, "timings": w.llamaTimings(completion)})
	}
	var b []byte
	if w.g.kind == kindChat {
		b, _ = json.Marshal(chatChunk{ID: w.id, Object: "chat.completion.chunk", Created: w.created, Model: w.model,
			Choices: []chatChunkChoice{}, Usage: &use, SystemFingerprint: w.fp, Metrics: m})
	} else {
		b, _ = json.Marshal(completionChunk{ID: w.id, Object: "text_completion", Created: w.created, Model: w.model,
			Choices: []completionStreamChoice{}, Usage: &use, SystemFingerprint: w.fp, Metrics: m})
	}
	return b
}

// errorEvent is the error event of the error-event fault, in the shape of
// llama.cpp's format_error_response (vLLM's ErrorResponse has the same
// keys).
func (w *wire) errorEvent() []byte {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"code": 500, "message": "simulated fault: error during generation", "type": "server_error"}})
	return b
}

func (w *wire) persona(delta any, text string, finish *string, use *usage) []byte {
	return w.personaExtra(delta, text, finish, use, nil)
}

// personaExtra builds a llama.cpp or Ollama chunk (delta for chat, text
// for completions) with extra top-level fields.
func (w *wire) personaExtra(delta any, text string, finish *string, use *usage, extra map[string]any) []byte {
	choice := map[string]any{"index": 0, "finish_reason": finish}
	obj := "text_completion"
	if w.g.kind == kindChat {
		choice["delta"] = delta
		obj = "chat.completion.chunk"
	} else {
		choice["text"] = text
		choice["logprobs"] = nil
	}
	c := map[string]any{"id": w.id, "object": obj, "created": w.created, "model": w.model,
		"system_fingerprint": w.fp, "choices": []any{choice}}
	if w.fp == "" {
		delete(c, "system_fingerprint") // SGLang's chunks have none
	}
	if use != nil {
		c["usage"] = use
	}
	for k, v := range extra {
		c[k] = v
	}
	b, _ := json.Marshal(c)
	return b
}
