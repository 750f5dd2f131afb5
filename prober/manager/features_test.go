package manager_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// TestDaemonProbeFeatures runs a daemon probe whose workload carries every
// request feature (a schema from a file beside the config) against the
// simulator with a LoRA adapter: the Records carry the features, every
// request succeeds (the structured output validates), and the TTFT
// histogram counts only the streamed requests while E2E counts all.
func TestDaemonProbeFeatures(t *testing.T) {
	sim := fastSim()
	sim.LoRAModules = "sql-lora=/adapters/sql"
	base, _ := simtest.Start(t, sim)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "order.json"), []byte(`{"type":"object","required":["id","qty"],`+
		`"properties":{"id":{"type":"string","minLength":4},"qty":{"type":"integer","minimum":1}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "llmprobe.yml")
	os.WriteFile(path, []byte(fmt.Sprintf(`
targets:
  - name: sim
    base_url: %s
    api: chat
    probes:
      - name: feat
        rate: 40
        max_concurrency: 16
        workload:
          input_tokens: {dist: fixed, value: 32}
          output_tokens: {dist: fixed, value: 24}
          request:
            temperature: 0.2
            stop: ["\n\n"]
            extra_body: {repetition_penalty: 1.05}
            features:
              - {kind: no_stream, share: 0.3}
              - {kind: logprobs, share: 0.5, top_logprobs: 3}
              - {kind: json_schema, share: 0.5, schema_file: order.json}
              - {kind: lora, share: 0.4, model: sql-lora}
`, base)), 0o600)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	col := newCollector()
	m := newManager(reg, col)
	if err := m.Apply(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	col.waitFor(t, 30*time.Second, "60 records", func(evs []event) bool { return len(evs) >= 60 })
	m.Stop()
	evs := col.snapshot()
	seen := map[string]int{}
	ok, streamed := 0, 0
	for _, e := range evs {
		r := e.Record
		if !r.OK() {
			if r.Error != "canceled" {
				t.Errorf("record %s failed: %s: %s", r.RequestID, r.Error, r.ErrorMessage)
			}
			continue
		}
		ok++
		if !r.NoStream {
			streamed++
		}
		for _, f := range r.Features {
			seen[f]++
		}
		if slices.Contains(r.Features, workload.FeatureLoRA) != (r.Model == "sql-lora") {
			t.Errorf("record %s: features %v model %s", r.RequestID, r.Features, r.Model)
		}
		if r.Logprobs != slices.Contains(r.Features, workload.FeatureLogprobs) {
			t.Errorf("record %s: features %v logprobs %v", r.RequestID, r.Features, r.Logprobs)
		}
	}
	for _, k := range workload.FeatureKinds {
		if seen[k] == 0 {
			t.Errorf("no record carried %s: %v", k, seen)
		}
	}
	lbl := map[string]string{"target": "sim", "probe": "feat"}
	if got := counter(t, reg, "llmprobe_time_to_first_token_seconds", lbl); int(got) != streamed {
		t.Errorf("TTFT histogram count %v, streamed successful records %d", got, streamed)
	}
	if got := counter(t, reg, "llmprobe_e2e_request_latency_seconds", lbl); int(got) != ok {
		t.Errorf("E2E histogram count %v, successful records %d", got, ok)
	}
}
