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
//   - SGLang and TGI: the same shapes without vLLM's extra fields (TGI adds
//     its system_fingerprint "<version>-native" to every chunk);
//   - llama.cpp: system_fingerprint "b<build>-<commit>", the chat role
//     chunk with "content": null, token chunks without finish_reason, then
//     a last choices chunk with no text, the finish_reason, usage and
//     timings (whether or not include_usage was asked), and no usage chunk;
//   - Ollama: system_fingerprint "fp_ollama", the role on every chat delta
//     and no role chunk, the finish_reason on a last chunk with empty text,
//     then the usage chunk when include_usage.
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
}

func (s *Simulator) newWire(g *genRequest, id string, created int64) *wire {
	w := &wire{engine: s.cfg.Engine, g: g, id: id, created: created, model: s.cfg.Model, start: time.Now(),
		details: s.cfg.EnablePromptTokensDetails, reasoningField: s.cfg.ReasoningField,
		specK: s.cfg.SpecDraftTokens, specP: s.cfg.SpecAcceptance, tr: &TraceRecord{}}
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
func (w *wire) separateFinish() bool { return w.engine == EngineLlamaCpp || w.engine == EngineOllama }

// usageOnFinish reports whether usage rides on that finish chunk.
func (w *wire) usageOnFinish() bool { return w.engine == EngineLlamaCpp }

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
	case w.vllmLike():
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
	if !w.vllmLike() {
		var delta any
		if w.g.kind == kindChat {
			d := map[string]any{"content": text}
			if w.engine == EngineOllama {
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
	ch := completionStreamChoice{Text: text, FinishReason: finish, Logprobs: w.lp}
	if first && vllm {
		ch.PromptTokenIDs = w.g.prompt
	}
	b, _ := json.Marshal(completionChunk{ID: w.id, Object: "text_completion", Created: w.created, Model: w.model,
		Choices: []completionStreamChoice{ch}, Usage: use, SystemFingerprint: w.fp})
	return b
}

// finish is the last choices chunk of llama.cpp and Ollama: no text, the
// finish_reason (llama.cpp: with usage and timings).
func (w *wire) finish(reason string, completion int) []byte {
	var delta any
	if w.g.kind == kindChat {
		delta = map[string]any{}
		if w.engine == EngineOllama {
			delta = map[string]any{"role": "assistant", "content": ""}
		}
	}
	var use *usage
	extra := map[string]any{}
	if w.usageOnFinish() {
		p := len(w.g.prompt)
		cached := 0
		if w.seq != nil {
			cached = w.seq.cachedPrompt()
		}
		use = &usage{PromptTokens: p, CompletionTokens: completion, TotalTokens: p + completion,
			PromptTokensDetails: cachedDetails(cached)}
		now := time.Now()
		promptMS := float64(w.first.Sub(w.start).Microseconds()) / 1000
		predictedMS := float64(now.Sub(w.first).Microseconds()) / 1000
		// llama.cpp's timings: prompt_n counts the tokens evaluated,
		// cache_n the ones reused.
		p -= cached
		t := map[string]any{"cache_n": cached, "prompt_n": p, "prompt_ms": promptMS, "predicted_n": completion, "predicted_ms": predictedMS}
		if p > 0 && promptMS > 0 {
			t["prompt_per_token_ms"], t["prompt_per_second"] = promptMS/float64(p), 1000*float64(p)/promptMS
		}
		if completion > 0 && predictedMS > 0 {
			t["predicted_per_token_ms"], t["predicted_per_second"] = predictedMS/float64(completion), 1000*float64(completion)/predictedMS
		}
		specTimings(t, completion, w.specK, w.specP, w.tr)
		extra["timings"] = t
	} else {
		use = w.continuous(completion)
	}
	return w.personaExtra(delta, "", &reason, use, extra)
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
	if use != nil {
		c["usage"] = use
	}
	for k, v := range extra {
		c[k] = v
	}
	b, _ := json.Marshal(c)
	return b
}
