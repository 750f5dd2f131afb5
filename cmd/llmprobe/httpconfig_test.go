package main

import (
	"bytes"
	"context"
	"net/http"
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
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append(tt.args, "--out", t.TempDir(), "--log.level", "error"), &stdout, &stderr)
			if code != 2 {
				t.Errorf("exit code %d, want 2 (stderr %q)", code, stderr.String())
			}
			if got := stderr.String(); !strings.HasPrefix(got, tt.want) || strings.Count(got, "\n") != 1 {
				t.Errorf("stderr = %q, want one line starting with %q", got, tt.want)
			}
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
	base := secretEcho(t)
	resp, err := http.Post(base+"/tokenize", "application/json", strings.NewReader(`{"model":"llmprobe-sim","prompt":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	out := filepath.Join(dir, "runs")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"sweep", "--target", base, "--http.config.file", httpCfg, "--rates", "20",
		"--num-prompts", "9", "--warmups", "1", "--input-len", "16", "--output-len", "4", "--out", out, "--name", "secret",
		"--no-progress", "--log.level", "debug", "--max-send-lag", "10s", "--max-error-rate", "1"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, stderr.String())
	}
	noSecret(t, "stdout", stdout.String(), secretKey)
	noSecret(t, "the log", stderr.String(), secretKey)
	dirs, _ := filepath.Glob(filepath.Join(out, "*-secret"))
	if len(dirs) != 1 {
		t.Fatalf("run dirs %v", dirs)
	}
	if b, _ := os.ReadFile(filepath.Join(dirs[0], artifacts.ErrorsFile)); !bytes.Contains(b, []byte("http_4xx")) {
		t.Errorf("errors-redacted.jsonl lacks the echoing 401s (the token was not sent?):\n%s", b)
	}
	noSecretInTree(t, dirs[0], secretKey)
}
