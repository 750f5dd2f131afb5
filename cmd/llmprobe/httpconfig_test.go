package main

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/artifacts"
)

// TestHTTPConfigFlagErrors: a bad --http.config.file (or a compare side's)
// fails before any load, in one line naming the flag, the file, the line
// and the field; exit 2.
func TestHTTPConfigFlagErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	missing := write("missing.yml", "basic_auth:\n  username: u\n  password_file: nope\n")
	redirect := write("redirect.yml", "follow_redirects: true\n")
	auth := write("auth.yml", "authorization: {credentials: abc}\n")
	key := write("key", "sk-1\n")
	url := "http://127.0.0.1:1"
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"missing password file", []string{"sweep", "--http.config.file", missing},
			"llmprobe: error: --http.config.file: " + missing + ":3: basic_auth.password_file: stat " + filepath.Join(dir, "nope") + ": no such file or directory\n"},
		{"follow redirects", []string{"sweep", "--http.config.file", redirect},
			"llmprobe: error: --http.config.file: " + redirect + ":1: follow_redirects: llmprobe never follows redirects"},
		{"ambiguous", []string{"sweep", "--http.config.file", auth, "--api-key-file", key},
			"llmprobe: error: --http.config.file: " + auth + ": ambiguous credentials: --api-key-file and the file's"},
		{"not there", []string{"sweep", "--http.config.file", filepath.Join(dir, "none.yml")},
			"llmprobe: error: --http.config.file: " + filepath.Join(dir, "none.yml") + ": no such file or directory\n"},
		{"compare side", []string{"compare", "--baseline", url, "--candidate", url, "--rates", "1", "--candidate-http-config-file", redirect},
			"llmprobe: error: --candidate-http-config-file: " + redirect + ":1: follow_redirects: "},
		{"compare shared", []string{"compare", "--baseline", url, "--candidate", url, "--rates", "1", "--http.config.file", missing},
			"llmprobe: error: --http.config.file: " + missing + ":3: basic_auth.password_file: "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wantUsageError(t, append(tt.args, "--out", t.TempDir(), "--log.level", "error"), tt.want)
		})
	}
}

// TestSweepHTTPConfigSecretsNeverLeave is TestSweepSecretsNeverLeave with
// the bearer token given by --http.config.file (authorization.credentials_file)
// instead of --api-key-file: the echoing server's answers reach no output.
func TestSweepHTTPConfigSecretsNeverLeave(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "token")
	if err := os.WriteFile(keyFile, []byte(secretKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	httpCfg := filepath.Join(dir, "http.yml")
	if err := os.WriteFile(httpCfg, []byte("authorization: {credentials_file: token}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	runDir, stdout, stderr := sweepSecretEcho(t, dir, "9", "--http.config.file", httpCfg)
	noSecret(t, "stdout", stdout, secretKey)
	noSecret(t, "the log", stderr, secretKey)
	if b, _ := os.ReadFile(filepath.Join(runDir, artifacts.ErrorsFile)); !bytes.Contains(b, []byte("http_4xx")) {
		t.Errorf("errors-redacted.jsonl lacks the echoing 401s (the token was not sent?):\n%s", b)
	}
	noSecretInTree(t, runDir, secretKey)
}

// TestSweepHTTPConfigFingerprint sweeps the echoing server through an HTTP
// config with basic auth (its header echoed back into every surface the
// server controls) and two headers: the manifest's fingerprint records the
// auth kind and the header names, and neither the password, the encoded
// credentials, the username nor a header value is in any file of the run.
func TestSweepHTTPConfigFingerprint(t *testing.T) {
	dir := t.TempDir()
	const user, pw, hdr, plain = "user-zq-71", "pw-zq-72", "hdr-secret-zq-73", "plain-zq-74"
	if err := os.WriteFile(filepath.Join(dir, "pw"), []byte(pw+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	httpCfg := filepath.Join(dir, "http.yml")
	body := "basic_auth: {username: " + user + ", password_file: pw}\n" +
		"http_headers:\n  X-Gateway-Key: {secrets: [" + hdr + "]}\n  x-team: {values: [" + plain + "]}\n"
	if err := os.WriteFile(httpCfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	runDir, stdout, stderr := sweepSecretEcho(t, dir, "6", "--http.config.file", httpCfg)
	var m struct {
		Fingerprint struct {
			Target struct {
				HTTPConfig *struct {
					Scheme, Auth string
					Headers      []string
				} `json:"http_config"`
			} `json:"target"`
		} `json:"fingerprint"`
	}
	readJSON(t, filepath.Join(runDir, artifacts.ManifestFile), &m)
	if h := m.Fingerprint.Target.HTTPConfig; h == nil || h.Scheme != "http" || h.Auth != "basic" ||
		strings.Join(h.Headers, ",") != "X-Gateway-Key,X-Team" {
		t.Fatalf("manifest http_config %+v", h)
	}
	if b, _ := os.ReadFile(filepath.Join(runDir, artifacts.ErrorsFile)); !bytes.Contains(b, []byte("http_4xx")) {
		t.Errorf("errors-redacted.jsonl lacks the echoing 401s (the credentials were not sent?):\n%s", b)
	}
	encoded := base64.StdEncoding.EncodeToString([]byte(user + ":" + pw))
	for _, s := range []string{pw, encoded, hdr, plain, user} {
		noSecret(t, "stdout", stdout, s)
		noSecretInTree(t, runDir, s)
	}
	for _, s := range []string{pw, encoded, hdr} {
		noSecret(t, "the log", stderr, s)
	}
}
