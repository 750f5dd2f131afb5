package daemon

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	toolkit "github.com/prometheus/exporter-toolkit/web"

	"github.com/llmprobe/llmprobe/internal/testutil"
)

// TestListenLimitsConnections: with a limit of one connection, a second
// client is not served while the first holds the connection, and is
// served once it closes (issue 22 D11: 10,000 connections with unread
// GET /metrics took the daemon to 1.5 GB; the limit keeps the excess in
// the kernel's accept queue).
func TestListenLimitsConnections(t *testing.T) {
	addr := testutil.FreeAddr(t)
	accepted := make(chan struct{}, 8)
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				accepted <- struct{}{}
			}
		},
	}
	addrs, systemd, cfg := []string{addr}, false, ""
	flags := &toolkit.FlagConfig{WebListenAddresses: &addrs, WebSystemdSocket: &systemd, WebConfigFile: &cfg}
	errc := make(chan error, 1)
	go func() { errc <- listenAndServe(srv, flags, 1, slog.New(slog.DiscardHandler)) }()
	t.Cleanup(func() {
		_ = srv.Shutdown(context.Background())
		if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
	})
	var held net.Conn
	testutil.Eventually(t, "the server listening", func() bool {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return false
		}
		held = c
		return true
	})
	<-accepted // the one connection the listener takes
	got := make(chan int, 1)
	go func() {
		c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := c.Get("http://" + addr + "/")
		if err != nil {
			got <- 0
			return
		}
		resp.Body.Close()
		got <- resp.StatusCode
	}()
	// A negative check needs a bound: on a busy machine the second request
	// is only slower, so this cannot fail spuriously.
	select {
	case code := <-got:
		t.Fatalf("a second connection was served (%d) while the only one was held", code)
	case <-time.After(300 * time.Millisecond):
	}
	held.Close()
	if code := <-got; code != http.StatusOK {
		t.Errorf("after the held connection closed: %d, want 200", code)
	}
}
