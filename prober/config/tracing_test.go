package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeSelfSigned writes a self-signed certificate and its key under dir
// as cert.pem and key.pem.
func writeSelfSigned(t *testing.T, dir string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "collector"}, DNSNames: []string{"collector"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cert.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "key.pem"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
}

const tracingTarget = "targets:\n  - name: a\n    base_url: http://x\n"

// TestTracingBlock loads a full tracing block: relative TLS files resolved
// against the file's directory, headers kept, and the header values never
// in String or Redacted.
func TestTracingBlock(t *testing.T) {
	dir := t.TempDir()
	writeSelfSigned(t, dir)
	path := filepath.Join(dir, "llmprobe.yml")
	data := tracingTarget + `tracing:
  endpoint: https://collector:4318
  protocol: grpc
  sample_ratio: 0.25
  timeout: 3s
  headers:
    X-Scope-OrgID: tenant-canary-7f3a
    Authorization: Bearer tok-canary-19c2
  tls_config:
    ca_file: cert.pem
    cert_file: cert.pem
    key_file: key.pem
    server_name: collector
`
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	tr := c.Tracing
	if tr.Endpoint != "https://collector:4318" || tr.Protocol != TracingProtocolGRPC || tr.SampleRatio != 0.25 || tr.Timeout != 3*time.Second {
		t.Errorf("tracing %+v", tr)
	}
	if got := tr.StringHeaders()["X-Scope-OrgID"]; got != "tenant-canary-7f3a" {
		t.Errorf("header X-Scope-OrgID = %q", got)
	}
	if tr.TLSConfig.CAFile != filepath.Join(dir, "cert.pem") || tr.TLSConfig.KeyFile != filepath.Join(dir, "key.pem") {
		t.Errorf("tls files not resolved against the file's directory: %+v", tr.TLSConfig)
	}
	for _, s := range []string{c.String(), c.Redacted()} {
		if strings.Contains(s, "canary") {
			t.Errorf("a header value is shown:\n%s", s)
		}
		if !strings.Contains(s, "X-Scope-OrgID: <secret>") {
			t.Errorf("the header name is not shown with <secret>:\n%s", s)
		}
	}
	again, err := Parse([]byte(c.String()), path)
	if err == nil && again.Tracing.Equal(tr) {
		t.Errorf("the <secret> placeholders parsed back to the same headers")
	}
	if !tr.Equal(c.Tracing) || tr.Equal(TracingConfig{}) || !(TracingConfig{}).IsZero() || tr.IsZero() {
		t.Errorf("Equal / IsZero")
	}
	if nc, err := Parse([]byte(tracingTarget), "f.yml"); err != nil || !nc.Tracing.IsZero() || strings.Contains(nc.String(), "tracing") {
		t.Errorf("no tracing block: %v, %+v", err, nc)
	}
}

