package daemon

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/internal/testutil"
)

// authGate is a gateway in front of the simulator that accepts one
// credential at a time, of one kind: the test swaps it, then rewrites the
// file the daemon read it from. It counts the requests each credential got
// through, and answers every third accepted request 500 with the
// credential it was given echoed in the body (to check that the redactor
// knows the new value before it is used).
type authGate struct {
	kind  string
	mu    sync.Mutex
	want  string
	ok    map[string]int
	n     atomic.Int64
	proxy http.Handler
}

func (g *authGate) set(secret string) {
	g.mu.Lock()
	g.want = secret
	g.mu.Unlock()
}

func (g *authGate) accepted(secret string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.ok[secret]
}

// presented is the credential of r in the gate's kind ("" if none).
func (g *authGate) presented(r *http.Request) string {
	switch g.kind {
	case "basic":
		_, pw, _ := r.BasicAuth()
		return pw
	case "header":
		return r.Header.Get("X-Gateway-Key")
	case "oauth2":
		return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer tok-")
	}
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
}

func (g *authGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if g.kind == "oauth2" && r.URL.Path == "/token" {
		// client_credentials: the token is derived from the secret.
		_ = r.ParseForm()
		_, secret, _ := r.BasicAuth()
		if secret == "" {
			secret = r.PostForm.Get("client_secret")
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":"tok-%s","token_type":"Bearer","expires_in":3600}`, secret)
		return
	}
	got := g.presented(r)
	g.mu.Lock()
	ok := got != "" && got == g.want
	if ok {
		g.ok[got]++
	}
	g.mu.Unlock()
	if !ok {
		http.Error(w, `{"error":"Unauthorized"}`, http.StatusUnauthorized)
		return
	}
	if strings.HasPrefix(r.URL.Path, "/v1/") && g.n.Add(1)%3 == 0 {
		http.Error(w, `{"error":"upstream said no to `+got+`"}`, http.StatusInternalServerError)
		return
	}
	g.proxy.ServeHTTP(w, r)
}

// TestSecretRotationWithoutRestart rotates each kind of credential file
// while a probe runs: the daemon, with no SIGHUP and no reload call, sends
// the new value within seconds (SecretPollInterval 200ms), and the new
// value, echoed by the server, never reaches the landing page, /metrics or
// the log.
func TestSecretRotationWithoutRestart(t *testing.T) {
	for _, tc := range []struct {
		kind, field string
	}{
		{"api_key", "    api_key_file: %s\n"},
		{"bearer", "    http_config:\n      authorization:\n        credentials_file: %s\n"},
		{"basic", "    http_config:\n      basic_auth:\n        username: u\n        password_file: %s\n"},
		{"oauth2", "    http_config:\n      oauth2:\n        client_id: c\n        client_secret_file: %s\n        token_url: %s/token\n"},
		{"header", "    http_config:\n      http_headers:\n        X-Gateway-Key:\n          files: [%s]\n"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			simURL, _ := simtest.Start(t, simtest.Fast())
			u, _ := url.Parse(simURL)
			gate := &authGate{kind: tc.kind, ok: map[string]int{}, proxy: simtest.Proxy(u)}
			old, rotated := "first-"+tc.kind+"-s3cr3t", "second-"+tc.kind+"-r0tated"
			gate.set(old)
			srv := httptest.NewServer(gate)
			t.Cleanup(srv.Close)

			dir := t.TempDir()
			secret := filepath.Join(dir, "secret")
			if err := os.WriteFile(secret, []byte(old+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			field := fmt.Sprintf(tc.field, secret)
			if tc.kind == "oauth2" {
				field = fmt.Sprintf(tc.field, secret, srv.URL)
			}
			cfg := filepath.Join(dir, "llmprobe.yml")
			body := "targets:\n  - name: gated\n    base_url: " + srv.URL + "\n    model: llmprobe-sim\n    metrics_url: none\n" + field +
				"    probes:\n      - name: p\n        rate: 20\n        workload:\n          input_tokens: {dist: fixed, value: 16}\n          output_tokens: {dist: fixed, value: 4}\n"
			if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			o, base, logs := options(t)
			o.ConfigFile, o.SecretPollInterval = cfg, 200*time.Millisecond
			stop := start(t, o)
			testutil.EventuallyWithin(t, time.Minute, "requests with the first credential", func() bool { return gate.accepted(old) >= 3 })

			// Rotate: the server takes only the new value, then the file
			// gets it.
			gate.set(rotated)
			if err := os.WriteFile(secret+".tmp", []byte(rotated+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(secret+".tmp", secret); err != nil {
				t.Fatal(err)
			}
			rotatedAt := time.Now()
			testutil.EventuallyWithin(t, time.Minute, "requests with the rotated credential", func() bool { return gate.accepted(rotated) >= 6 })
			t.Logf("%s: the rotated credential was used %s after the file changed", tc.kind, time.Since(rotatedAt).Round(time.Millisecond))
			// The server echoed the rotated value into failed answers: wait
			// for them on the landing page (the newest failures).
			testutil.EventuallyWithin(t, time.Minute, "failures after the rotation on the landing page", func() bool {
				resp, err := http.Get(base + "/")
				if err != nil {
					return false
				}
				page := readAll(t, resp)
				return strings.Count(page, "upstream said no to") >= 2 && gate.accepted(rotated) >= 12
			})
			if strings.Contains(logs.String(), "SIGHUP") {
				t.Errorf("reloaded by SIGHUP?\n%s", logs)
			}
			// The daemon reloads too (the redactor and RestartKey see the new
			// value; an api_key_file is read only then).
			testutil.EventuallyWithin(t, time.Minute, "the reload on the changed file", func() bool {
				return strings.Contains(logs.String(), "a credential file changed")
			})
			for _, page := range []string{"/", "/metrics", "/config"} {
				resp, err := http.Get(base + page)
				if err != nil {
					t.Fatal(err)
				}
				b := readAll(t, resp)
				for _, s := range []string{old, rotated, base64.StdEncoding.EncodeToString([]byte("u:" + rotated))} {
					if strings.Contains(b, s) {
						t.Errorf("%s shows a secret %q", page, s)
					}
				}
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			for _, s := range []string{old, rotated} {
				if strings.Contains(logs.String(), s) {
					t.Errorf("the log shows the secret %q", s)
				}
			}
		})
	}
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b := new(strings.Builder)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}
