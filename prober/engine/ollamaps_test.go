package engine

import "testing"

// TestParseOllamaPs reads GET /api/ps for one model: the loaded model's
// context_length (by name or model), not loaded when it is not listed or
// lists no context, not Ollama's shape when the body is not an object.
func TestParseOllamaPs(t *testing.T) {
	const ps = `{"models":[{"name":"other:1b","model":"other:1b","context_length":2048},` +
		`{"name":"qwen3:8b","model":"qwen3:8b","size":6654289920,"context_length":8192,"size_vram":6654289920}]}`
	tests := []struct {
		name, body, model string
		ctx               int
		loaded, ok        bool
	}{
		{"loaded", ps, "qwen3:8b", 8192, true, true},
		{"by model field", `{"models":[{"name":"alias","model":"qwen3:8b","context_length":4096}]}`, "qwen3:8b", 4096, true, true},
		{"not loaded", ps, "llama3:8b", 0, false, true},
		{"nothing loaded", `{"models":[]}`, "qwen3:8b", 0, false, true},
		{"no context (an older Ollama)", `{"models":[{"name":"qwen3:8b","model":"qwen3:8b"}]}`, "qwen3:8b", 0, false, true},
		{"context not a number", `{"models":[{"name":"qwen3:8b","context_length":"8k"}]}`, "qwen3:8b", 0, false, true},
		{"not Ollama's shape", `[1,2]`, "qwen3:8b", 0, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, loaded, ok := ParseOllamaPs([]byte(tt.body), tt.model)
			if ctx != tt.ctx || loaded != tt.loaded || ok != tt.ok {
				t.Errorf("ParseOllamaPs = %d, %v, %v; want %d, %v, %v", ctx, loaded, ok, tt.ctx, tt.loaded, tt.ok)
			}
		})
	}
}
