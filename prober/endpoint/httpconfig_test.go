package endpoint

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/common/config"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// exercise sends every kind of request an endpoint makes: discovery
// (/v1/models, /version, engine info), prompt sizing (/tokenize, or a
// calibration), /metrics and one generation. It returns the errors' and
// the record's messages.
func exercise(t *testing.T, ep *Endpoint, model string) (msgs []string, rec prober.Record) {
	t.Helper()
	ctx := context.Background()
	if _, err := ep.Discover(ctx); err != nil {
		msgs = append(msgs, "discover: "+err.Error())
	}
	if _, err := ep.PromptSizing(ctx, model); err != nil {
		msgs = append(msgs, "sizing: "+err.Error())
	}
	if _, err := ep.Metrics(ctx); err != nil {
		msgs = append(msgs, "metrics: "+err.Error())
	}
	c, err := ep.Client(model)
	if err != nil {
		t.Fatal(err)
	}
	c.Do(ctx, NewRequest(ep.API(), "r1", workload.Item{Prompt: "hello there", OutputTokens: 2}, true), &rec)
	if !rec.OK() {
		msgs = append(msgs, "request: "+rec.ErrorMessage)
	}
	return msgs, rec
}

// TestNoRedirectFollowed redirects each path an endpoint reads to another
// port of the same host (where Go's own client would follow and forward
// the Authorization header): nothing may arrive there, and the failure
// names the Location.
func TestNoRedirectFollowed(t *testing.T) {
	cfg := fastSim()
	cfg.APIKey = testKey
	base, _ := simtest.Start(t, cfg)
	for _, path := range []string{"/v1/models", "/version", "/tokenize", "/metrics", "/v1/completions"} {
		t.Run(strings.TrimPrefix(path, "/"), func(t *testing.T) {
			front, elsewhere := simtest.RedirectFront(t, base, path)
			ep, err := New(Options{BaseURL: front, Model: cfg.Model, APIKey: testKey, Engine: "vllm",
				HTTPConfig: config.HTTPClientConfig{HTTPHeaders: &config.Headers{Headers: map[string]config.Header{
					"X-Gateway-Key": {Secrets: []config.Secret{"gw-secret-77"}}}}}})
			if err != nil {
				t.Fatal(err)
			}
			msgs, _ := exercise(t, ep, cfg.Model)
			if got := elsewhere.Requests(); len(got) != 0 {
				t.Errorf("requests followed the redirect of %s: %v", path, got)
			}
			if a := elsewhere.Header("Authorization"); len(a) != 0 {
				t.Errorf("Authorization sent to the redirect target: %d times", len(a))
			}
			all := strings.Join(msgs, "\n")
			// A /version that does not answer leaves the version unknown,
			// without an error.
			if path != "/version" && !strings.Contains(all, "redirect to "+elsewhere.URL+path) {
				t.Errorf("no failure names the redirect of %s to %s:\n%s", path, elsewhere.URL, all)
			}
			if strings.Contains(all, testKey) || strings.Contains(all, "gw-secret-77") {
				t.Errorf("a secret is in the messages:\n%s", all)
			}
		})
	}
}

// TestTLSWithCAFile reaches a TLS simulator with the CA file of its
// certificate; with another CA every request fails as connect, saying why.
func TestTLSWithCAFile(t *testing.T) {
	certs := simtest.Certs(t)
	cfg := fastSim()
	cfg.TLSCertFile, cfg.TLSKeyFile = certs.CertFile, certs.KeyFile
	base, _ := simtest.Start(t, cfg)
	if !strings.HasPrefix(base, "https://") {
		t.Fatalf("base %s is not https", base)
	}
	ep, err := New(Options{BaseURL: base, HTTPConfig: config.HTTPClientConfig{TLSConfig: config.TLSConfig{CAFile: certs.CAFile}}})
	if err != nil {
		t.Fatal(err)
	}
	if msgs, _ := exercise(t, ep, cfg.Model); len(msgs) != 0 {
		t.Errorf("over TLS with the CA file: %v", msgs)
	}

	wrong := simtest.Certs(t)
	ep, err = New(Options{BaseURL: base, Model: cfg.Model, HTTPConfig: config.HTTPClientConfig{TLSConfig: config.TLSConfig{CAFile: wrong.CAFile}}})
	if err != nil {
		t.Fatal(err)
	}
	_, derr := ep.Discover(context.Background())
	var ee *Error
	if !asError(derr, &ee) || ee.Class != prober.ClassConnect || !strings.Contains(ee.Msg, "certificate signed by unknown authority") {
		t.Errorf("discovery with a wrong CA: %v, want connect naming the unknown authority", derr)
	}
	_, rec := exercise(t, ep, cfg.Model)
	if rec.Error != prober.ClassConnect || !strings.Contains(rec.ErrorMessage, "certificate signed by unknown authority") {
		t.Errorf("request with a wrong CA: %s %q", rec.Error, rec.ErrorMessage)
	}
}

