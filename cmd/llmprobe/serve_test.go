package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/testutil"
)

// startServe runs `llmprobe serve args...` until the test ends and returns
// its web address and log.
func startServe(t *testing.T, args ...string) (string, *testutil.SyncBuffer, func() int) {
	t.Helper()
	return startCommand(t, "serve", "/-/healthy", args...)
}

// startCommand runs `llmprobe command --web.listen-address ADDR args...`
// on a free address until the test ends or stop is called, and returns its
// base URL once GET readyPath answers, its log, and stop (it cancels the
// command, waits for it and returns its exit code).
func startCommand(t *testing.T, command, readyPath string, args ...string) (string, *testutil.SyncBuffer, func() int) {
	t.Helper()
	addr := testutil.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	logs := &testutil.SyncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{command, "--web.listen-address", addr}, args...), io.Discard, logs)
	}()
	stopped := false
	code := 0
	stop := func() int {
		if !stopped {
			stopped = true
			cancel()
			select {
			case code = <-done:
			case <-time.After(20 * time.Second):
				t.Fatalf("%s did not stop; log:\n%s", command, logs.String())
			}
		}
		return code
	}
	t.Cleanup(func() { stop() })
	// Wait for the web server.
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + readyPath)
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not come up: %v; log:\n%s", command, err, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return "http://" + addr, logs, stop
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	return httpAnswer(t, resp, err)
}

// postReload posts /-/reload to base and returns the answer's status and
// body.
func postReload(t *testing.T, base string) (int, string) {
	t.Helper()
	resp, err := http.Post(base+"/-/reload", "", nil)
	return httpAnswer(t, resp, err)
}

