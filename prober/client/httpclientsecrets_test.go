package client

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/common/config"

	"github.com/llmprobe/llmprobe/prober/fingerprint"
)

// TestHTTPClientRegistersSentSecrets: every credential NewHTTPClient's
// client sends is known to its Redactor once the request is written, as
// sent: a credentials file rotated between requests (each content), the
// basic-auth pair and its base64, each fresh OAuth2 access token, an
// http_headers secret file, and the proxy's userinfo and its base64 (the
// Proxy-Authorization the transport adds for an http target). The
// Redactor starts empty, so what it knows came from the sending.
func TestHTTPClientRegistersSentSecrets(t *testing.T) {
	var tokens atomic.Int64
	var proxyAuth atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/token" {
			w.Header().Set("Content-Type", "application/json")
			// expires_in 1 s is within oauth2's expiry margin: a fresh
			// token for every request.
			fmt.Fprintf(w, `{"access_token":"oauth-access-%04d","token_type":"Bearer","expires_in":1}`, tokens.Add(1))
			return
		}
		if pa := r.Header.Get("Proxy-Authorization"); pa != "" {
			proxyAuth.Store(pa)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	dir := t.TempDir()
	write := func(name, v string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	credFile := write("cred", "rotated-cred-v1")
	pwFile := write("pw", "basic-pw-secret")
	hdrFile := write("hdr", "header-file-v1")
	proxy, _ := url.Parse(srv.URL)
	proxy.User = url.UserPassword("proxy-user", "proxy-pass-secret")
	send := func(hc *http.Client, target string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, target, nil)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	known := func(red *fingerprint.Redactor, secrets ...string) {
		t.Helper()
		for _, s := range secrets {
			if !red.Holds(s) {
				t.Errorf("%q is not registered; known: %q", s, red.Secrets())
			}
		}
	}
	build := func(cfg config.HTTPClientConfig) (*http.Client, *fingerprint.Redactor) {
		t.Helper()
		red := fingerprint.NewRedactor()
		hc, err := NewHTTPClient(cfg, "test", red)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(hc.CloseIdleConnections)
		return hc, red
	}

	t.Run("credentials file rotated", func(t *testing.T) {
		hc, red := build(config.HTTPClientConfig{
			Authorization: &config.Authorization{Type: "Bearer", CredentialsFile: credFile},
			HTTPHeaders:   &config.Headers{Headers: map[string]config.Header{"X-Gateway-Key": {Files: []string{hdrFile}}}},
		})
		send(hc, srv.URL)
		known(red, "rotated-cred-v1", "header-file-v1")
		write("cred", "rotated-cred-v2")
		write("hdr", "header-file-v2")
		send(hc, srv.URL)
		known(red, "rotated-cred-v1", "rotated-cred-v2", "header-file-v2")
	})
	t.Run("basic auth", func(t *testing.T) {
		hc, red := build(config.HTTPClientConfig{BasicAuth: &config.BasicAuth{Username: "basic-user", PasswordFile: pwFile}})
		send(hc, srv.URL)
		known(red, "basic-user:basic-pw-secret", base64.StdEncoding.EncodeToString([]byte("basic-user:basic-pw-secret")), "basic-pw-secret")
	})
	t.Run("oauth2 tokens as fetched", func(t *testing.T) {
		hc, red := build(config.HTTPClientConfig{OAuth2: &config.OAuth2{ClientID: "id", ClientSecret: "client-secret-x", TokenURL: srv.URL + "/token"}})
		send(hc, srv.URL)
		send(hc, srv.URL)
		if n := tokens.Load(); n < 2 {
			t.Fatalf("%d tokens fetched, want a fresh one per request", n)
		}
		known(red, "oauth-access-0001", "oauth-access-0002")
	})
	t.Run("proxy userinfo", func(t *testing.T) {
		hc, red := build(config.HTTPClientConfig{ProxyConfig: config.ProxyConfig{ProxyURL: config.URL{URL: proxy}}})
		send(hc, "http://target.invalid/v1/models")
		pa, _ := proxyAuth.Load().(string)
		want := "Basic " + base64.StdEncoding.EncodeToString([]byte("proxy-user:proxy-pass-secret"))
		if pa != want {
			t.Fatalf("the proxy saw Proxy-Authorization %q, want %q", pa, want)
		}
		known(red, "proxy-user:proxy-pass-secret", want[len("Basic "):], "proxy-pass-secret")
	})
	t.Run("concurrent, under the caller's trace", func(t *testing.T) {
		// The caller's own httptrace hooks still fire, and concurrent
		// requests share no trace (go test -race).
		hc, red := build(config.HTTPClientConfig{Authorization: &config.Authorization{Type: "Bearer", Credentials: "concurrent-cred-1"}})
		var firstBytes atomic.Int64
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
					GotFirstResponseByte: func() { firstBytes.Add(1) },
				})
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
				resp, err := hc.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
			}()
		}
		wg.Wait()
		if n := firstBytes.Load(); n != 8 {
			t.Errorf("the caller's trace saw %d first bytes, want 8", n)
		}
		known(red, "concurrent-cred-1")
	})
}
