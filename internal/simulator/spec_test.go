package simulator

import (
	"strings"
	"testing"
)

// TestSpecDraft pins the documented rule of --spec-draft-tokens (docs/simulator.md).
func TestSpecDraft(t *testing.T) {
	for _, tt := range []struct {
		n, k              int
		p                 float64
		drafted, accepted int
	}{
		{n: 24, k: 4, p: 0.7, drafted: 28, accepted: 17}, // 7 steps
		{n: 64, k: 4, p: 0.7, drafted: 68, accepted: 47}, // 17 steps
		{n: 10, k: 5, p: 1, drafted: 10, accepted: 8},    // 2 steps of 1+5 (the last one short)
		{n: 10, k: 5, p: 0, drafted: 50, accepted: 0},    // every draft rejected
		{n: 1, k: 8, p: 0.7, drafted: 8, accepted: 0},
		{n: 0, k: 4, p: 0.7},
		{n: 24, k: 0, p: 0.7},
	} {
		d, a := specDraft(tt.n, tt.k, tt.p)
		if d != tt.drafted || a != tt.accepted {
			t.Errorf("specDraft(%d, %d, %v) = %d, %d, want %d, %d", tt.n, tt.k, tt.p, d, a, tt.drafted, tt.accepted)
		}
		if a > d || (tt.n > 0 && a >= tt.n) {
			t.Errorf("specDraft(%d, %d, %v): %d accepted of %d drafted", tt.n, tt.k, tt.p, a, d)
		}
	}
}

func TestSpecConfigValidation(t *testing.T) {
	for _, tt := range []struct {
		engine string
		k      int
		p      float64
		want   string
	}{
		{EngineLlamaCpp, 4, 0.7, ""},
		{EngineLlamaCpp, -1, 0.7, "--spec-draft-tokens must be in [0, 256]"},
		{EngineLlamaCpp, MaxSpecDraftTokens + 1, 0.7, "--spec-draft-tokens must be in [0, 256]"},
		{EngineLlamaCpp, 4, 1.5, "--spec-acceptance must be in [0, 1]"},
		{EngineVLLM, 4, 0.7, "llamacpp persona only"},
		{EngineVLLM, 0, 0.7, ""},
	} {
		c := DefaultConfig()
		c.Engine, c.SpecDraftTokens, c.SpecAcceptance = tt.engine, tt.k, tt.p
		err := c.Validate()
		if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s K=%d P=%v: %v, want %q", tt.engine, tt.k, tt.p, err, tt.want)
		}
	}
}
