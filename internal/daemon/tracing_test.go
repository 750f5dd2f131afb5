package daemon

import (
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	colmetric "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/prober/config"
)

// otlpReceiver is an OTLP/HTTP trace receiver (POST /v1/traces,
// protobuf): it keeps the names of the spans received and, for generation
// spans, the trace id of each request id.
type otlpReceiver struct {
	mu      sync.Mutex
	names   map[string]int
	traceOf map[string]string // llmprobe.request_id -> trace id
}

// tracedOptions starts an OTLP/HTTP collector (its receiver returned) and
// returns a daemon's options (see options) tracing every request to it.
func tracedOptions(t *testing.T) (*otlpReceiver, Options, string, *testutil.SyncBuffer) {
	t.Helper()
	rcv := &otlpReceiver{names: map[string]int{}, traceOf: map[string]string{}}
	collector := httptest.NewServer(rcv)
	t.Cleanup(collector.Close)
	o, url, logs := options(t)
	o.Tracing = Tracing{Endpoint: collector.URL, SampleRatio: 1}
	return rcv, o, url, logs
}

func (r *otlpReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, err := io.ReadAll(io.LimitReader(req.Body, 16<<20))
	var msg coltrace.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(b, &msg)
	}
	if req.URL.Path != "/v1/traces" || err != nil {
		http.Error(w, fmt.Sprintf("path %s: %v", req.URL.Path, err), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range msg.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				r.names[s.Name]++
				for _, a := range s.Attributes {
					if a.Key == "llmprobe.request_id" {
						r.traceOf[a.Value.GetStringValue()] = hex.EncodeToString(s.TraceId)
					}
				}
			}
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	_, _ = w.Write(out)
}

func (r *otlpReceiver) snapshot() (map[string]int, map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	names, traces := map[string]int{}, map[string]string{}
	for k, v := range r.names {
		names[k] = v
	}
	for k, v := range r.traceOf {
		traces[k] = v
	}
	return names, traces
}

