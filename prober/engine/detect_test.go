package engine_test

import (
	"testing"

	"github.com/llmprobe/llmprobe/prober/engine"
)

// TestDetectionNeedsEngineEvidence: a catch-all answer ({"version"} on any
// path, issue 22 V4) or another engine's shape passes no engine's
// detection probe; each engine's own answer passes its own.
func TestDetectionNeedsEngineEvidence(t *testing.T) {
	bodies := map[string]string{
		"catch-all version":   `{"version":"x"}`,
		"empty object":        `{}`,
		"empty tag list":      `{"models":[]}`,
		"tags without digest": `{"models":[{"name":"llama3:latest"}]}`,
		"models list":         `{"object":"list","data":[{"id":"m"}]}`,
	}
	own := map[engine.Name]string{
		engine.LlamaCpp: `{"default_generation_settings":{"n_ctx":4096},"total_slots":4,"build_info":"b6500"}`,
		engine.TGI:      `{"model_id":"m","max_total_tokens":4096,"version":"3.3.6"}`,
		engine.SGLang:   `{"version":"0.5.4","model_path":"m"}`,
		engine.Ollama:   `{"models":[{"name":"llama3:latest","model":"llama3:latest","digest":"365c0bd3c000","size":1}]}`,
	}
	for _, n := range engine.DetectionOrder {
		d, ok := engine.Get(n).Detection()
		if !ok {
			t.Fatalf("%s: no detection probe", n)
		}
		for what, b := range bodies {
			if _, ok := d.Parse([]byte(b)); ok {
				t.Errorf("%s (%s) accepts %s %s", n, d.Path, what, b)
			}
		}
		for other, b := range own {
			if _, ok := d.Parse([]byte(b)); ok != (other == n) {
				t.Errorf("%s (%s) on %s's answer: ok %v", n, d.Path, other, ok)
			}
		}
	}
	if d, _ := engine.Get(engine.Ollama).Detection(); d.Path != engine.OllamaTagsPath {
		t.Errorf("engine.Ollama is detected by %s, want %s (not /api/version)", d.Path, engine.OllamaTagsPath)
	}
	for _, n := range []engine.Name{engine.VLLM, engine.Unknown} {
		if _, ok := engine.Get(n).Detection(); ok {
			t.Errorf("%s has a detection probe", n)
		}
	}
}
