package sweepd

import (
	"testing"

	"github.com/llmprobe/llmprobe/prober/config"
)

// specOf is the spec of YAML text.
func specOf(t testing.TB, text string) config.SweepSpec {
	t.Helper()
	s, err := config.ParseSweepSpec(text)
	if err != nil {
		t.Fatalf("%q: %v", text, err)
	}
	return s
}

// with is spec with more keys (YAML text), the workload kept.
func with(t testing.TB, spec config.SweepSpec, text string) config.SweepSpec {
	t.Helper()
	more := specOf(t, text)
	for k, v := range spec.Keys {
		if _, ok := more.Keys[k]; !ok {
			more.Keys[k] = v
		}
	}
	more.Workload = spec.Workload
	return more
}
