package client

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/common/config"

	"github.com/llmprobe/llmprobe/prober/redact"
)

// sentSecretsServer answers every request with 204, keeps the last
// Proxy-Authorization it received (it is also the proxy of requests to
// other hosts) and serves /token, an OAuth2 token endpoint handing out a
// fresh token per fetch.
type sentSecretsServer struct {
	*httptest.Server
	tokens    atomic.Int64
	proxyAuth atomic.Value
}

func newSentSecretsServer(t *testing.T) *sentSecretsServer {
	s := &sentSecretsServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/token" {
			w.Header().Set("Content-Type", "application/json")
			// expires_in 1 s is within oauth2's expiry margin: a fresh
			// token for every request.
			fmt.Fprintf(w, `{"access_token":"oauth-access-%04d","token_type":"Bearer","expires_in":1}`, s.tokens.Add(1))
			return
		}
		if pa := r.Header.Get("Proxy-Authorization"); pa != "" {
			s.proxyAuth.Store(pa)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(s.Close)
	return s
}

// redactingClient is NewHTTPClient(cfg) with an empty Redactor: what the
// Redactor knows afterwards came from the sending.
func redactingClient(t *testing.T, cfg config.HTTPClientConfig) (*http.Client, *redact.Redactor) {
	t.Helper()
	red := redact.New()
	hc, err := NewHTTPClient(cfg, "test", red)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hc.CloseIdleConnections)
	return hc, red
}

func sendGet(t *testing.T, hc *http.Client, target string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, target, nil)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

func mustKnow(t *testing.T, red *redact.Redactor, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if !red.Holds(s) {
			t.Errorf("%q is not registered; known: %q", s, red.Secrets())
		}
	}
}

