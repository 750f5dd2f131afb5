package simulator_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
)

func do(t *testing.T, method, url string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// TestMethodNotAllowed checks FastAPI's answers for a known path with the
// wrong method (405, {"detail":"Method Not Allowed"}, Allow) and for an
// unknown path (404), and that GET routes also answer HEAD.
func TestMethodNotAllowed(t *testing.T) {
	base, _ := simtest.Start(t, fastConfig())
	tests := []struct {
		method, path string
		status       int
		allow        string
		detail       string
	}{
		{http.MethodGet, "/v1/completions", 405, "POST", "Method Not Allowed"},
		{http.MethodGet, "/v1/chat/completions", 405, "POST", "Method Not Allowed"},
		{http.MethodDelete, "/v1/completions", 405, "POST", "Method Not Allowed"},
		{http.MethodGet, "/tokenize", 405, "POST", "Method Not Allowed"},
		{http.MethodPut, "/detokenize", 405, "POST", "Method Not Allowed"},
		{http.MethodPost, "/v1/models", 405, "GET, HEAD", "Method Not Allowed"},
		{http.MethodPost, "/version", 405, "GET, HEAD", "Method Not Allowed"},
		{http.MethodPost, "/health", 405, "GET, HEAD", "Method Not Allowed"},
		{http.MethodHead, "/health", 200, "", ""},
		{http.MethodHead, "/v1/models", 200, "", ""},
		{http.MethodGet, "/v1/nope", 404, "", "Not Found"},
		{http.MethodGet, "/v1/models/", 307, "", ""},
		{http.MethodPost, "/v1/completions/?x=1", 307, "", ""},
		{http.MethodGet, "/v1/completions/", 307, "", ""},
		{http.MethodGet, "/v1/nope/", 404, "", "Not Found"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, base+tt.path, nil)
			resp, err := noRedirects.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusTemporaryRedirect {
				route, query, _ := strings.Cut(strings.TrimPrefix(tt.path, "/"), "?")
				want := base + "/" + strings.TrimSuffix(route, "/")
				if query != "" {
					want += "?" + query
				}
				if got := resp.Header.Get("Location"); got != want {
					t.Errorf("Location %q, want %q", got, want)
				}
			}
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d; body %s", resp.StatusCode, tt.status, body)
			}
			if got := resp.Header.Get("Allow"); got != tt.allow {
				t.Errorf("Allow %q, want %q", got, tt.allow)
			}
			if tt.detail == "" {
				return
			}
			var out map[string]string
			if err := json.Unmarshal(body, &out); err != nil || len(out) != 1 || out["detail"] != tt.detail {
				t.Errorf("body %s, want {\"detail\":%q}", body, tt.detail)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
		})
	}
	// /metrics is a mounted ASGI app in vLLM: every method gets the exposition.
	resp, body := do(t, http.MethodPost, base+"/metrics")
	if resp.StatusCode != 200 || !strings.Contains(string(body), "vllm:num_requests_running") {
		t.Errorf("POST /metrics: %d", resp.StatusCode)
	}
}

// TestHTTPRequestsTotal checks http_requests_total's handler labels as
// prometheus_fastapi_instrumentator sets them in vLLM: route paths, "none"
// for requests matching no route, and no series for the excluded handlers
// (/metrics, /health, /version).
func TestHTTPRequestsTotal(t *testing.T) {
	base, _ := simtest.Start(t, fastConfig())
	for _, r := range []struct{ method, path string }{
		{"GET", "/health"}, {"GET", "/health"}, {"GET", "/version"}, {"GET", "/metrics"}, {"GET", "/v1/models"},
		{"GET", "/v1/completions"}, {"GET", "/nope"}, {"POST", "/nope"}, {"HEAD", "/v1/models/"},
	} {
		req, _ := http.NewRequest(r.method, base+r.path, nil)
		resp, err := noRedirects.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	postJSON(t, base+"/v1/completions", map[string]any{"prompt": "a", "max_tokens": 1}, 200, nil)
	postJSON(t, base+"/v1/completions", map[string]any{"prompt": "a", "max_tokens": 0}, 400, nil)
	got := map[string]float64{}
	for _, m := range scrape(t, base)["http_requests_total"].GetMetric() {
		got[label(m, "handler")+" "+label(m, "method")+" "+label(m, "status")] = m.GetCounter().GetValue()
	}
	want := map[string]float64{
		"/v1/models GET 2xx":       1,
		"/v1/completions POST 2xx": 1,
		"/v1/completions POST 4xx": 1,
		"none GET 4xx":             2, // GET /v1/completions (405), GET /nope (404)
		"none POST 4xx":            1,
		"/v1/models/ HEAD 3xx":     1, // trailing-slash redirect
	}
	if len(got) != len(want) {
		t.Errorf("series %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("http_requests_total{%s} = %v, want %v", k, got[k], v)
		}
	}
}

// noRedirects returns redirects instead of following them.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func label(m *dto.Metric, name string) string {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == name {
			return lp.GetValue()
		}
	}
	return ""
}