func asError(err error, ee **Error) bool {
	e, ok := err.(*Error)
	if ok {
		*ee = e
	}
	return ok
}

// TestBasicAuthPasswordFile authenticates to a gateway that requires basic
// auth with the password read from a file (relative names are the config
// loader's business; here the path is absolute).
func TestBasicAuthPasswordFile(t *testing.T) {
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "password")
	if err := os.WriteFile(pwFile, []byte("pa55-w0rd-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := fastSim()
	cfg.RequireHeaders = "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("probe:pa55-w0rd-file"))
	base, _ := simtest.Start(t, cfg)
	ep, err := New(Options{BaseURL: base, HTTPConfig: config.HTTPClientConfig{
		BasicAuth: &config.BasicAuth{Username: "probe", PasswordFile: pwFile}}})
	if err != nil {
		t.Fatal(err)
	}
	if msgs, _ := exercise(t, ep, cfg.Model); len(msgs) != 0 {
		t.Errorf("with basic auth: %v", msgs)
	}
	ep, err = New(Options{BaseURL: base, Model: cfg.Model})
	if err != nil {
		t.Fatal(err)
	}
	if _, rec := exercise(t, ep, cfg.Model); rec.Error != prober.ClassHTTP4xx || rec.HTTPStatus != 401 {
		t.Errorf("without basic auth: %s %d, want http_4xx 401", rec.Error, rec.HTTPStatus)
	}
}

// TestEchoedHeaderSecretRedacted sends a secret header the gateway refuses
// and echoes back in its 401: neither discovery's error nor the request's
// record may hold it, nor the file-read secret of another header.
func TestEchoedHeaderSecretRedacted(t *testing.T) {
	dir := t.TempDir()
	hf := filepath.Join(dir, "hdr")
	if err := os.WriteFile(hf, []byte("file-secret-value-9\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := fastSim()
	cfg.RequireHeaders = "X-Gateway-Key: the-right-one\nX-Other: file-secret-value-0"
	base, _ := simtest.Start(t, cfg)
	ep, err := New(Options{BaseURL: base, Model: cfg.Model, HTTPConfig: config.HTTPClientConfig{HTTPHeaders: &config.Headers{
		Headers: map[string]config.Header{
			"X-Gateway-Key": {Secrets: []config.Secret{"echoed-secret-4242"}},
			"X-Other":       {Files: []string{hf}},
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	msgs, rec := exercise(t, ep, cfg.Model)
	all := strings.Join(msgs, "\n")
	if rec.HTTPStatus != 401 || !strings.Contains(all, "wrong value for header X-Gateway-Key") {
		t.Fatalf("the gateway did not refuse the header (status %d):\n%s", rec.HTTPStatus, all)
	}
	for _, s := range []string{"echoed-secret-4242", "file-secret-value-9"} {
		if strings.Contains(all, s) {
			t.Errorf("%s is in the messages:\n%s", s, all)
		}
		if strings.Contains(ep.Redact("x "+s+" y"), s) {
			t.Errorf("Redact keeps %s", s)
		}
	}
	if !strings.Contains(all, "<secret>") && !strings.Contains(all, "<redacted>") {
		t.Errorf("the echo was not redacted but dropped (the check would pass vacuously):\n%s", all)
	}
}

// TestHTTPConfigErrors: a secret file that cannot be read, or an invalid
// config, fails New naming the field.
func TestHTTPConfigErrors(t *testing.T) {
	_, err := New(Options{BaseURL: "http://127.0.0.1:1", HTTPConfig: config.HTTPClientConfig{
		BasicAuth: &config.BasicAuth{Username: "u", PasswordFile: filepath.Join(t.TempDir(), "missing")}}})
	if err == nil || !strings.Contains(err.Error(), "http_config: basic_auth.password_file: ") {
		t.Errorf("missing password file: %v", err)
	}
	_, err = New(Options{BaseURL: "http://127.0.0.1:1", HTTPConfig: config.HTTPClientConfig{
		TLSConfig: config.TLSConfig{CAFile: filepath.Join(t.TempDir(), "nope.pem")}}})
	if err == nil || !strings.Contains(err.Error(), "http_config: ") || !strings.Contains(err.Error(), "nope.pem") {
		t.Errorf("missing CA file: %v", err)
	}
}
