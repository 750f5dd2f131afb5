package config

import (
	"strings"
	"testing"
)

// TestTargetGPUSource: a target's gpu_metrics_url and gpu_selector reach
// its scheduled sweeps, and the URL's secrets stay out of Redacted.
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
	sc, err := tg.Sweeps[0].SweepConfig(tg)
	if err != nil {
		t.Fatal(err)
	}
	if sc.GPUMetricsURL != "http://127.0.0.1:9400/metrics?token=s3cret" || sc.GPUSelector != `pod="vllm-0",namespace="llm"` {
		t.Errorf("sweep config: %q %q", sc.GPUMetricsURL, sc.GPUSelector)
	}
	if r := c.Redacted(); strings.Contains(r, "s3cret") || !strings.Contains(r, "gpu_metrics_url") {
		t.Errorf("Redacted:\n%s", r)
	}
}
