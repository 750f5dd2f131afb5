package client

import (
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober"
)

// TestPersonaErrorClasses runs a streamed chat against each persona's
// error answers (its engine's body shape, internal/simulator/errors.go):
// the class is the status's and the message is read from the engine's
// shape, not left as raw JSON. SGLang answers an unknown model.
func TestPersonaErrorClasses(t *testing.T) {
	const ctxLen = 64
	long := strings.Repeat("w ", ctxLen+1)
	tests := []struct {
		name, engine, model, prompt string
		faults                      simulator.Faults
		wantStatus                  int
		wantMsg                     string
	}{
		{name: "vllm too long", engine: simulator.EngineVLLM, prompt: long, wantStatus: 400,
			wantMsg: "the model's context length is only 64 tokens"},
		{name: "sglang too long", engine: simulator.EngineSGLang, prompt: long, wantStatus: 400,
			wantMsg: "is longer than the model's context length (64 tokens)"},
		{name: "sglang unknown model is answered", engine: simulator.EngineSGLang, model: "gpt-4", wantStatus: 0},
		{name: "tgi too long", engine: simulator.EngineTGI, prompt: long, wantStatus: 422,
			wantMsg: "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 64"},
		{name: "tgi overloaded", engine: simulator.EngineTGI, faults: simulator.Faults{HTTP429: 1}, wantStatus: 429,
			wantMsg: "Model is overloaded"},
		{name: "llamacpp too long", engine: simulator.EngineLlamaCpp, prompt: long, wantStatus: 400,
			wantMsg: "the request exceeds the available context size"},
		{name: "llamacpp loading", engine: simulator.EngineLlamaCpp, faults: simulator.Faults{HTTP503: 1}, wantStatus: 503,
			wantMsg: "Loading model"},
		{name: "ollama unknown model", engine: simulator.EngineOllama, model: "gpt-4", wantStatus: 404,
			wantMsg: `model "gpt-4" not found, try pulling it first`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := simulator.DefaultConfig()
			cfg.Engine, cfg.MaxModelLen, cfg.Faults = tt.engine, ctxLen, tt.faults
			url, _ := simtest.Start(t, cfg)
			prompt := tt.prompt
			if prompt == "" {
				prompt = "hello there, simulator"
			}
			req := Request{ID: "sim-1", Model: tt.model, MaxTokens: 4, IgnoreEOS: true}
			if prompt == long {
				req.MaxTokens = 0 // no output limit: the prompt alone is over the context
			}
			setInput(&req, APIChat, prompt)
			want := prober.ClassNone
			if tt.wantStatus != 0 {
				want = prober.ClassForStatus(tt.wantStatus)
			}
			rec := checkOutcome(t, url, Options{API: APIChat}, 0, req, want, tt.wantMsg, 0)
			if tt.wantStatus != 0 && (rec.HTTPStatus != tt.wantStatus || strings.Contains(rec.ErrorMessage, "{")) {
				t.Errorf("status %d, message %q: want %d and the engine's message, not its JSON", rec.HTTPStatus, rec.ErrorMessage,
					tt.wantStatus)
			}
		})
	}
}
