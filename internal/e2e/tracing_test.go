//go:build e2e && unix

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/testutil"
)

// jaegerConfig is Jaeger v2's configuration (an OpenTelemetry Collector
// configuration) for the test: OTLP receivers, in-memory storage and the
// query API, every port on loopback, no telemetry port of its own.
const jaegerConfig = `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
extensions:
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: %[1]s
    grpc:
      endpoint: %[2]s
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 10000
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %[3]s
      http:
        endpoint: %[4]s
processors:
  batch:
    timeout: 200ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`

// TestTracingWithJaeger runs llmprobe serve with tracing on against the
// simulator and a real trace backend, Jaeger all-in-one (v1.76.0, built by
// .ci/e2e.sh from .ci/tools/jaeger into $LLMPROBE_E2E_JAEGER), with
// in-memory storage on loopback ports. A TTFT exemplar names a request and
// its trace id; Jaeger's query API returns that trace with the request's
// span (its llmprobe.request_id and GenAI attributes); and the simulator
// received the same trace id in its traceparent (its --trace-file).
func TestTracingWithJaeger(t *testing.T) {
	jaegerBin := os.Getenv("LLMPROBE_E2E_JAEGER")
	if jaegerBin == "" {
		t.Fatal("LLMPROBE_E2E_JAEGER is not set: run .ci/e2e.sh (it builds Jaeger from .ci/tools/jaeger)")
	}
	_, dir, bin := setUp(t, "")

	queryHTTP, queryGRPC, otlpGRPC, otlpHTTP := testutil.FreeAddr(t), testutil.FreeAddr(t), testutil.FreeAddr(t), testutil.FreeAddr(t)
	cfg := filepath.Join(dir, "jaeger.yml")
	writeFile(t, cfg, fmt.Sprintf(jaegerConfig, queryHTTP, queryGRPC, otlpGRPC, otlpHTTP))
	jaeger := startUp(t, dir, "jaeger", jaegerBin, "http://"+queryHTTP+"/api/services", "--config", cfg)

	simTrace := filepath.Join(dir, "sim-trace.jsonl")
	simAddr, serveAddr := startSim(t, dir, "simulate", bin, "--trace-file", simTrace), testutil.FreeAddr(t)
	cfgPath := filepath.Join(dir, "llmprobe.yml")
	writeFile(t, cfgPath, fmt.Sprintf("targets:\n  - name: sim\n    base_url: http://%s\n    probes:\n      - name: p\n        rate: 4\n", simAddr))
	serve := startUp(t, dir, "serve", bin, "http://"+serveAddr+"/-/ready", "serve", "--config.file", cfgPath,
		"--web.listen-address", serveAddr, "--sweeps.dir", filepath.Join(dir, "sweeps"), "--tracing.endpoint", "http://"+otlpHTTP)

	// 1. An exemplar with a request id and its trace id.
	ex := regexp.MustCompile(`llmprobe_time_to_first_token_seconds_bucket\{[^}]*\} \d+ # \{([^}]*)\}`)
	var id, trace string
	deadline := time.Now().Add(startTimeout)
	for id == "" {
		if time.Now().After(deadline) {
			t.Fatalf("no TTFT exemplar with request_id and trace_id after %s%s", startTimeout, logs(serve, jaeger))
		}
		req, _ := http.NewRequest(http.MethodGet, "http://"+serveAddr+"/metrics", nil)
		req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			for _, m := range ex.FindAllStringSubmatch(string(b), -1) {
				r := regexp.MustCompile(`request_id="([^"]+)"`).FindStringSubmatch(m[1])
				tr := regexp.MustCompile(`trace_id="([0-9a-f]{32})"`).FindStringSubmatch(m[1])
				if r != nil && tr != nil {
					id, trace = r[1], tr[1]
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("request %s, trace %s", id, trace)

	// 2. Jaeger returns the trace by its id, with the request's span.
	type span struct {
		OperationName string `json:"operationName"`
		Tags          []struct {
			Key   string `json:"key"`
			Value any    `json:"value"`
		} `json:"tags"`
	}
	var found *span
	deadline = time.Now().Add(startTimeout)
	for found == nil {
		if time.Now().After(deadline) {
			t.Fatalf("Jaeger has no span of request %s in trace %s after %s%s", id, trace, startTimeout, logs(serve, jaeger))
		}
		var body struct {
			Data []struct {
				TraceID string `json:"traceID"`
				Spans   []span `json:"spans"`
			} `json:"data"`
		}
		if resp, err := http.Get("http://" + queryHTTP + "/api/traces/" + trace); err == nil {
			_ = json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&body)
			resp.Body.Close()
		}
		for _, d := range body.Data {
			for i, s := range d.Spans {
				for _, tag := range s.Tags {
					if tag.Key == "llmprobe.request_id" && tag.Value == id {
						found = &d.Spans[i]
					}
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	tags := map[string]any{}
	for _, tag := range found.Tags {
		tags[tag.Key] = tag.Value
	}
	if !strings.HasPrefix(found.OperationName, "text_completion") || tags["gen_ai.operation.name"] != "text_completion" ||
		tags["gen_ai.usage.output_tokens"] == nil || tags["llmprobe.ttft_seconds"] == nil {
		t.Errorf("span %q tags %v: want a text_completion span with usage and TTFT", found.OperationName, tags)
	}

	// 3. The simulator received the same trace id in its traceparent.
	var tp string
	testutil.Eventually(t, "the request in the simulator's trace file", func() bool {
		b, _ := os.ReadFile(simTrace)
		for line := range strings.Lines(string(b)) {
			var tr simulator.TraceRecord
			if json.Unmarshal([]byte(line), &tr) == nil && tr.RequestID == id {
				tp = tr.Traceparent
				return true
			}
		}
		return false
	})
	if !strings.HasPrefix(tp, "00-"+trace+"-") {
		t.Errorf("simulator saw traceparent %q for request %s, want trace %s", tp, id, trace)
	}
}