// httpAnswer returns the status and body of resp, failing the test on err.
func httpAnswer(t *testing.T, resp *http.Response, err error) (int, string) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func waitMetric(t *testing.T, base, substr string) string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, body := get(t, base+"/metrics")
		if strings.Contains(body, substr) {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics never contained %q:\n%s", substr, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestServeEmbeddedSimulator(t *testing.T) {
	t.Chdir(t.TempDir()) // no ./llmprobe.yml here
	base, logs, stop := startServe(t, "--web.enable-lifecycle", "--web.enable-pprof")
	body := waitMetric(t, base, `llmprobe_requests_total{outcome="success",probe="default",target="simulator"} 1`)
	for _, want := range []string{
		"llmprobe_time_to_first_token_seconds_bucket",
		"llmprobe_e2e_request_latency_seconds_bucket",
		"llmprobe_request_send_lag_seconds_bucket",
		"llmprobe_build_info",
		"llmprobe_config_last_reload_successful 1",
		`llmprobe_target_info{engine="vllm",max_model_len="8192",model="llmprobe-sim"`,
		"go_goroutines",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if !strings.Contains(logs.String(), "BUILT-IN SIMULATOR") {
		t.Errorf("log does not say it probes the simulator:\n%s", logs.String())
	}
	if code, page := get(t, base+"/"); code != 200 || !strings.Contains(page, "built-in vLLM simulator") || !strings.Contains(page, "Probe default") {
		t.Errorf("landing page: %d\n%s", code, page)
	}
	if code, _ := get(t, base+"/-/ready"); code != 200 {
		t.Errorf("ready: %d", code)
	}
	if code, _ := postReload(t, base); code != http.StatusConflict {
		t.Errorf("reload without a config file: %d, want 409", code)
	}
	if code, body := get(t, base+"/debug/pprof/"); code != 200 || !strings.Contains(body, "goroutine") {
		t.Errorf("pprof with --web.enable-pprof: %d", code)
	}
	if code := stop(); code != 0 {
		t.Errorf("exit code %d; log:\n%s", code, logs.String())
	}
}

func TestServeConfigFileReload(t *testing.T) {
	dir := t.TempDir()
	// A target nobody listens on: probes fail as connect errors, which is
	// enough to see the probe names in the metrics.
	down := testutil.FreeAddr(t)
	path := filepath.Join(dir, "llmprobe.yml")
	write := func(probe string) {
		t.Helper()
		cfg := fmt.Sprintf("targets:\n  - name: t1\n    base_url: http://%s\n    probes:\n      - name: %s\n        rate: 20\n", down, probe)
		if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("first")
	base, logs, _ := startServe(t, "--config.file", path, "--web.enable-lifecycle")
	waitMetric(t, base, `llmprobe_requests_total{outcome="connect",probe="first",target="t1"}`)

	write("second")
	if code, _ := postReload(t, base); code != 200 {
		t.Fatalf("reload: %d; log:\n%s", code, logs.String())
	}
	body := waitMetric(t, base, `probe="second"`)
	if strings.Contains(body, `probe="first"`) {
		t.Error("series of the removed probe remain after reload")
	}

	// A broken file keeps the old config and flips the gauge.
	if err := os.WriteFile(path, []byte("targets:\n  - name: t1\n    base_url: http://x\n    probes: [{name: p, rate: -1}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, msg := postReload(t, base); code != 500 || !strings.Contains(msg, "rate") {
		t.Errorf("bad reload: %d %s", code, msg)
	}
	body = waitMetric(t, base, "llmprobe_config_last_reload_successful 0")
	if !strings.Contains(body, `probe="second"`) {
		t.Error("old config not kept after a failed reload")
	}
}

func TestServeConfigCheck(t *testing.T) {
	t.Setenv("VLLM_B_API_KEY", "sk-test")
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"serve", "--config.file", "../../deploy/examples/llmprobe.yml", "--config.check"}, &out, &errb); code != 0 {
		t.Errorf("example config: exit %d: %s", code, errb.String())
	}
	bad := filepath.Join(t.TempDir(), "bad.yml")
	os.WriteFile(bad, []byte("targets:\n  - name: a\n    base_url: http://h:1\n    probes: [{name: p, rate: 0}]\n"), 0o644)
	errb.Reset()
	if code := run(context.Background(), []string{"serve", "--config.file", bad, "--config.check"}, &out, &errb); code != 1 {
		t.Errorf("bad config: exit %d", code)
	}
	if !strings.Contains(errb.String(), "bad.yml") || !strings.Contains(errb.String(), "targets[0].probes[0].rate") {
		t.Errorf("error does not name file and field: %q", errb.String())
	}
}

func TestCLIErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown command", []string{"bogus"}, 2, "bogus"},
		{"bad log level", []string{"--log.level", "loud", "version"}, 2, "log.level"},
		{"bad api", []string{"serve", "--api", "grpc"}, 2, "--api"},
		{"help", []string{"--help"}, 0, ""},
		{"serve help", []string{"serve", "--help"}, 0, ""},
		{"bad shard", []string{"serve", "--shard", "5/5"}, 2, "--shard"},
		{"negative max requests", []string{"serve", "--web.max-requests=-1"}, 2, "--web.max-requests must be >= 0 (0: no limit), got -1"},
		{"bad push label", []string{"serve", "--push.url", "http://127.0.0.1:1/x", "--push.extra-label", "9bad=x"}, 2, "push.extra-label"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := run(context.Background(), tc.args, &out, &errb); code != tc.code {
				t.Errorf("exit %d, want %d; stderr %s", code, tc.code, errb.String())
			}
			if !strings.Contains(errb.String(), tc.want) {
				t.Errorf("stderr %q lacks %q", errb.String(), tc.want)
			}
		})
	}
}

func TestServePush(t *testing.T) {
	t.Chdir(t.TempDir())
	got := make(chan string, 16)
	srv := http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rd io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				return
			}
			rd = zr
		}
		b, _ := io.ReadAll(rd)
		select {
		case got <- r.Method + " " + r.URL.Path + "\n" + string(b):
		default:
		}
	})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	defer srv.Close()
	startServe(t, "--push.url", "http://"+l.Addr().String()+"/metrics/job/llmprobe", "--push.interval", "200ms",
		"--push.extra-label", "site=lab", "--push.method", "PUT")
	select {
	case body := <-got:
		if !strings.HasPrefix(body, "PUT /metrics/job/llmprobe\n") {
			t.Errorf("push request: %.80q", body)
		}
		if !strings.Contains(body, `llmprobe_build_info{`) || !strings.Contains(body, `site="lab"`) {
			t.Errorf("pushed body lacks llmprobe metrics with the extra label:\n%.2000s", body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no push arrived")
	}
}

func TestCheckConfigCommand(t *testing.T) {
	t.Setenv("VLLM_B_API_KEY", "sk-test")
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"check-config", "../../deploy/examples/llmprobe.yml", "../../prober/config/testdata/multi-problem.yml"}, &out, &errb); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if !strings.Contains(out.String(), "llmprobe.yml: OK") {
		t.Errorf("stdout %q lacks the OK line", out.String())
	}
	lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "multi-problem.yml:7:") || !strings.Contains(lines[2], "multi-problem.yml:13:") {
		t.Errorf("want the 3 problems in file order, got:\n%s", errb.String())
	}
}