// TestTracingErrors: each problem of the block names its line and key.
func TestTracingErrors(t *testing.T) {
	dir := t.TempDir()
	writeSelfSigned(t, dir)
	tests := []struct{ name, block, want string }{
		{"unknown key", "tracing:\n  endpoint: http://c:4318\n  header: {a: b}\n", `:6: tracing.header: unknown key`},
		{"unknown tls key", "tracing:\n  tls_config:\n    ca: x\n    cafile: y\n", `:7: tracing.tls_config.cafile: unknown key`},
		{"protocol", "tracing:\n  protocol: thrift\n", `:5: tracing.protocol: must be http/protobuf or grpc, got "thrift"`},
		{"sample ratio", "tracing:\n  sample_ratio: 2\n", `:5: tracing.sample_ratio: must be in [1e-06, 1] (0 or left out: 1), got 2`},
		{"timeout", "tracing:\n  timeout: 1h\n", `:5: tracing.timeout: must be in (0, 5m0s] (0 or left out: 10s), got 1h0m0s`},
		{"endpoint scheme", "tracing:\n  endpoint: ftp://c:4318\n", `:5: tracing.endpoint: scheme must be http or https, got "ftp"`},
		{"endpoint userinfo", "tracing:\n  endpoint: http://u:pw-canary@c:4318\n", `:5: tracing.endpoint: must not carry user info: put credentials in headers`},
		{"endpoint host:port", "tracing:\n  endpoint: collector\n", `:5: tracing.endpoint: must be a URL (http://host:4318) or host:port, got "collector": not host:port`},
		{"header name", "tracing:\n  headers:\n    \"bad name\": v\n", `:5: tracing.headers: "bad name" is not a valid HTTP header name`},
		{"header value", "tracing:\n  headers:\n    X-Key: \"v-canary\\nx\"\n", `:6: tracing.headers.X-Key: the value holds a character an HTTP header cannot carry (a control character or a newline)`},
		{"header reserved", "tracing:\n  headers:\n    content-type: x\n", `:6: tracing.headers.content-type: set by the exporter itself: remove it`},
		{"ca file", "tracing:\n  tls_config:\n    ca_file: missing.pem\n", `:6: tracing.tls_config.ca_file: stat ` + filepath.Join(dir, "missing.pem") + `: no such file or directory`},
		{"key without cert", "tracing:\n  tls_config:\n    key_file: key.pem\n", `:5: tracing.tls_config: exactly one of cert or cert_file must be configured when a client key is configured`},
		{"ca and ca_file", "tracing:\n  tls_config:\n    ca: x\n    ca_file: cert.pem\n", `:5: tracing.tls_config: at most one of ca, ca_file & ca_ref must be configured`},
		{"ref", "tracing:\n  tls_config:\n    ca_ref: vault\n", `:6: tracing.tls_config.ca_ref: secret references need a secret manager, which llmprobe has not: use the *_file form`},
		{"insecure with tls", "tracing:\n  insecure: true\n  tls_config:\n    ca_file: cert.pem\n", `:5: tracing.insecure: insecure: true exports without TLS, so tls_config would never be used: keep one`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "llmprobe.yml")
			_, err := Parse([]byte(tracingTarget+tc.block), path)
			if err == nil || err.Error() != path+tc.want {
				t.Errorf("got  %v\nwant %s", err, path+tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "canary") {
				t.Errorf("the error shows a secret: %v", err)
			}
		})
	}
	t.Run("too many headers", func(t *testing.T) {
		var b strings.Builder
		b.WriteString("tracing:\n  headers:\n")
		for i := range MaxTracingHeaders + 1 {
			b.WriteString("    X-H" + strings.Repeat("a", i) + ": v\n")
		}
		_, err := Parse([]byte(tracingTarget+b.String()), "f.yml")
		want := "f.yml:5: tracing.headers: at most 32 headers (headers and header_files), got 33"
		if err == nil || err.Error() != want {
			t.Errorf("got %v, want %s", err, want)
		}
	})
}

// TestTracingHeaderFiles: header_files are read at load (relative to the
// file's directory, trimmed), join headers for the exporter and the
// redactor, and show as paths only; a missing, empty, oversized or
// non-header file is an error naming its key and never its content.
func TestTracingHeaderFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("token", "Bearer tok-canary-file-91ab\n")
	write("empty", " \n")
	write("newline", "a-canary\nb\n")
	write("big", strings.Repeat("x", MaxTracingHeaderBytes+1))
	path := filepath.Join(dir, "llmprobe.yml")
	c, err := Parse([]byte(tracingTarget+"tracing:\n  headers: {X-Scope-OrgID: team}\n  header_files:\n    Authorization: token\n"), path)
	if err != nil {
		t.Fatal(err)
	}
	h := c.Tracing.StringHeaders()
	if h["Authorization"] != "Bearer tok-canary-file-91ab" || h["X-Scope-OrgID"] != "team" {
		t.Errorf("headers %v", h)
	}
	if got := c.Tracing.HeaderNames(); strings.Join(got, ",") != "Authorization,X-Scope-OrgID" {
		t.Errorf("header names %v", got)
	}
	if s := c.Redacted(); strings.Contains(s, "canary") || !strings.Contains(s, "Authorization: "+filepath.Join(dir, "token")) {
		t.Errorf("redacted config:\n%s", s)
	}
	tests := []struct{ name, block, want string }{
		{"missing", "    Authorization: nope\n", `:7: tracing.header_files.Authorization: no such file or directory`},
		{"empty", "    Authorization: empty\n", `:7: tracing.header_files.Authorization: ` + filepath.Join(dir, "empty") + ` is empty`},
		{"newline", "    Authorization: newline\n", `:7: tracing.header_files.Authorization: ` + filepath.Join(dir, "newline") + ` holds a character an HTTP header cannot carry (a control character or a newline)`},
		{"big", "    Authorization: big\n", `:7: tracing.header_files.Authorization: the file is larger than 8KiB, the cap on a header file`},
		{"both", "    X-Scope-OrgID: token\n", `:7: tracing.header_files.X-Scope-OrgID: also in headers: keep one`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tracingTarget+"tracing:\n  headers: {X-Scope-OrgID: team}\n  header_files:\n"+tc.block), path)
			if err == nil || err.Error() != path+tc.want {
				t.Errorf("got  %v\nwant %s", err, path+tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "canary") {
				t.Errorf("the error shows a secret: %v", err)
			}
		})
	}
}
