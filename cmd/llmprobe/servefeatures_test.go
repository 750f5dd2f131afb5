package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/prober/scrape"
)

// startSimulate runs `llmprobe simulate args...` on a free loopback port
// until the test ends (it is stopped and waited for) and returns its
// address once it answers GET /health.
func startSimulate(t *testing.T, args ...string) string {
	t.Helper()
	base, logs, stop := startCommand(t, "simulate", "/health", args...)
	t.Cleanup(func() {
		if code := stop(); code != 0 {
			t.Errorf("simulate exited %d; log:\n%s", code, logs.String())
		}
	})
	return strings.TrimPrefix(base, "http://")
}

// TestServeFeaturesTLSGateway is issue 11's "Done when" for the daemon: a
// probe whose requests carry response_format (a json_schema from a file
// beside the config), logprobs and a LoRA adapter's name runs against a TLS
// simulator (simulate --tls.generate) that requires a header, the value
// given through http_config.http_headers as a secret. Every request
// succeeds (llmprobe_requests_total by outcome), the simulator's own trace
// shows that it received the adapter and the features (the required header
// let them through its gateway), and the header's value is in no output
// surface of the daemon: /metrics, the landing page, /config, the log.
func TestServeFeaturesTLSGateway(t *testing.T) {
	const secret = "gw-key-daemonwl-5e1f0a"
	dir := t.TempDir()
	certs := filepath.Join(dir, "certs")
	simTrace := filepath.Join(dir, "sim-trace.jsonl")
	sim := startSimulate(t, "--tls.generate", certs, "--require-header", "X-Gateway-Key: "+secret,
		"--lora-modules", "sql-lora=/adapters/sql", "--trace-file", simTrace,
		"--step-base", "1ms", "--step-per-seq", "10us", "--step-per-prefill-token", "0s", "--log.level", "warn")
	writeFile(t, dir, "order.schema.json", `{"type": "object", "required": ["id", "qty"], `+
		`"properties": {"id": {"type": "string", "minLength": 4}, "qty": {"type": "integer", "minimum": 1}}}`)
	cfgPath := writeFile(t, dir, "llmprobe.yml", fmt.Sprintf(`targets:
  - name: gw
    base_url: https://%s
    api: chat
    http_config:
      tls_config: {ca_file: certs/ca.pem}
      http_headers:
        X-Gateway-Key: {secrets: [%s]}
    probes:
      - name: feat
        rate: 20
        workload:
          input_tokens: {dist: fixed, value: 24}
          output_tokens: {dist: fixed, value: 24}
          request:
            features:
              - {kind: json_schema, share: 0.5, schema_file: order.schema.json}
              - {kind: logprobs, share: 0.5, top_logprobs: 2}
              - {kind: lora, share: 0.5, model: sql-lora}
`, sim, secret))
	web, logs, stop := startServe(t, "--config.file", cfgPath, "--log.level", "debug")

	outcome := func(body, o string) float64 {
		t.Helper()
		snap, err := scrape.NewSnapshot(time.Now(), []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		n, _ := snap.Sum("llmprobe_requests_total", map[string]string{"target": "gw", "probe": "feat", "outcome": o})
		return n
	}
	testutil.EventuallyWithin(t, 30*time.Second, "30 successful requests", func() bool {
		_, body := get(t, web+"/metrics")
		return outcome(body, "success") >= 30
	})
	surfaces := map[string]string{}
	for _, path := range []string{"/metrics", "/", "/config", "/-/healthy", "/-/ready"} {
		code, body := get(t, web+path)
		if code != 200 {
			t.Errorf("GET %s: %d", path, code)
		}
		surfaces["GET "+path] = body
	}
	if code := stop(); code != 0 {
		t.Errorf("serve exited %d", code)
	}
	surfaces["log"] = logs.String()
	body := surfaces["GET /metrics"]
	for _, o := range []string{"http_4xx", "invalid_response", "connect", "http_5xx", "stream", "timeout"} {
		if n := outcome(body, o); n != 0 {
			t.Errorf("llmprobe_requests_total{outcome=%q} = %v, want 0; log:\n%s", o, n, surfaces["log"])
		}
	}
	if !strings.Contains(surfaces["GET /config"], "<secret>") {
		t.Errorf("/config does not show the header as <secret>:\n%s", surfaces["GET /config"])
	}
	for where, s := range surfaces {
		noSecret(t, where, s, secret)
	}

	// What the simulator received: only requests that passed its gateway's
	// header check reach its trace.
	f, err := os.Open(simTrace)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, models, features := 0, map[string]int{}, map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r simulator.TraceRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("simulator trace line %q: %v", sc.Text(), err)
		}
		if r.Status != 200 {
			continue // canceled at shutdown
		}
		n++
		models[r.Model]++
		for _, k := range r.Features {
			features[k]++
		}
	}
	if n < 30 || models["sql-lora"] == 0 || models["llmprobe-sim"] == 0 || features["logprobs"] == 0 || features["response_format"] == 0 {
		t.Errorf("the simulator answered %d requests: models %v, features %v", n, models, features)
	}
}