// TestServeHardenedDefaults starts the daemon without the lifecycle and
// pprof flags: POST /-/reload is refused (403) while SIGHUP still reloads,
// /debug/pprof is absent, and /config shows no query value of a metrics URL.
func TestServeHardenedDefaults(t *testing.T) {
	const secret = "sig-s3cr3t-42"
	dir := t.TempDir()
	down := testutil.FreeAddr(t)
	path := filepath.Join(dir, "llmprobe.yml")
	write := func(probe string) {
		t.Helper()
		cfg := fmt.Sprintf("targets:\n  - name: t1\n    base_url: http://%s\n    metrics_url: http://%s/federate?X-Amz-Signature=%s\n    probes:\n      - name: %s\n        rate: 20\n", down, down, secret, probe)
		if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("first")
	base, logs, _ := startServe(t, "--config.file", path)
	waitMetric(t, base, `probe="first"`)

	write("second")
	if code, msg := postReload(t, base); code != http.StatusForbidden || !strings.Contains(msg, "--web.enable-lifecycle") {
		t.Errorf("reload without --web.enable-lifecycle: %d %s", code, msg)
	}
	if _, body := get(t, base+"/metrics"); strings.Contains(body, `probe="second"`) {
		t.Error("a refused reload reloaded")
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitMetric(t, base, `probe="second"`)
	if !strings.Contains(logs.String(), "config reloaded") {
		t.Errorf("no reload logged:\n%s", logs.String())
	}

	if code, _ := get(t, base+"/debug/pprof/"); code != http.StatusNotFound {
		t.Errorf("pprof without --web.enable-pprof: %d, want 404", code)
	}
	code, page := get(t, base+"/config")
	if code != 200 || strings.Contains(page, secret) || !strings.Contains(page, "X-Amz-Signature=<redacted>") {
		t.Errorf("/config: %d\n%s", code, page)
	}
}

// TestServeBadWebConfig checks that an invalid --web.config.file stops the
// daemon before any probe starts.
func TestServeBadWebConfig(t *testing.T) {
	dir := t.TempDir()
	badHash := filepath.Join(dir, "web.yml")
	if err := os.WriteFile(badHash, []byte("basic_auth_users:\n  alice: not-a-bcrypt-hash\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	noCert := filepath.Join(dir, "tls.yml")
	if err := os.WriteFile(noCert, []byte("tls_server_config:\n  cert_file: missing.crt\n  key_file: missing.key\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, file, want string
	}{
		{"bad bcrypt hash", badHash, "bcrypt"},
		{"missing certificate", noCert, "missing.crt"},
		{"unknown key", writeFile(t, dir, "typo.yml", "basic_auth_user: {}\n"), "basic_auth_user"},
		{"endless file", "/dev/zero", "larger than 1MiB, the cap on a web config file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := &testutil.SyncBuffer{}
			done := make(chan int, 1)
			go func() {
				done <- run(context.Background(), []string{"serve", "--web.listen-address", testutil.FreeAddr(t),
					"--web.config.file", tc.file, "--target", "http://" + testutil.FreeAddr(t)}, io.Discard, logs)
			}()
			var code int
			select {
			case code = <-done:
			case <-time.After(20 * time.Second):
				t.Fatalf("serve kept running with an invalid web config; log:\n%s", logs.String())
			}
			out := logs.String()
			if code != 1 || !strings.Contains(out, "invalid --web.config.file") || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d, want 1 with %q; log:\n%s", code, tc.want, out)
			}
			if strings.Contains(out, "probes scheduled") {
				t.Errorf("probes started before the web config was checked; log:\n%s", out)
			}
		})
	}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCheckConfigEndlessFile is check-config /dev/zero: an error naming the
// file and the cap, not an unbounded read.
func TestCheckConfigEndlessFile(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"check-config", "/dev/zero"}, &out, &errb); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if want := "/dev/zero: the file is larger than 4MiB, the cap on a configuration file\n"; errb.String() != want {
		t.Errorf("stderr %q, want %q", errb.String(), want)
	}
}