// TestTracingJoinsSpansExemplarsAndServer runs the daemon with tracing on
// against the simulator and an OTLP/HTTP receiver: the receiver gets the
// discovery span and the generation spans; the trace id of a request's
// span is the one in its exemplar (OpenMetrics /metrics, beside its
// request_id) and the one of the traceparent the simulator received; a
// target at trace_sample_ratio 1e-6 has exemplars without one; a
// scheduled sweep with trace_sample_ratio: 1 writes every request's trace
// id to records.jsonl, and the collector has each of those traces.
func TestTracingJoinsSpansExemplarsAndServer(t *testing.T) {
	testutil.Slow(t)
	sc := simulator.DefaultConfig()
	sc.TraceFile = filepath.Join(t.TempDir(), "sim-trace.jsonl")
	sim, _ := simtest.Start(t, sc)
	rcv, o, url, logs := tracedOptions(t)
	yml := fmt.Sprintf(`targets:
  - name: sim
    base_url: %[1]s
    probes:
      - name: p
        rate: 20
    sweeps:
      - name: traced
        every: 1h
        rates: [4]
        num_prompts: 5
        input_len: 32
        output_len: 4
        max_send_lag: 250ms
        trace_sample_ratio: 1
  - name: quiet
    base_url: %[1]s
    trace_sample_ratio: 0.000001
    probes:
      - name: p
        rate: 20
`, sim)
	setConfig(t, &o, t.TempDir(), yml)
	stop := start(t, o)

	// An exemplar of the TTFT histogram names a request and its trace.
	ex := regexp.MustCompile(`llmprobe_time_to_first_token_seconds_bucket\{[^}]*\} \d+ # \{([^}]*)\}`)
	reqID := regexp.MustCompile(`request_id="([^"]+)"`)
	traceID := regexp.MustCompile(`trace_id="([0-9a-f]{32})"`)
	var id, trace, last string
	quiet := regexp.MustCompile(`llmprobe_time_to_first_token_seconds_bucket\{[^}]*target="quiet"[^}]*\} \d+ # \{([^}]*)\}`)
	var quietExemplars []string
	defer func() {
		if t.Failed() && id == "" {
			t.Logf("last TTFT lines:\n%s", regexp.MustCompile(`(?m)^llmprobe_time_to_first_token_seconds_bucket.*$`).FindAllString(last, 3))
		}
	}()
	testutil.Eventually(t, "a TTFT exemplar with a request id and a trace id", func() bool {
		req, _ := http.NewRequest(http.MethodGet, url+"/metrics", nil)
		req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		last = string(b)
		quietExemplars = nil
		for _, m := range quiet.FindAllStringSubmatch(last, -1) {
			quietExemplars = append(quietExemplars, m[1])
		}
		if len(quietExemplars) == 0 {
			return false
		}
		for _, m := range ex.FindAllStringSubmatch(string(b), -1) {
			r, tr := reqID.FindStringSubmatch(m[1]), traceID.FindStringSubmatch(m[1])
			if r != nil && tr != nil {
				id, trace = r[1], tr[1]
				return true
			}
		}
		return false
	})
	// The target traced at one in a million has exemplars without trace ids.
	for _, e := range quietExemplars {
		if strings.Contains(e, "trace_id") || !strings.Contains(e, "request_id") {
			t.Errorf("exemplar of the target at trace_sample_ratio 1e-6: {%s}", e)
		}
	}
	// The scheduled sweep's records carry their trace ids.
	sweepTraces := map[string]string{}
	testutil.EventuallyWithin(t, time.Minute, "the sweep's records.jsonl", func() bool {
		files, _ := filepath.Glob(filepath.Join(o.SweepsDir, "sim", "*", "records.jsonl"))
		if len(files) == 0 {
			return false
		}
		err := artifacts.ReadRecords(files[0], func(l artifacts.RecordLine, _ []byte) error {
			sweepTraces[l.RequestID] = l.TraceID
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return len(sweepTraces) > 0
	})
	// The daemon's shutdown flushes the spans still queued.
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	names, traces := rcv.snapshot()
	if traces[id] != trace {
		t.Errorf("collector has trace %q for request %s, its exemplar %q", traces[id], id, trace)
	}
	for id, tr := range sweepTraces {
		if len(tr) != 32 || traces[id] != tr {
			t.Errorf("sweep request %s: records.jsonl trace id %q, collector's %q", id, tr, traces[id])
		}
	}
	if names["GET /v1/models"] == 0 {
		t.Errorf("no discovery span; spans received: %v", names)
	}
	var sawTraceparent string
	b, err := os.ReadFile(sc.TraceFile)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		var tr simulator.TraceRecord
		if json.Unmarshal([]byte(line), &tr) == nil && tr.RequestID == id {
			sawTraceparent = tr.Traceparent
		}
	}
	if !strings.HasPrefix(sawTraceparent, "00-"+trace+"-") || !strings.HasSuffix(sawTraceparent, "-01") {
		t.Errorf("simulator saw traceparent %q for request %s, want trace %s, sampled", sawTraceparent, id, trace)
	}
	if strings.Contains(logs.String(), "level=error") {
		t.Errorf("errors logged:\n%s", logs.String())
	}
}

// tracingTenant and tracingToken are the secret header values of
// TestTracingBlockTLSAndHeaders: recognisable in any output.
const (
	tracingTenant = "tenant-canary-8d2e41"
	tracingToken  = "tok-canary-c07a9b55"
)

// TestTracingBlockTLSAndHeaders runs the daemon with the config file's
// tracing block (no flag): its spans reach an OTLP/HTTP collector over
// TLS, trusted through tls_config.ca_file only, with the block's headers
// (one inline, one from header_files) on every export; the header values are in no log line, nor on /config
// or /metrics; a reload that changes the block is applied without it, with
// a warning.
func TestTracingBlockTLSAndHeaders(t *testing.T) {
	sim, _ := simtest.Start(t, simulator.DefaultConfig())
	rcv := &otlpReceiver{names: map[string]int{}, traceOf: map[string]string{}}
	var withHeaders, without atomic.Int64
	collector := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Scope-OrgID") == tracingTenant && r.Header.Get("Authorization") == "Bearer "+tracingToken {
			withHeaders.Add(1)
		} else {
			without.Add(1)
		}
		rcv.ServeHTTP(w, r)
	}))
	collector.StartTLS()
	t.Cleanup(collector.Close)
	dir := t.TempDir()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: collector.Certificate().Raw})
	writeFile(t, filepath.Join(dir, "collector-ca.pem"), string(ca))
	writeFile(t, filepath.Join(dir, "collector-token"), "Bearer "+tracingToken+"\n")

	o, url, logs := options(t)
	yml := func(timeout string) string {
		return fmt.Sprintf(`targets:
  - name: sim
    base_url: %s
    probes:
      - name: p
        rate: 20
tracing:
  endpoint: %s
  sample_ratio: 1
  timeout: %s
  headers:
    X-Scope-OrgID: %s
  header_files:
    Authorization: collector-token
  tls_config:
    ca_file: collector-ca.pem
`, sim, collector.URL, timeout, tracingTenant)
	}
	setConfig(t, &o, dir, yml("5s"))
	stop := start(t, o)
	testutil.Eventually(t, "generation spans at the TLS collector, with the headers", func() bool {
		_, traces := rcv.snapshot()
		return withHeaders.Load() > 0 && len(traces) > 0
	})
	get(t, url+"/metrics", "llmprobe_tracing_spans_exported_total", logs)
	get(t, url+"/metrics", "llmprobe_tracing_spans_ended_total", logs)
	page := get(t, url+"/config", "X-Scope-OrgID: <secret>", logs)
	metrics := get(t, url+"/metrics", "llmprobe_tracing_spans_failed_total 0", logs)

	// A reload that changes the block: applied, without the block.
	writeFile(t, o.ConfigFile, yml("7s"))
	reload(t, url, "reload", http.StatusOK)
	// An invalid block fails the reload: the old config stays.
	writeFile(t, o.ConfigFile, strings.Replace(yml("7s"), "sample_ratio: 1", "sample_ratio: 2", 1))
	reload(t, url, "reload of an invalid tracing block", http.StatusInternalServerError)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	for _, s := range []string{page, metrics, out} {
		if strings.Contains(s, "canary") {
			t.Errorf("a tracing header value leaked:\n%s", s)
		}
	}
	for _, want := range []string{`msg="tracing on"`, `headers=Authorization,X-Scope-OrgID`, `tls_config=true`,
		`msg="the tracing block changed: it is read at start only`, `tracing.sample_ratio: must be in [1e-06, 1]`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
	if without.Load() != 0 {
		t.Errorf("%d exports without the headers", without.Load())
	}
}

