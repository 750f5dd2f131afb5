package fingerprint

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/prometheus/common/config"
)

func writeTemp(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSummarizeHTTP: a config holding every kind of secret (inline and in
// files: a TLS key, a password, a bearer token, header values, a proxy's
// password and a proxy CONNECT header) is summarised with the CA and the
// certificate by their hash, the auth kind, the header names and the proxy's
// scheme and host; no secret, username or header value is in its JSON.
func TestSummarizeHTTP(t *testing.T) {
	dir := t.TempDir()
	const ca, cert = "-----BEGIN CERTIFICATE-----\nca zq\n", "-----BEGIN CERTIFICATE-----\ncert zq\n"
	secrets := []string{"key-material-zq1", "password-zq2", "header-secret-zq3", "header-file-zq4", "proxy-pw-zq5",
		"connect-zq6", "username-zq7", "plain-header-value-zq8", "token-zq9"}
	proxy, _ := url.Parse("http://proxy-user:proxy-pw-zq5@proxy.example:3128/path")
	cfg := config.HTTPClientConfig{
		TLSConfig: config.TLSConfig{CAFile: writeTemp(t, dir, "ca.pem", ca), CertFile: writeTemp(t, dir, "cert.pem", cert),
			KeyFile: writeTemp(t, dir, "key.pem", secrets[0]), ServerName: "gw.internal", MinVersion: config.TLSVersions["TLS12"]},
		BasicAuth: &config.BasicAuth{Username: secrets[6], PasswordFile: writeTemp(t, dir, "pw", secrets[1])},
		HTTPHeaders: &config.Headers{Headers: map[string]config.Header{
			"x-tenant":      {Values: []string{secrets[7]}},
			"X-Gateway-Key": {Secrets: []config.Secret{config.Secret(secrets[2])}, Files: []string{writeTemp(t, dir, "h", secrets[3])}},
		}},
		ProxyConfig: config.ProxyConfig{ProxyURL: config.URL{URL: proxy},
			ProxyConnectHeader: config.ProxyHeader{"Proxy-Authorization": {config.Secret(secrets[5])}}},
	}
	h := SummarizeHTTP("https://gw.example/v1", cfg, false)
	sum := func(s string) string { b := sha256.Sum256([]byte(s)); return hex.EncodeToString(b[:]) }
	want := &HTTPConfig{Scheme: "https", Auth: "basic",
		TLS:     &TLSSummary{CASHA256: sum(ca), CertSHA256: sum(cert), ServerName: "gw.internal", MinVersion: "TLS12"},
		Headers: []string{"X-Gateway-Key", "X-Tenant"}, ProxyConnectHeaders: []string{"Proxy-Authorization"},
		Proxy: "http://proxy.example:3128"}
	if !reflect.DeepEqual(h, want) {
		t.Fatalf("summary\n%+v\nwant\n%+v", h, want)
	}
	b, _ := json.Marshal(h)
	for _, s := range append(secrets, "proxy-user", "key.pem") {
		if strings.Contains(string(b), s) || strings.Contains(h.String(), s) {
			t.Errorf("the summary holds %q: %s", s, b)
		}
	}
	if got := h.String(); got != "scheme=https tls(ca_sha256="+sum(ca)[:12]+" cert_sha256="+sum(cert)[:12]+
		" server_name=gw.internal insecure_skip_verify=false min_version=TLS12) auth=basic headers=X-Gateway-Key,X-Tenant "+
		"proxy_connect_headers=Proxy-Authorization proxy=http://proxy.example:3128" {
		t.Errorf("String() = %q", got)
	}
}

// TestSummarizeHTTPKinds pins the auth kind, the TLS record of a plain
// target and the proxy of each shape.
func TestSummarizeHTTPKinds(t *testing.T) {
	f := func(name, target string, cfg config.HTTPClientConfig, apiKey bool, want string) {
		t.Helper()
		if got := SummarizeHTTP(target, cfg, apiKey).String(); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	f("nothing", "http://h:8000", config.HTTPClientConfig{}, false, "scheme=http auth=none")
	f("api key", "http://h:8000", config.HTTPClientConfig{}, true, "scheme=http auth=bearer")
	f("https without tls_config", "HTTPS://h", config.HTTPClientConfig{}, false, "scheme=https tls(insecure_skip_verify=false) auth=none")
	f("bearer file", "http://h", config.HTTPClientConfig{BearerTokenFile: "/nonexistent"}, false, "scheme=http auth=bearer")
	f("authorization", "http://h", config.HTTPClientConfig{Authorization: &config.Authorization{Credentials: "x"}}, false, "scheme=http auth=bearer")
	f("authorization type", "http://h", config.HTTPClientConfig{Authorization: &config.Authorization{Type: "Token", Credentials: "x"}}, false,
		"scheme=http auth=token")
	f("oauth2", "http://h", config.HTTPClientConfig{OAuth2: &config.OAuth2{ClientID: "id", ClientSecret: "s", TokenURL: "http://t"}}, false,
		"scheme=http auth=oauth2")
	f("insecure, unreadable ca", "https://h", config.HTTPClientConfig{TLSConfig: config.TLSConfig{CAFile: "/nonexistent/ca.pem",
		InsecureSkipVerify: true}}, false, "scheme=https tls(ca_sha256=not-recorded insecure_skip_verify=true) auth=none")
	f("proxy from environment", "http://h", config.HTTPClientConfig{ProxyConfig: config.ProxyConfig{ProxyFromEnvironment: true}}, false,
		"scheme=http auth=none proxy=environment")
	var nilH *HTTPConfig
	if nilH.String() != NotRecorded {
		t.Errorf("nil summary: %q", nilH.String())
	}
}
