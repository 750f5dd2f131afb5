package client

import (
	"context"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober"
)

// TestMessagesLlamaCpp streams the Messages API from the llama.cpp persona
// (testdata/engines/llamacpp/2025-12/README.md): its thinking block stays
// open while the text streams and closes at the end with an empty
// signature, message_delta carries output_tokens only, no [DONE]; an error
// during the stream is an "error" event holding llama.cpp's OpenAI-style
// error object, which is a stream failure with the server's message, not
// an event to pass over; a refused request's body is that object too. The
// SGLang persona's converter drops the thinking (sglang/0.5/README.md): its
// reasoning tokens are in output_tokens, none is streamed, and the first
// event is the answer's. Ollama's streams the thinking without a
// signature_delta (ollama/0.33/README.md).
func TestMessagesThinkingByPersona(t *testing.T) {
	const reasoning, maxTokens = 6, 20
	tests := []struct {
		name      string
		engine    string
		faults    simulator.Faults
		wantClass prober.ErrorClass
		wantMsg   string
	}{
		{name: "llama.cpp answer", engine: simulator.EngineLlamaCpp},
		{name: "SGLang answer", engine: simulator.EngineSGLang},
		{name: "Ollama answer", engine: simulator.EngineOllama},
		{name: "llama.cpp error event", engine: simulator.EngineLlamaCpp, faults: simulator.Faults{ErrorEvent: 1},
			wantClass: prober.ClassStream, wantMsg: "server error event: simulated fault: error during generation"},
		{name: "llama.cpp HTTP 429", engine: simulator.EngineLlamaCpp, faults: simulator.Faults{HTTP429: 1},
			wantClass: prober.ClassHTTP429, wantMsg: "HTTP 429 Too Many Requests: simulated fault: too many requests"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := simtest.Fast()
			cfg.Engine, cfg.ReasoningTokens, cfg.Faults = tt.engine, reasoning, tt.faults
			if tt.engine == simulator.EngineOllama {
				cfg.ReasoningField = simulator.ReasoningField // Ollama's delta.reasoning
			}
			url, _ := simtest.Start(t, cfg)
			c := newClient(t, Options{BaseURL: url, API: APIMessages})
			rec := do(t, context.Background(), c, Request{ID: "llama-m", MaxTokens: maxTokens, IgnoreEOS: true,
				Messages: []Message{{Role: "user", Content: "what is the capital of France?"}}})
			if rec.Error != tt.wantClass || !strings.Contains(rec.ErrorMessage, tt.wantMsg) {
				t.Fatalf("class %q (%s), want %q with %q", rec.Error, rec.ErrorMessage, tt.wantClass, tt.wantMsg)
			}
			if tt.wantClass != prober.ClassNone {
				return
			}
			if rec.CompletionTokens != maxTokens || rec.PromptTokens <= 0 || rec.FinishReason != "length" || rec.TTFT <= 0 {
				t.Errorf("completion %d, prompt %d, finish %q, TTFT %v", rec.CompletionTokens, rec.PromptTokens, rec.FinishReason, rec.TTFT)
			}
			if tt.engine == simulator.EngineSGLang {
				if rec.ReasoningTokens != 0 || rec.TTFTText != rec.TTFT || rec.ThinkingTime != 0 {
					t.Errorf("SGLang streams no thinking: reasoning %d, TTFT %v, TTFT text %v, thinking %v",
						rec.ReasoningTokens, rec.TTFT, rec.TTFTText, rec.ThinkingTime)
				}
				return
			}
			// One reasoning token per thinking delta; a delta may carry several.
			if rec.ReasoningTokens <= 0 || rec.ReasoningTokens > reasoning || !rec.ReasoningTokensCounted ||
				rec.TTFR != rec.TTFT || rec.TTFTText < rec.TTFR || rec.ThinkingTime != rec.TTFTText-rec.TTFR {
				t.Errorf("reasoning %d (counted %v), TTFT %v, TTFR %v, TTFT text %v, thinking %v", rec.ReasoningTokens,
					rec.ReasoningTokensCounted, rec.TTFT, rec.TTFR, rec.TTFTText, rec.ThinkingTime)
			}
		})
	}
}