// TestTracingPrecedence: a flag overrides the file's key, the file fills
// in what the flags leave unset, and the defaults what neither sets.
func TestTracingPrecedence(t *testing.T) {
	file := config.TracingConfig{Endpoint: "https://file:4318", Protocol: "grpc", SampleRatio: 0.5, Insecure: true}
	got := Tracing{Endpoint: "http://flag:4318", File: file}.Resolved()
	if got.Endpoint != "http://flag:4318" || got.Protocol != "grpc" || got.SampleRatio != 0.5 || !got.Insecure || !got.On() {
		t.Errorf("flag endpoint over the file: %+v", got)
	}
	got = Tracing{Protocol: "http/protobuf", SampleRatio: 0.1, File: file}.Resolved()
	if got.Endpoint != "https://file:4318" || got.Protocol != "http/protobuf" || got.SampleRatio != 0.1 {
		t.Errorf("flag protocol and ratio over the file: %+v", got)
	}
	got = Tracing{}.Resolved()
	if got.On() || got.Protocol != "http/protobuf" || got.SampleRatio != 1 {
		t.Errorf("defaults: %+v", got)
	}
	if !(Tracing{Enabled: true}).On() || !(Tracing{File: config.TracingConfig{Endpoint: "c:4317"}}).On() {
		t.Error("--tracing.enabled or the file's endpoint does not turn tracing on")
	}
}

// TestTracingMetricsOnItsOwn runs the daemon with --tracing.metrics and
// tracing off, the collector from OTEL_EXPORTER_OTLP_METRICS_ENDPOINT:
// the shutdown's export carries the GenAI client histograms of the
// probe's requests (as many durations as llmprobe_requests_total counted
// at least), no span is sent, and the exports are counted on /metrics.
func TestTracingMetricsOnItsOwn(t *testing.T) {
	sim, _ := simtest.Start(t, simtest.Fast())
	var mu sync.Mutex
	var paths []string
	durations := map[string]uint64{} // gen_ai.provider.name -> count
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, err := io.ReadAll(io.LimitReader(req.Body, 16<<20))
		var msg colmetric.ExportMetricsServiceRequest
		if err == nil {
			err = proto.Unmarshal(b, &msg)
		}
		mu.Lock()
		defer mu.Unlock()
		paths = append(paths, req.URL.Path)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		clear(durations) // cumulative: the last export has every request
		for _, rm := range msg.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					if m.Name != "gen_ai.client.inference.duration" {
						continue
					}
					for _, dp := range m.GetHistogram().GetDataPoints() {
						for _, a := range dp.Attributes {
							if a.Key == "gen_ai.provider.name" {
								durations[a.Value.GetStringValue()] += dp.Count
							}
						}
					}
				}
			}
		}
	}))
	t.Cleanup(collector.Close)
	t.Setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", collector.URL+"/v1/metrics")

	o, url, logs := options(t)
	o.Tracing = Tracing{Metrics: true}
	yml := fmt.Sprintf("targets:\n  - name: sim\n    base_url: %s\n    probes:\n      - name: p\n        rate: 20\n", sim)
	setConfig(t, &o, t.TempDir(), yml)
	stop := start(t, o)
	requests := regexp.MustCompile(`(?m)^llmprobe_requests_total\{[^}]*outcome="success"[^}]*\} (\d+)`)
	var seen int
	testutil.Eventually(t, "three finished requests and the exports counter", func() bool {
		resp, err := http.Get(url + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		m := requests.FindStringSubmatch(string(b))
		if m == nil || !strings.Contains(string(b), "llmprobe_tracing_metric_exports_total") {
			return false
		}
		_, _ = fmt.Sscan(m[1], &seen)
		return seen >= 3
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range paths {
		if p != "/v1/metrics" {
			t.Errorf("collector got %s; tracing is off", p)
		}
	}
	var total uint64
	for _, n := range durations {
		total += n
	}
	if total < uint64(seen) {
		t.Errorf("exported %d durations (%v), /metrics counted %d ok requests before", total, durations, seen)
	}
	if !strings.Contains(logs.String(), "OTLP metrics on") || strings.Contains(logs.String(), "level=error") {
		t.Errorf("log:\n%s", logs.String())
	}
}
