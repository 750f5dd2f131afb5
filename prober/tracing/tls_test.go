package tracing_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/llmprobe/llmprobe/prober/tracing"
)

// tenantHeader and tenant are the header every export must carry.
const (
	tenantHeader = "X-Scope-OrgID"
	tenant       = "tenant-canary-5e1f"
)

// headerCounter counts the spans received with and without the tenant
// header.
type headerCounter struct {
	mu            sync.Mutex
	with, without int
}

func (c *headerCounter) add(n int, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ok {
		c.with += n
	} else {
		c.without += n
	}
}

func (c *headerCounter) get() (int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.with, c.without
}

func spanCount(m *coltrace.ExportTraceServiceRequest) int {
	n := 0
	for _, rs := range m.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			n += len(ss.Spans)
		}
	}
	return n
}

// grpcCollector is an OTLP/gRPC trace service counting into a
// headerCounter.
type grpcCollector struct {
	coltrace.UnimplementedTraceServiceServer
	c *headerCounter
}

func (g *grpcCollector) Export(ctx context.Context, req *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	v := md.Get(tenantHeader)
	g.c.add(spanCount(req), len(v) == 1 && v[0] == tenant)
	return &coltrace.ExportTraceServiceResponse{}, nil
}

// TestTLSAndHeaders: both exporters reach a TLS collector whose
// certificate only Options.TLS trusts, with Options.Headers on every
// export; without Options.TLS the export fails (the certificate is not
// trusted) and is counted.
func TestTLSAndHeaders(t *testing.T) {
	var httpSpans headerCounter
	hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var msg coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &msg); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		httpSpans.add(spanCount(&msg), r.Header.Get(tenantHeader) == tenant)
		out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		_, _ = w.Write(out)
	}))
	hs.StartTLS()
	defer hs.Close()
	pool := x509.NewCertPool()
	pool.AddCert(hs.Certificate())
	trust := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}

	var grpcSpans headerCounter
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(grpc.Creds(credentials.NewServerTLSFromCert(&hs.TLS.Certificates[0])))
	coltrace.RegisterTraceServiceServer(gs, &grpcCollector{c: &grpcSpans})
	go func() { _ = gs.Serve(lis) }()
	defer gs.Stop()

	for _, tc := range []struct {
		name     string
		o        tracing.Options
		received *headerCounter
	}{
		{"http", tracing.Options{Endpoint: hs.URL}, &httpSpans},
		{"grpc", tracing.Options{Endpoint: "https://" + lis.Addr().String(), Protocol: tracing.ProtocolGRPC}, &grpcSpans},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			o.TLS = trust
			p := sendThree(t, o)
			with, without := tc.received.get()
			if p.Exported() != 3 || p.Failed() != 0 || with != 3 || without != 0 {
				t.Errorf("exported %d, failed %d; collector got %d spans with the header, %d without: want 3, 0, 3, 0",
					p.Exported(), p.Failed(), with, without)
			}
			untrusted := tc.o               // without Options.TLS: the system's roots do not trust the collector
			untrusted.Timeout = time.Second // gRPC retries until it
			p = sendThree(t, untrusted)
			if with2, without2 := tc.received.get(); p.Exported() != 0 || p.Failed() != 3 || with2 != with || without2 != without {
				t.Errorf("untrusted collector: exported %d, failed %d, collector got %d more: want 0, 3, 0",
					p.Exported(), p.Failed(), with2+without2-with-without)
			}
		})
	}
}

// sendThree exports three spans with o and the tenant header (Timeout 5 s
// unless set) and shuts the provider down (within 10 s).
func sendThree(t *testing.T, o tracing.Options) *tracing.Provider {
	t.Helper()
	o.Headers = map[string]string{tenantHeader: tenant}
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Second
	}
	p := endSpans(t, o, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = p.Shutdown(ctx)
	return p
}

// TestExportNoRedirect (issue 34, N8): a collector answering every export
// with a redirect to another port: that port never gets an export, nor the
// secret header; each export fails, counted.
func TestExportNoRedirect(t *testing.T) {
	var stolen, secret sync.Map
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stolen.Store(r.URL.Path, true)
		if r.Header.Get(tenantHeader) != "" {
			secret.Store(r.URL.Path, true)
		}
	}))
	defer other.Close()
	for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		col := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+"/steal", code)
		}))
		p := sendThree(t, tracing.Options{Endpoint: col.URL})
		col.Close()
		if p.Exported() != 0 || p.Failed() != 3 {
			t.Errorf("%d: exported %d, failed %d, want 0, 3", code, p.Exported(), p.Failed())
		}
	}
	n := 0
	stolen.Range(func(any, any) bool { n++; return true })
	secret.Range(func(any, any) bool { n += 100; return true })
	if n != 0 {
		t.Errorf("the redirect's target got exports (%d; >= 100: with the secret header)", n)
	}
}

// TestEnvCertificate: with no Options.TLS, OTEL_EXPORTER_OTLP_CERTIFICATE
// is read (through the bounded reader: a FIFO is refused, not waited on)
// into the exporter's client, which llmprobe builds.
func TestEnvCertificate(t *testing.T) {
	var got headerCounter
	hs := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var msg coltrace.ExportTraceServiceRequest
		if proto.Unmarshal(b, &msg) == nil {
			got.add(spanCount(&msg), true)
		}
		out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		_, _ = w.Write(out)
	}))
	defer hs.Close()
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hs.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_CERTIFICATE", ca)
	p, err := tracing.New(context.Background(), tracing.Options{Endpoint: hs.URL, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, s := p.Tracer(1).Start(context.Background(), "x")
	s.End()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = p.Shutdown(ctx)
	if with, _ := got.get(); p.Exported() != 1 || with != 1 {
		t.Errorf("exported %d, collector got %d: want 1, 1", p.Exported(), with)
	}
	fifo := filepath.Join(dir, "fifo.pem")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs")
	}
	t.Setenv("OTEL_EXPORTER_OTLP_CERTIFICATE", fifo)
	if _, err := tracing.New(context.Background(), tracing.Options{Endpoint: hs.URL}); err == nil ||
		err.Error() != "OTEL_EXPORTER_OTLP_CERTIFICATE: "+fifo+": not a regular file (a FIFO)" {
		t.Errorf("a FIFO: %v", err)
	}
}
