package web

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestLimitRequests: over the limit a request is refused at once with 503
// (issue 22 D11: 10,000 concurrent GET /metrics whose responses were never
// read took the daemon to 1.5 GB); a freed slot serves again.
func TestLimitRequests(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var refused atomic.Int64
	h := LimitRequests(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			entered <- struct{}{}
			<-release
		}
		io.WriteString(w, "ok")
	}), 1, func() { refused.Add(1) })
	srv := httptest.NewServer(h)
	defer srv.Close()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	done := make(chan int)
	go func() { code, _ := get("/block"); done <- code }()
	<-entered // the one slot is held
	if code, body := get("/"); code != http.StatusServiceUnavailable || !strings.Contains(body, "--web.max-requests 1") {
		t.Errorf("over the limit: %d %q, want 503 naming the flag", code, body)
	}
	if refused.Load() != 1 {
		t.Errorf("refused %d, want 1", refused.Load())
	}
	for _, path := range []string{"/-/healthy", "/-/ready"} {
		if code, _ := get(path); code != http.StatusOK {
			t.Errorf("%s over the limit: %d, want 200 (health checks are never refused)", path, code)
		}
	}
	close(release)
	if code := <-done; code != http.StatusOK {
		t.Errorf("the held request: %d", code)
	}
	if code, body := get("/"); code != http.StatusOK || body != "ok" {
		t.Errorf("after the slot was freed: %d %q", code, body)
	}
	// 0: no limit (the handler itself, which never refuses).
	mux := http.NewServeMux()
	if LimitRequests(mux, 0, nil) != http.Handler(mux) {
		t.Error("0 must mean no limit")
	}
}
