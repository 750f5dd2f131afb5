package discovery

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/prober/config"
)

// logged returns Options whose mechanisms log into buf.
func logged(buf *testutil.SyncBuffer) Options {
	return Options{Slog: slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelError}))}
}

// TestHTTPSDBounded (issue 34, N3 and the Content-Length risk): an http_sd
// answer announcing more than config.MaxSDBytes is refused before it is
// read, and a chunked one without end (2 GiB offered) is cut at the bound:
// each a failed refresh naming the URL and the bound, counted, the last
// good targets kept, the process's heap far below the offered size.
func TestHTTPSDBounded(t *testing.T) {
	var mode atomic.Int32
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch mode.Load() {
		case 0:
			fmt.Fprint(w, `[{"targets": ["10.0.0.1:8000"]}]`)
		case 1: // announces 100 MiB, sends a little
			w.Header().Set("Content-Length", "104857600")
			w.WriteHeader(http.StatusOK)
			fmt.Fprint(w, `[{"targets": [`)
		case 2: // chunked, 2 GiB offered
			chunk := []byte(`[{"targets": ["` + strings.Repeat("x", 64<<10))
			for i := 0; i < 2<<30/len(chunk); i++ {
				n, err := w.Write(chunk)
				served.Add(int64(n))
				if err != nil {
					return
				}
			}
		}
	}))
	defer srv.Close()
	var buf testutil.SyncBuffer
	r, _ := runWith(t, fleetSD(srv.URL+"/targets?token=hidden", "        refresh_interval: 1s\n"), logged(&buf))
	waitTargets(t, r, nil, "fleet:10.0.0.1:8000")

	for _, c := range []struct {
		mode int32
		want string
	}{
		{1, fmt.Sprintf("http_sd answer of %s/targets?<redacted> announced 104857600 bytes (Content-Length), more than the %d allowed", srv.URL, config.MaxSDBytes)},
		{2, fmt.Sprintf("http_sd answer of %s/targets?<redacted> larger than %d bytes", srv.URL, config.MaxSDBytes)},
	} {
		before := r.metrics.failures.value("fleet")
		mode.Store(c.mode)
		testutil.Eventually(t, "the refusal logged", func() bool { return strings.Contains(buf.String(), c.want) })
		if r.metrics.failures.value("fleet") < before+1 {
			t.Errorf("mode %d: failure not counted", c.mode)
		}
		if !strings.Contains(buf.String(), c.want) {
			t.Errorf("mode %d: log lacks %q:\n%s", c.mode, c.want, tail(buf.String(), 2000))
		}
		if got, _ := names(r.Targets(nil)); !slices.Equal(got, []string{"fleet:10.0.0.1:8000"}) {
			t.Errorf("mode %d: targets %v, want the last good ones kept", c.mode, got)
		}
	}
	if strings.Contains(buf.String(), "hidden") {
		t.Error("the URL's query (a credential) was logged")
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if ms.HeapAlloc > 256<<20 {
		t.Errorf("heap %d MiB after the endless answers", ms.HeapAlloc>>20)
	}
	t.Logf("served %d MiB of the endless answers in all; heap %d MiB", served.Load()>>20, ms.HeapAlloc>>20)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// TestHTTPSDNoRedirect (N7): an http_sd server answering with a redirect
// to another port: the other port never gets a request (nor the
// Authorization), the refresh fails naming the redirect, counted.
func TestHTTPSDNoRedirect(t *testing.T) {
	var stolen atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stolen.Add(1)
		if strings.Contains(r.Header.Get("Authorization"), "s3cret") {
			stolen.Add(100)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `[{"targets": ["10.9.9.9:1"]}]`)
	}))
	defer other.Close()
	sd := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/steal", http.StatusFound)
	}))
	defer sd.Close()
	var buf testutil.SyncBuffer
	r, _ := runWith(t, fleetSD(sd.URL+"/targets", "        refresh_interval: 50ms\n        authorization:\n          credentials: s3cret\n"), logged(&buf))
	testutil.Eventually(t, "failures counted", func() bool { return r.metrics.failures.value("fleet") >= 2 })
	if n := stolen.Load(); n != 0 {
		t.Errorf("the redirect's target got %d requests (>= 100: with the credentials)", n)
	}
	if !strings.Contains(buf.String(), "HTTP status 302 Found (a redirect; not followed") {
		t.Errorf("log lacks the redirect:\n%s", tail(buf.String(), 2000))
	}
	if len(r.Targets(nil)) != 0 {
		t.Errorf("targets from the redirect: %v", r.Targets(nil))
	}
}

