package endpoint

import (
	"context"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
)

// TestDiscoverLoRA accepts a configured LoRA adapter that /v1/models lists
// (its parent and, as vLLM lists none for an adapter, the parent's
// max_model_len), and without a configured model picks the base model.
func TestDiscoverLoRA(t *testing.T) {
	cfg := simtest.Fast()
	cfg.LoRAModules = "sql-lora=/adapters/sql"
	url, _ := simtest.Start(t, cfg)
	for _, tc := range []struct{ model, want, parent string }{
		{"sql-lora", "sql-lora", cfg.Model},
		{"", cfg.Model, ""},
	} {
		e, err := New(Options{BaseURL: url, Model: tc.model})
		if err != nil {
			t.Fatal(err)
		}
		info, err := e.Discover(context.Background())
		if err != nil {
			t.Fatalf("%q: %v", tc.model, err)
		}
		if info.Model != tc.want || !info.Listed || info.Parent != tc.parent || info.MaxModelLen != cfg.MaxModelLen || len(info.Models) != 2 {
			t.Errorf("%q: %+v", tc.model, info)
		}
		e.CloseIdleConnections()
	}
}
