package tracing_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/prober/tracing"
)

// TestProviderExportsAndFlushes: spans of every ratio go through one
// exporter to an OTLP/HTTP collector (the endpoint without a path gets
// /v1/traces); Shutdown flushes those still queued.
func TestProviderExportsAndFlushes(t *testing.T) {
	var spans, badPath atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" {
			badPath.Add(1)
		}
		b, _ := io.ReadAll(r.Body)
		var msg coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &msg); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rs := range msg.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				spans.Add(int64(len(ss.Spans)))
			}
		}
		out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		_, _ = w.Write(out)
	}))
	defer srv.Close()
	p, err := tracing.New(context.Background(), tracing.Options{Endpoint: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	for _, ratio := range []float64{1, 1, 0.999999999} {
		_, s := p.Tracer(ratio).Start(context.Background(), "x")
		s.End()
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A ratio just under 1 may drop a span (its trace id decides).
	if n := spans.Load(); n < 2 || n > 3 || uint64(n) != p.Exported() || p.Ended() != p.Exported() || badPath.Load() != 0 {
		t.Errorf("collector got %d spans (exported %d, ended %d, %d on a wrong path), want 2 or 3, all ended exported",
			n, p.Exported(), p.Ended(), badPath.Load())
	}
}

// endSpans builds a provider with o and ends n spans on its tracer.
func endSpans(t *testing.T, o tracing.Options, n int) *tracing.Provider {
	t.Helper()
	p, err := tracing.New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	tr := p.Tracer(1)
	for range n {
		_, s := tr.Start(context.Background(), "x")
		s.End()
	}
	return p
}

// TestHungCollectorNeverBlocks: with a collector that never answers,
// ending many more spans than the queue holds returns (the queue drops
// what does not fit; a blocking End would hang the test), and Shutdown
// ends with its context.
func TestHungCollectorNeverBlocks(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	defer srv.Close()
	defer close(release)
	p := endSpans(t, tracing.Options{Endpoint: srv.URL, MaxQueueSize: 64}, 10000)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := p.Shutdown(ctx); err == nil {
		t.Error("shutdown flushed to a collector that never answers")
	}
	// At most the queue and one batch were in flight: the rest was dropped.
	if lost := p.Ended() - p.Exported() - p.Failed(); p.Ended() != 10000 || lost < 10000-64-512 {
		t.Errorf("ended %d, exported %d, failed %d: want 10000 ended, at least %d neither exported nor failed",
			p.Ended(), p.Exported(), p.Failed(), 10000-64-512)
	}
}

// TestUnreachableCollectorCounted: with the collector's port refusing,
// the spans of the failed exports are counted and none as exported.
func TestUnreachableCollectorCounted(t *testing.T) {
	p := endSpans(t, tracing.Options{Endpoint: "http://" + testutil.RefusedAddr(t), MaxQueueSize: 64}, 100)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = p.ForceFlush(ctx)
	_ = p.Shutdown(ctx)
	if p.Exported() != 0 || p.Failed() == 0 {
		t.Errorf("exported %d, failed %d: want 0 and some", p.Exported(), p.Failed())
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	for _, o := range []tracing.Options{{Protocol: "udp"}, {MaxQueueSize: -1}, {MaxQueueSize: 1 << 30}} {
		if _, err := tracing.New(context.Background(), o); err == nil || !strings.Contains(err.Error(), "tracing") {
			t.Errorf("%+v: err %v, want a tracing error", o, err)
		}
	}
}
