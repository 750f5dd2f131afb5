package config_test

import (
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/prober/config"
)

// TestSweepStepBudget: a scheduled sweep whose rate x duration makes a step
// of more than sweep.MaxStepRequests requests is a config error naming its
// keys, as the API's 400 (issue 22 D8: it failed only at that step, naming
// the CLI flag --duration); at the budget it loads.
func TestSweepStepBudget(t *testing.T) {
	doc := func(rates, duration string) string {
		return "targets:\n  - name: a\n    base_url: http://127.0.0.1:1\n    sweeps:\n      - name: n\n        every: 1h\n" +
			"        rates: " + rates + "\n        duration: " + duration + "\n"
	}
	_, err := config.Parse([]byte(doc("[1, 100]", "24h")), "t.yml")
	want := "targets[0].sweeps[0].duration: duration 24h0m0s at rates 100 req/s makes 8640000 requests per step, more than 2000000: shorten duration or lower rates"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v, want %q", err, want)
	}
	if _, err := config.Parse([]byte(doc("[100]", "20000s")), "t.yml"); err != nil {
		t.Errorf("at the budget: %v", err)
	}
}
