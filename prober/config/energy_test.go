package config

import (
	"strings"
	"testing"
)

// TestTargetGPUSource: a target's gpu_metrics_url and gpu_selector are
// kept for its scheduled sweeps (prober/sweep TestFromSpecGPUSource), and
// the URL's secrets stay out of Redacted.
func TestTargetGPUSource(t *testing.T) {
	c, err := Parse([]byte(`targets:
  - name: sim
    base_url: http://127.0.0.1:8000
    gpu_metrics_url: http://127.0.0.1:9400/metrics?token=s3cret
    gpu_selector: pod="vllm-0",namespace="llm"
    sweeps:
      - name: nightly
        every: 24h
        rates: [1]
`), "llmprobe.yml")
	if err != nil {
		t.Fatal(err)
	}
	tg := c.Targets[0]
	if tg.GPUMetricsURL != "http://127.0.0.1:9400/metrics?token=s3cret" || tg.GPUSelector != `pod="vllm-0",namespace="llm"` {
		t.Errorf("target: %q %q", tg.GPUMetricsURL, tg.GPUSelector)
	}
	if r := c.Redacted(); strings.Contains(r, "s3cret") || !strings.Contains(r, "gpu_metrics_url") {
		t.Errorf("Redacted:\n%s", r)
	}
}
