package manager_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
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
	reg, evs := runFor(t, loadIn(t, dir, fmt.Sprintf(`
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
              - {kind: tools, share: 0.3, tools: [{name: get_weather, parameters: {type: object, required: [city], properties: {city: {type: string}}}}]}
              - {kind: images, share: 0.4, count: 2, width: 56, height: 56}
`, base)), 60)
	seen := map[string]int{}
	good := succeeded(t, evs)
	ok, streamed := len(good), 0
	for _, r := range good {
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
		if images := slices.Contains(r.Features, workload.FeatureImages); images != (r.Images == 2 && r.ImageBytes > 0) || !images && r.Images != 0 {
			t.Errorf("record %s: features %v images %d bytes %d", r.RequestID, r.Features, r.Images, r.ImageBytes)
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

// TestDaemonProbeTools runs a daemon probe whose every request offers a
// tool against the simulator, which breaks the JSON of half of the calls
// (--fault.broken-tool-call 0.5): a sound call is a success with its time to
// the first tool-call delta, one call and finish_reason tool_calls; a broken
// one is invalid_response naming why.
func TestDaemonProbeTools(t *testing.T) {
	sim := fastSim()
	sim.Faults.BrokenToolCall = 0.5
	base, _ := simtest.Start(t, sim)
	_, evs := runFor(t, oneProbe(t, "sim", base, "chat", "tools", 32, 24,
		`{kind: tools, share: 1, tool_choice: required, tools: [{name: get_weather, description: the weather, parameters: {type: object, required: [city], properties: {city: {type: string, minLength: 2}}}}]}`), 30)
	good, broken := 0, 0
	for _, e := range evs {
		r := e.Record
		switch {
		case r.OK():
			good++
			if r.FirstToolCall <= 0 || r.ToolCalls != 1 || r.FinishReason != "tool_calls" || !slices.Equal(r.Features, []string{workload.FeatureTools}) {
				t.Errorf("record %s: first tool call %v, calls %d, finish %q, features %v", r.RequestID, r.FirstToolCall, r.ToolCalls, r.FinishReason, r.Features)
			}
		case r.Error == "invalid_response":
			broken++
			if r.FirstToolCall <= 0 || r.ErrorMessage == "" || !strings.Contains(r.ErrorMessage, "tool call 0 (get_weather): arguments are not JSON") {
				t.Errorf("record %s: first tool call %v, message %q", r.RequestID, r.FirstToolCall, r.ErrorMessage)
			}
		default:
			failedUnlessCanceled(t, r)
		}
	}
	if good == 0 || broken == 0 {
		t.Errorf("%d sound and %d broken tool calls, want both", good, broken)
	}
}
