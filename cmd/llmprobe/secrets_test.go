package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/simulator"
	ltestutil "github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/prober/scrape"
)

// secretKey is the API key of TestSecretsNeverLeave: recognisable in any
// output.
const secretKey = "sk-llmprobe-canary-4b1d9e0c7a"

// secretEcho serves the simulator but puts the Authorization header it
// receives into every surface a server controls: a response header on
// every answer, /v1/models (root, owned_by), /version, the target's
// /metrics label values, the first /tokenize answer (a 400 echoing it), and
// on the generation path in turn a 401 echoing it, a stream whose error
// event echoes it, and the simulator's good answer.
func secretEcho(t *testing.T) string {
	t.Helper()
	sim, err := simulator.New(simulator.DefaultConfig(), log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	simH := sim.Handler()
	var gen, tokenize atomic.Uint64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		key := strings.TrimPrefix(auth, "Bearer ")
		w.Header().Set("X-Echo", auth)
		switch r.URL.Path {
		case "/v1/models":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"object":"list","data":[{"id":"llmprobe-sim","object":"model","root":%q,"owned_by":%q,"max_model_len":8192}]}`, auth, key)
		case "/version":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"version":%q}`, "0.9-"+key)
		case "/metrics":
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			fmt.Fprintf(w, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=%q,auth=%q} 0\n", key, auth)
		case "/tokenize":
			if tokenize.Add(1) == 1 {
				http.Error(w, `{"error":{"message":"tokenizer refuses key `+key+`","code":400}}`, http.StatusBadRequest)
				return
			}
			simH.ServeHTTP(w, r)
		case "/v1/completions", "/v1/chat/completions":
			switch gen.Add(1) % 3 {
			case 0:
				http.Error(w, `{"error":{"message":"invalid api key: `+auth+`","code":401}}`, http.StatusUnauthorized)
			case 1:
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"text\":\" a\"}]}\n\nevent: error\ndata: {\"error\":{\"message\":\"revoked %s (%s)\"}}\n\n", key, auth)
			default:
				simH.ServeHTTP(w, r)
			}
		default:
			simH.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(func() { srv.Close(); sim.Close() })
	return srv.URL
}

