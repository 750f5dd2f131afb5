package tracing

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"

	"github.com/llmprobe/llmprobe/prober"
)

// grpcMetrics is an OTLP/gRPC metrics service: it counts the duration
// points' observations of the exports that carry the tenant header.
type grpcMetrics struct {
	colmetricpb.UnimplementedMetricsServiceServer
	withHeader, without atomic.Uint64
}

func (g *grpcMetrics) Export(ctx context.Context, req *colmetricpb.ExportMetricsServiceRequest) (*colmetricpb.ExportMetricsServiceResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	var n uint64
	for _, rm := range req.ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if m.Name == MetricDuration {
					for _, dp := range m.GetHistogram().GetDataPoints() {
						n += dp.Count
					}
				}
			}
		}
	}
	if v := md.Get("x-scope-orgid"); len(v) == 1 && v[0] == "tenant-7" {
		g.withHeader.Store(n)
	} else {
		g.without.Store(n)
	}
	return &colmetricpb.ExportMetricsServiceResponse{}, nil
}

// TestMetricsGRPCAndNoRedirect: the gRPC exporter reaches a TLS collector
// trusted through Options.TLS, with Options.Headers; the HTTP exporter
// follows no redirect (the redirect's target gets nothing, the export
// fails and is counted), as the span exporter.
func TestMetricsGRPCAndNoRedirect(t *testing.T) {
	hs := httptest.NewTLSServer(http.NotFoundHandler())
	defer hs.Close()
	pool := x509.NewCertPool()
	pool.AddCert(hs.Certificate())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	col := &grpcMetrics{}
	gs := grpc.NewServer(grpc.Creds(credentials.NewServerTLSFromCert(&hs.TLS.Certificates[0])))
	colmetricpb.RegisterMetricsServiceServer(gs, col)
	go func() { _ = gs.Serve(lis) }()
	defer gs.Stop()

	m, err := NewMetrics(context.Background(), Options{Endpoint: "https://" + lis.Addr().String(), Protocol: ProtocolGRPC,
		TLS: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, Headers: map[string]string{"X-Scope-OrgID": "tenant-7"},
		Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c := m.Client(OperationChat, nil, nil)
	for range 3 {
		c.Record(context.Background(), "", &prober.Record{E2E: time.Second})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if col.withHeader.Load() != 3 || col.without.Load() != 0 || m.Exports() == 0 || m.FailedExports() != 0 {
		t.Errorf("gRPC: %d durations with the header, %d without; exports %d, failed %d: want 3, 0, >0, 0",
			col.withHeader.Load(), col.without.Load(), m.Exports(), m.FailedExports())
	}

	var stolen atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { stolen.Add(1) }))
	defer other.Close()
	redir := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/steal", http.StatusTemporaryRedirect)
	}))
	defer redir.Close()
	m, err = NewMetrics(context.Background(), Options{Endpoint: redir.URL, Timeout: 5 * time.Second,
		Headers: map[string]string{"X-Scope-OrgID": "tenant-7"}})
	if err != nil {
		t.Fatal(err)
	}
	m.Client(OperationChat, nil, nil).Record(context.Background(), "", &prober.Record{E2E: time.Second})
	_ = m.Shutdown(ctx)
	if stolen.Load() != 0 || m.Exports() != 0 || m.FailedExports() != 1 {
		t.Errorf("redirect: target got %d exports; exports %d, failed %d: want 0, 0, 1", stolen.Load(), m.Exports(), m.FailedExports())
	}
}

// TestNewMetricsBadProtocol: an unknown protocol is refused, named.
func TestNewMetricsBadProtocol(t *testing.T) {
	if _, err := NewMetrics(context.Background(), Options{Protocol: "udp"}); err == nil || !strings.Contains(err.Error(), `"udp"`) {
		t.Errorf("error %v, want one naming \"udp\"", err)
	}
}
