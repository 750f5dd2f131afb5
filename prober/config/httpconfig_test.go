package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeFiles writes name -> content into dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func TestHTTPConfig(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"pw": "file-password-1\n", "hdr": "header-file-secret\n"})
	path := filepath.Join(dir, "llmprobe.yml")
	yml := `targets:
  - name: gw
    base_url: https://gw.example:8443
    http_config:
      basic_auth: {username: probe, password_file: pw}
      tls_config: {server_name: vllm.internal, insecure_skip_verify: false}
      http_headers:
        X-Gateway-Key: {secrets: [inline-header-secret]}
        X-From-File: {files: [hdr]}
        X-Plain: {values: [visible]}
`
	writeFiles(t, dir, map[string]string{"llmprobe.yml": yml})
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	h := c.Targets[0].HTTPConfig
	if h.BasicAuth.PasswordFile != filepath.Join(dir, "pw") {
		t.Errorf("password_file %q, want it resolved against the config's directory", h.BasicAuth.PasswordFile)
	}
	if f := h.HTTPHeaders.Headers["X-From-File"].Files[0]; f != filepath.Join(dir, "hdr") {
		t.Errorf("header file %q not resolved", f)
	}
	if h.FollowRedirects || h.EnableHTTP2 {
		t.Errorf("follow_redirects %v, enable_http2 %v: prometheus/common's defaults must be turned off", h.FollowRedirects, h.EnableHTTP2)
	}
	dump := c.Redacted()
	for _, s := range []string{"inline-header-secret", "file-password-1", "header-file-secret"} {
		if strings.Contains(dump, s) || strings.Contains(c.String(), s) {
			t.Errorf("the config dump holds %s:\n%s", s, dump)
		}
	}
	for _, s := range []string{"<secret>", "server_name: vllm.internal", "visible", "password_file: " + filepath.Join(dir, "pw")} {
		if !strings.Contains(dump, s) {
			t.Errorf("the config dump lacks %q:\n%s", s, dump)
		}
	}

	// A reload after a secret file changed restarts the target (its
	// clients learn the new value to redact); an unchanged one does not.
	key := c.Targets[0].RestartKey()
	c2, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c2.Targets[0].RestartKey() != key {
		t.Error("the restart key changed without a change")
	}
	writeFiles(t, dir, map[string]string{"hdr": "rotated-secret\n"})
	c3, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c3.Targets[0].RestartKey() == key {
		t.Error("the restart key did not change after a secret file changed")
	}
	writeFiles(t, dir, map[string]string{"llmprobe.yml": strings.Replace(yml, "inline-header-secret", "other-secret", 1)})
	c4, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if k := c4.Targets[0].RestartKey(); k == key || k == c3.Targets[0].RestartKey() {
		t.Error("the restart key did not change with an inline secret")
	}
	if strings.Contains(c4.Targets[0].RestartKey(), "other-secret") {
		t.Error("the restart key holds the secret")
	}
}

func TestHTTPConfigInvalid(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"key": "sk-1\n"})
	f := func(name, httpConfig, extra, want string) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			yml := "targets:\n  - name: t\n    base_url: http://127.0.0.1:8000\n" + extra + "    http_config:\n" + httpConfig
			path := filepath.Join(dir, name+".yml")
			writeFiles(t, dir, map[string]string{name + ".yml": yml})
			_, err := Load(path)
			if err == nil {
				t.Fatalf("no error, want %q", want)
			}
			if got := strings.TrimPrefix(err.Error(), path); got != want {
				t.Errorf("error\n%s\nwant\n%s", got, want)
			}
		})
	}
	f("follow", "      follow_redirects: true\n", "",
		":5: targets[0].http_config.follow_redirects: llmprobe never follows redirects (a redirect is a failed request naming "+
			"its Location, so that no credential goes to another address and a wrong base_url shows): remove follow_redirects")
	f("http2", "      enable_http2: true\n", "",
		":5: targets[0].http_config.enable_http2: llmprobe speaks HTTP/1.1 to targets (one stream per connection, as vllm bench serve measures): remove enable_http2")
	f("own-validate", "      bearer_token: a\n      bearer_token_file: b\n", "",
		":4: targets[0].http_config: at most one of bearer_token & bearer_token_file must be configured")
	f("ambiguous", "      authorization: {credentials: abc}\n", "    api_key_file: key\n",
		":5: targets[0].http_config: ambiguous credentials: api_key_file and http_config's authorization (bearer_token) both "+
			"set the Authorization header; keep one")
	f("missing-file", "      basic_auth: {username: u, password_file: nope}\n", "",
		":5: targets[0].http_config.basic_auth.password_file: stat "+filepath.Join(dir, "nope")+": no such file or directory")
	f("missing-ca", "      tls_config:\n        ca_file: ca.pem\n", "",
		":6: targets[0].http_config.tls_config.ca_file: stat "+filepath.Join(dir, "ca.pem")+": no such file or directory")
	f("bad-ca", "      tls_config: {ca_file: key}\n", "",
		":5: targets[0].http_config.tls_config: unable to use specified CA cert file "+filepath.Join(dir, "key"))
	f("ref", "      authorization: {credentials_ref: vault-thing}\n", "",
		":5: targets[0].http_config.authorization.credentials_ref: secret references need a secret manager, which llmprobe has not: use the *_file form")
	f("unknown", "      tls_config: {ca_fil: x}\n", "",
		":5: targets[0].http_config.tls_config.ca_fil: unknown key")
	f("reserved-header", "      http_headers: {Authorization: {values: [x]}}\n", "",
		":4: targets[0].http_config: setting header \"Authorization\" is not allowed")
}

func TestLoadHTTPConfigFile(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"tok":       "bearer-from-file\n",
		"good.yml":  "authorization: {credentials_file: tok}\nhttp_headers: {X-A: {values: [b]}}\n",
		"bad.yml":   "tls_config:\n  insecure_skip_verify: true\nbasic_auth:\n  username: u\n  password_file: missing\n",
		"redir.yml": "follow_redirects: true\n",
		"typo.yml":  "bearer_tokn: x\n",
	})
	h, err := LoadHTTPConfigFile(filepath.Join(dir, "good.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if h.Authorization == nil || h.Authorization.CredentialsFile != filepath.Join(dir, "tok") || h.Authorization.Type != "Bearer" {
		t.Errorf("authorization %+v", h.Authorization)
	}
	for file, want := range map[string]string{
		"bad.yml":   ":5: basic_auth.password_file: stat " + filepath.Join(dir, "missing") + ": no such file or directory",
		"redir.yml": ":1: follow_redirects: llmprobe never follows redirects",
		"typo.yml":  ":1: bearer_tokn: unknown key",
	} {
		p := filepath.Join(dir, file)
		_, err := LoadHTTPConfigFile(p)
		if err == nil || !strings.HasPrefix(err.Error(), p+want) {
			t.Errorf("%s: %v, want %s%s", file, err, p, want)
		}
	}
}