// TestSecretsNeverLeave runs `llmprobe serve` with a recognisable API key
// against a server that echoes the key everywhere it can, at debug log
// level with pprof and the lifecycle API on, reloads it, and greps every
// output surface for the key: the log (every level), /metrics, every page
// (/, /config, /-/healthy, /-/ready), /debug/pprof/ and its cmdline (with a
// key-bearing URL on the command line), and a goroutine dump. Panics inside
// a request are covered by prober/client's TestPanicMessageIsRedacted.
// Sweep artifacts are checked with noSecretInTree (a sweep run by the
// sweep tests can call it on its output directory).
func TestSecretsNeverLeave(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	if err := os.WriteFile(keyFile, []byte(secretKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := secretEcho(t)
	cfgPath := filepath.Join(dir, "llmprobe.yml")
	writeCfg := func(rate int) {
		t.Helper()
		cfg := fmt.Sprintf(`global: {timeout: 5s, ttft_timeout: 2s, stall_timeout: 1s}
targets:
  - name: echo
    base_url: %s
    api_key_file: %s
    metrics_url: %s/metrics?api_key=%s
    probes:
      - name: p
        rate: %d
        workload: {input_tokens: {dist: fixed, value: 8}, output_tokens: {dist: fixed, value: 2}}
  - name: echo-chat
    base_url: %s
    api: chat
    api_key_file: %s
    probes:
      - name: p
        rate: 10
        workload: {input_tokens: {dist: fixed, value: 8}, output_tokens: {dist: fixed, value: 2}}
`, base, keyFile, base, secretKey, rate, base, keyFile)
		if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeCfg(20)
	// The pprof cmdline shows os.Args: put a key-bearing URL there, as a
	// --push.url with credentials would.
	oldArgs := os.Args
	os.Args = append(append([]string(nil), oldArgs...), "--push.url=https://u:"+secretKey+"@push.invalid/api/v1/import/prometheus", "--web.api-key="+secretKey)
	t.Cleanup(func() { os.Args = oldArgs })

	web, logs, stop := startServe(t, "--config.file", cfgPath, "--log.level", "debug",
		"--web.enable-pprof", "--web.enable-lifecycle")
	// Every echoing answer has reached the daemon: failures of both kinds
	// and successes, on both targets.
	// (The outcome series exist from the start at 0: wait for counts.)
	for _, target := range []string{"echo", "echo-chat"} {
		for _, outcome := range []string{"http_4xx", "stream", "success"} {
			ltestutil.Eventually(t, target+" requests with outcome "+outcome, func() bool {
				_, body := get(t, web+"/metrics")
				snap, err := scrape.NewSnapshot(time.Now(), []byte(body))
				if err != nil {
					t.Fatal(err)
				}
				n, _ := snap.Sum("llmprobe_requests_total", map[string]string{"target": target, "outcome": outcome})
				_, info := snap.Sum("llmprobe_target_info", map[string]string{"target": target})
				return n > 0 && info
			})
		}
	}
	writeCfg(25)
	resp, err := http.Post(web+"/-/reload", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("reload: %d", resp.StatusCode)
	}
	ltestutil.Eventually(t, "the reloaded probe", func() bool {
		_, body := get(t, web+"/config")
		return strings.Contains(body, "rate: 25")
	})

	surfaces := map[string]string{}
	for _, path := range []string{"/metrics", "/", "/config", "/-/healthy", "/-/ready",
		"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/goroutine?debug=2"} {
		code, body := get(t, web+path)
		if code != http.StatusOK {
			t.Errorf("GET %s: %d", path, code)
		}
		surfaces["GET "+path] = body
	}
	if !strings.Contains(surfaces["GET /debug/pprof/cmdline"], "push.invalid") {
		t.Errorf("the cmdline check did not see the test's arguments: %q", surfaces["GET /debug/pprof/cmdline"])
	}
	if code := stop(); code != 0 {
		t.Errorf("serve exited %d", code)
	}
	surfaces["log"] = logs.String()
	for _, lvl := range []string{"level=debug", "level=info", "level=warn"} {
		if !strings.Contains(surfaces["log"], lvl) {
			t.Errorf("the log has no %s line: the check would miss that level", lvl)
		}
	}
	for where, s := range surfaces {
		noSecret(t, where, s, secretKey)
	}
}

// noSecret fails the test when s holds secret, showing where.
func noSecret(t testing.TB, where, s, secret string) {
	t.Helper()
	if i := strings.Index(s, secret); i >= 0 {
		lo, hi := max(0, i-160), min(len(s), i+len(secret)+40)
		t.Errorf("the secret is in %s: ...%s...", where, s[lo:hi])
	}
}

// noSecretInTree fails the test for every file under dir that holds secret
// (gzip files are read decompressed): the check for a sweep's artifacts,
// snapshots included.
func noSecretInTree(t testing.TB, dir, secret string) {
	t.Helper()
	files := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.HasSuffix(path, ".gz") {
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			if b, err = io.ReadAll(zr); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
		}
		files++
		noSecret(t, path, string(b), secret)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Errorf("no file under %s: nothing was checked", dir)
	}
}

func TestNoSecretInTree(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "step-0"), 0o755); err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = io.WriteString(zw, "metric{auth=\"Bearer "+secretKey+"\"} 1\n")
	_ = zw.Close()
	if err := os.WriteFile(filepath.Join(dir, "step-0", "metrics-during.txt.gz"), gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "result.json"), []byte(`{"ok":true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ft := &fakeT{}
	noSecretInTree(ft, dir, secretKey)
	if ft.errors != 1 {
		t.Errorf("noSecretInTree reported %d errors for one leaking file, want 1", ft.errors)
	}
	ft = &fakeT{}
	noSecretInTree(ft, dir, "sk-not-there")
	if ft.errors != 0 {
		t.Errorf("noSecretInTree reported %d errors for a clean tree", ft.errors)
	}
}

// fakeT counts the errors a check reports, to test the check itself.
type fakeT struct {
	testing.TB
	errors int
}

func (f *fakeT) Helper()                   {}
func (f *fakeT) Errorf(string, ...any)     { f.errors++ }
func (f *fakeT) Fatal(args ...any)         { panic(fmt.Sprint(args...)) }
func (f *fakeT) Fatalf(s string, a ...any) { panic(fmt.Sprintf(s, a...)) }

// TestSweepSecretsNeverLeave runs `llmprobe sweep` with the recognisable key
// against the same echoing server, at debug log level: no file of the run
// directory (records, errors, snapshots, during-step scrapes, result,
// analysis, manifest, command line) and neither stdout nor the log holds
// the key.
func TestSweepSecretsNeverLeave(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	if err := os.WriteFile(keyFile, []byte(secretKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := secretEcho(t)
	// The echoing server refuses its first /tokenize (a calibration would
	// then meet its failing generations and stop the sweep before any
	// artifact): use that refusal up, so prompts are sized by /tokenize and
	// the sweep runs into its echoed errors.
	resp, err := http.Post(base+"/tokenize", "application/json", strings.NewReader(`{"model":"llmprobe-sim","prompt":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	out := filepath.Join(dir, "runs")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"sweep", "--target", base, "--api-key-file", keyFile, "--rates", "20",
		"--num-prompts", "9", "--warmups", "1", "--input-len", "16", "--output-len", "4", "--out", out, "--name", "secret",
		"--no-progress", "--log.level", "debug", "--max-send-lag", "10s", "--max-error-rate", "1"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, stderr.String())
	}
	for name, s := range map[string]string{"stdout": stdout.String(), "the log": stderr.String()} {
		if strings.Contains(s, secretKey) {
			t.Errorf("%s holds the API key:\n%s", name, s)
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "*-secret"))
	if len(dirs) != 1 {
		t.Fatalf("run dirs %v", dirs)
	}
	for _, f := range []string{artifacts.RecordsFile, artifacts.ErrorsFile, artifacts.MetricsDuringFile} {
		if _, err := os.Stat(filepath.Join(dirs[0], f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	// The echoed errors are there (redacted), so the check had something
	// to find.
	if b, _ := os.ReadFile(filepath.Join(dirs[0], artifacts.ErrorsFile)); !bytes.Contains(b, []byte("http_4xx")) || !bytes.Contains(b, []byte(`"stream"`)) {
		t.Errorf("errors-redacted.jsonl lacks the echoing 401s and error events:\n%s", b)
	}
	noSecretInTree(t, dirs[0], secretKey)
}
