package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	ltestutil "github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/prober/compare"
)

// spanSink is an OTLP/HTTP trace receiver keeping the trace id of each
// generation span's llmprobe.request_id.
type spanSink struct {
	mu      sync.Mutex
	traceOf map[string]string
}

func (s *spanSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	var msg coltrace.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(b, &msg)
	}
	if err != nil || r.URL.Path != "/v1/traces" {
		http.Error(w, "bad export", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	for _, rs := range msg.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				for _, a := range sp.Attributes {
					if a.Key == "llmprobe.request_id" {
						s.traceOf[a.Value.GetStringValue()] = hex.EncodeToString(sp.TraceId)
					}
				}
			}
		}
	}
	s.mu.Unlock()
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	_, _ = w.Write(out)
}

// sweepTraceArgs are the flags of a short sweep against url into out.
func sweepTraceArgs(url, out string, extra ...string) []string {
	return append([]string{"sweep", "--target", url, "--rates", "20", "--num-prompts", "8", "--warmups", "0",
		"--input-len", "16", "--output-len", "4", "--out", out, "--no-progress", "--log.level", "info",
		"--max-send-lag", "10s", "--max-sched-latency", "10s"}, extra...)
}

// TestSweepTracing: a sweep with --tracing.endpoint and ratio 1 sends a
// span per request to the collector before it exits; the trace id of each
// request's span is the one of its records.jsonl line.
func TestSweepTracing(t *testing.T) {
	url, _ := simtest.Start(t, simtest.Fast())
	sink := &spanSink{traceOf: map[string]string{}}
	collector := httptest.NewServer(sink)
	defer collector.Close()
	out := t.TempDir()
	_, stderr := runOK(t, sweepTraceArgs(url, out, "--tracing.endpoint", collector.URL, "--tracing.sample-ratio", "1")...)
	onlyRunDir(t, out, "*", artifacts.RecordsFile)
	// The collector has them now: the command flushed before it exited.
	checkSpans(t, sink, out, 8)
	if strings.Contains(stderr, "spans lost") {
		t.Errorf("spans lost:\n%s", stderr)
	}
}

// checkSpans requires want records or more in the records.jsonl files
// under root, each with a trace id of 32 hex digits that the collector
// received for its request.
func checkSpans(t *testing.T, sink *spanSink, root string, want int) {
	t.Helper()
	records := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Name() != artifacts.RecordsFile {
			return err
		}
		return artifacts.ReadRecords(p, func(l artifacts.RecordLine, _ []byte) error {
			records[l.RequestID] = l.TraceID
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if len(records) < want {
		t.Errorf("%d records, want %d", len(records), want)
	}
	for id, tr := range records {
		if len(tr) != 32 || sink.traceOf[id] != tr {
			t.Errorf("request %s: records.jsonl trace id %q, the collector's %q", id, tr, sink.traceOf[id])
		}
	}
}

// TestSweepTracingCollectorDown: with the collector's port refusing, the
// sweep completes (exit 0) within the flush bound, with a warning.
func TestSweepTracingCollectorDown(t *testing.T) {
	url, _ := simtest.Start(t, simtest.Fast())
	out := t.TempDir()
	start := time.Now()
	_, stderr := runOK(t, sweepTraceArgs(url, out, "--tracing.endpoint", "http://"+ltestutil.RefusedAddr(t),
		"--tracing.sample-ratio", "1")...)
	if !strings.Contains(stderr, `msg="tracing: spans lost"`) {
		t.Errorf("no warning of the spans lost:\n%s", stderr)
	}
	if files, _ := filepath.Glob(filepath.Join(out, "*", "records.jsonl")); len(files) != 1 {
		t.Errorf("records files %v", files)
	}
	t.Logf("sweep with the collector down: %v", time.Since(start))
}

// TestSweepTracingBadProtocol: a bad --tracing.protocol is one line, exit 2.
func TestSweepTracingBadProtocol(t *testing.T) {
	wantUsageError(t, []string{"sweep", "--tracing.endpoint", "http://127.0.0.1:1", "--tracing.protocol", "thrift"},
		"llmprobe: error: --tracing.protocol must be http/protobuf or grpc, got \"thrift\"\n")
}

// TestCompareTracing: compare takes the same --tracing.* flags: every
// round's requests are traced (ratio 1) and their spans reach the
// collector before it exits, each with its records.jsonl trace id.
func TestCompareTracing(t *testing.T) {
	base, cand := compareSim(t, nil), compareSim(t, nil)
	sink := &spanSink{traceOf: map[string]string{}}
	collector := httptest.NewServer(sink)
	defer collector.Close()
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	args := compareArgs(out, "--baseline", base, "--candidate", cand, "--num-prompts", "10", "--warmups", "0",
		"--tracing.endpoint", collector.URL, "--tracing.sample-ratio", "1")
	code := run(context.Background(), args, &stdout, &stderr)
	if code == compare.ExitBadInput {
		t.Fatalf("exit code %d; stderr:\n%s", code, stderr.String())
	}
	checkSpans(t, sink, out, 40) // 4 rounds of 10
}