// TestFileSDNotRegular (N3, N4): a file_sd file replaced by a symlink to
// /dev/zero, and a FIFO matching the pattern: each a counted failure
// naming the file and its kind, the last good targets kept, and Stop
// returns (a FIFO's blocking open would hold it forever).
func TestFileSDNotRegular(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "a.json")
	if err := os.WriteFile(good, []byte(`[{"targets": ["10.0.0.1:8000"]}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	var buf testutil.SyncBuffer
	r, _ := runWith(t, fmt.Sprintf(`
discovery:
  - name: files
    file_sd_configs:
      - files: [%q]
        refresh_interval: 50ms
`, filepath.Join(dir, "*.json")), logged(&buf))
	waitTargets(t, r, nil, "files:10.0.0.1:8000")

	if err := os.Symlink("/dev/zero", good+".new"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(good+".new", good); err != nil { // atomic: the file never goes
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"file_sd file " + good + ": not a regular file (a character device)",
		"file_sd file " + fifo + ": not a regular file (a FIFO)",
	} {
		testutil.Eventually(t, want, func() bool { return strings.Contains(buf.String(), want) })
	}
	if r.metrics.failures.value("files") < 2 {
		t.Error("failures not counted")
	}
	if got, _ := names(r.Targets(nil)); !slices.Equal(got, []string{"files:10.0.0.1:8000"}) {
		t.Errorf("targets %v, want the last good ones kept", got)
	}
	done := make(chan struct{})
	go func() { r.Stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Stop blocked with a FIFO matching file_sd's pattern")
	}
}

// TestFileSDChanges: a file_sd file's change is picked up (watch or
// refresh_interval), a removed file's targets go.
func TestFileSDChanges(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.yml"), filepath.Join(dir, "b.json")
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p+".tmp", []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(p+".tmp", p); err != nil {
			t.Fatal(err)
		}
	}
	write(a, "- targets: ['10.0.0.1:8000']\n  labels: {zone: a}\n")
	write(b, `[{"targets": ["10.0.0.2:8000"]}]`)
	r, _ := run(t, fmt.Sprintf(`
discovery:
  - name: files
    file_sd_configs:
      - files: [%q, %q]
        refresh_interval: 1h
`, filepath.Join(dir, "*.yml"), filepath.Join(dir, "*.json")))
	ts := waitTargets(t, r, nil, "files:10.0.0.1:8000", "files:10.0.0.2:8000")
	if ts[0].Labels["zone"] != "a" {
		t.Errorf("labels %v", ts[0].Labels)
	}
	write(b, `[{"targets": ["10.0.0.3:8000"]}]`)
	waitTargets(t, r, nil, "files:10.0.0.1:8000", "files:10.0.0.3:8000")
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	waitTargets(t, r, nil, "files:10.0.0.3:8000")
}

// TestSDFollowRedirectsRefused (point 2): follow_redirects: true in a
// mechanism's HTTP client configuration is refused at load with its line.
func TestSDFollowRedirectsRefused(t *testing.T) {
	_, err := config.Parse([]byte(`
discovery:
  - name: fleet
    http_sd_configs:
      - url: http://sd.example/targets
        follow_redirects: true
`), "llmprobe.yml")
	want := "llmprobe.yml:6: discovery[0].http_sd_configs[0].follow_redirects: llmprobe never follows redirects"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("got %v, want %q...", err, want)
	}
	var ce *config.Error
	if !errors.As(err, &ce) {
		t.Errorf("%T, want a *config.Error", err)
	}
}

// TestCheckDiscoveryFiles: check-config's check of the file_sd files
// (N3: a symlink to /dev/zero was OK), each problem with the line of its
// files key.
func TestCheckDiscoveryFiles(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	dir := t.TempDir()
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero.json")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "llmprobe.yml")
	src := fmt.Sprintf(`
discovery:
  - name: files
    static_configs: [{targets: ["10.0.0.1:8000"]}]
    file_sd_configs:
      - files: [%q]
`, filepath.Join(dir, "*.json"))
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := path + ":6: discovery[0].file_sd_configs[0].files: file_sd file " + filepath.Join(dir, "zero.json") +
		": not a regular file (a character device)"
	if err := config.CheckDiscoveryFiles(path, c); err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
	if err := os.Remove(filepath.Join(dir, "zero.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ok.json"), []byte(`[{"targets": ["h:1"]}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := config.CheckDiscoveryFiles(path, c); err != nil {
		t.Errorf("a good file: %v", err)
	}
}
