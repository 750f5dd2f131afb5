package web

import (
	"testing"

	"github.com/llmprobe/llmprobe/prober/config"
)

// mustSpec is the spec of YAML text.
func mustSpec(t *testing.T, text string) config.SweepSpec {
	t.Helper()
	s, err := config.ParseSweepSpec(text)
	if err != nil {
		t.Fatalf("%q: %v", text, err)
	}
	return s
}