func writeSecret(t *testing.T, path, v string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(v+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestHTTPClientRegistersSentSecrets: every credential NewHTTPClient's
// client sends is known to its Redactor once the request is written, as
// sent: a credentials file and an http_headers secret file rotated between
// requests (each content), the basic-auth pair and its base64, each fresh
// OAuth2 access token, and the proxy's userinfo and its base64 (the
// Proxy-Authorization the transport adds for an http target). The
// Redactor starts empty, so what it knows came from the sending.
func TestHTTPClientRegistersSentSecrets(t *testing.T) {
	srv := newSentSecretsServer(t)
	dir := t.TempDir()
	credFile := writeSecret(t, filepath.Join(dir, "cred"), "rotated-cred-v1")
	hdrFile := writeSecret(t, filepath.Join(dir, "hdr"), "header-file-v1")
	pwFile := writeSecret(t, filepath.Join(dir, "pw"), "basic-pw-secret")

	t.Run("credentials file rotated", func(t *testing.T) {
		hc, red := redactingClient(t, config.HTTPClientConfig{
			Authorization: &config.Authorization{Type: "Bearer", CredentialsFile: credFile},
			HTTPHeaders:   &config.Headers{Headers: map[string]config.Header{"X-Gateway-Key": {Files: []string{hdrFile}}}},
		})
		sendGet(t, hc, srv.URL)
		mustKnow(t, red, "rotated-cred-v1", "header-file-v1")
		writeSecret(t, credFile, "rotated-cred-v2")
		writeSecret(t, hdrFile, "header-file-v2")
		sendGet(t, hc, srv.URL)
		mustKnow(t, red, "rotated-cred-v1", "rotated-cred-v2", "header-file-v2")
	})
	t.Run("basic auth", func(t *testing.T) {
		hc, red := redactingClient(t, config.HTTPClientConfig{BasicAuth: &config.BasicAuth{Username: "basic-user", PasswordFile: pwFile}})
		sendGet(t, hc, srv.URL)
		mustKnow(t, red, "basic-user:basic-pw-secret", base64.StdEncoding.EncodeToString([]byte("basic-user:basic-pw-secret")), "basic-pw-secret")
	})
	t.Run("oauth2 tokens as fetched", func(t *testing.T) {
		hc, red := redactingClient(t, config.HTTPClientConfig{OAuth2: &config.OAuth2{ClientID: "id", ClientSecret: "client-secret-x", TokenURL: srv.URL + "/token"}})
		sendGet(t, hc, srv.URL)
		sendGet(t, hc, srv.URL)
		if n := srv.tokens.Load(); n < 2 {
			t.Fatalf("%d tokens fetched, want a fresh one per request", n)
		}
		mustKnow(t, red, "oauth-access-0001", "oauth-access-0002")
	})
	t.Run("proxy userinfo", func(t *testing.T) {
		proxy, _ := url.Parse(srv.URL)
		proxy.User = url.UserPassword("proxy-user", "proxy-pass-secret")
		hc, red := redactingClient(t, config.HTTPClientConfig{ProxyConfig: config.ProxyConfig{ProxyURL: config.URL{URL: proxy}}})
		sendGet(t, hc, "http://target.invalid/v1/models")
		pa, _ := srv.proxyAuth.Load().(string)
		want := "Basic " + base64.StdEncoding.EncodeToString([]byte("proxy-user:proxy-pass-secret"))
		if pa != want {
			t.Fatalf("the proxy saw Proxy-Authorization %q, want %q", pa, want)
		}
		mustKnow(t, red, "proxy-user:proxy-pass-secret", want[len("Basic "):], "proxy-pass-secret")
	})
}

// TestHTTPClientOAuth2SecretFileRotated: the OAuth2 client secret goes to
// the token endpoint by oauth2's own client, past the header hook; its file
// is re-read when it changed, before the request that may send it, so a
// rotated secret is known without a rebuild.
func TestHTTPClientOAuth2SecretFileRotated(t *testing.T) {
	srv := newSentSecretsServer(t)
	secFile := writeSecret(t, filepath.Join(t.TempDir(), "client-secret"), "client-secret-v1")
	hc, red := redactingClient(t, config.HTTPClientConfig{OAuth2: &config.OAuth2{ClientID: "id", ClientSecretFile: secFile, TokenURL: srv.URL + "/token"}})
	sendGet(t, hc, srv.URL)
	mustKnow(t, red, "client-secret-v1")
	writeSecret(t, secFile, "client-secret-v2")
	sendGet(t, hc, srv.URL)
	mustKnow(t, red, "client-secret-v1", "client-secret-v2")
}

// TestHTTPClientSecretsUnderCallerTrace: the caller's own httptrace hooks
// still fire through the registering transport, and concurrent requests
// share no trace (httptrace.WithClientTrace composes into the trace it is
// given: a shared one races, go test -race).
func TestHTTPClientSecretsUnderCallerTrace(t *testing.T) {
	srv := newSentSecretsServer(t)
	hc, red := redactingClient(t, config.HTTPClientConfig{Authorization: &config.Authorization{Type: "Bearer", Credentials: "concurrent-cred-1"}})
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
	mustKnow(t, red, "concurrent-cred-1")
}

// TestHTTPClientOAuth2NoRedirect: a token endpoint answering with a
// redirect is a failed fetch naming it; the client secret never reaches
// the address the Location names (prometheus/common's own token client
// followed it, Basic credentials and all, to another port).
func TestHTTPClientOAuth2NoRedirect(t *testing.T) {
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"access_token":"stolen","token_type":"Bearer","expires_in":3600}`)
	}))
	t.Cleanup(other.Close)
	for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			var targets atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/token" {
					http.Redirect(w, r, other.URL+"/token", code)
					return
				}
				targets.Add(1)
				w.WriteHeader(http.StatusNoContent)
			}))
			t.Cleanup(srv.Close)
			hc, _ := redactingClient(t, config.HTTPClientConfig{OAuth2: &config.OAuth2{ClientID: "id", ClientSecret: "client-secret-r", TokenURL: srv.URL + "/token"}})
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL, nil)
			resp, err := hc.Do(req)
			if err == nil {
				resp.Body.Close()
				t.Fatal("the request went out without a token")
			}
			if !strings.Contains(err.Error(), "oauth2") || !strings.Contains(err.Error(), fmt.Sprint(code)) {
				t.Errorf("error %q does not name the token fetch and its %d", err, code)
			}
			if n := elsewhere.Load(); n != 0 {
				t.Fatalf("the redirect was followed: %d requests reached the other server", n)
			}
			if n := targets.Load(); n != 0 {
				t.Errorf("%d requests reached the target without a token", n)
			}
		})
	}
}

// TestHTTPClientOAuth2JWTBearer: the RFC 7523 grant sends a signed
// assertion (its key from a file) to the token endpoint and the token it
// answers to the target.
func TestHTTPClientOAuth2JWTBearer(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	keyFile := writeSecret(t, filepath.Join(t.TempDir(), "key.pem"), string(pemKey))
	var gotAuth atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/token" {
			if err := r.ParseForm(); err != nil || r.Form.Get("grant_type") != grantTypeJWTBearer || r.Form.Get("assertion") == "" {
				http.Error(w, "bad grant", http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"access_token":"jwt-access-1","token_type":"Bearer","expires_in":3600}`)
			return
		}
		gotAuth.Store(r.Header.Get("Authorization"))
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	hc, red := redactingClient(t, config.HTTPClientConfig{OAuth2: &config.OAuth2{ClientID: "svc", GrantType: grantTypeJWTBearer,
		ClientCertificateKeyFile: keyFile, TokenURL: srv.URL + "/token"}})
	sendGet(t, hc, srv.URL)
	if a, _ := gotAuth.Load().(string); a != "Bearer jwt-access-1" {
		t.Fatalf("the target saw Authorization %q", a)
	}
	mustKnow(t, red, "jwt-access-1")
}
