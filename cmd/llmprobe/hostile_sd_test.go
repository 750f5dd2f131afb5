package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/testutil"
)

// Issue 34's inputs N3, N4, N7 and N8 for TestHostileInputsReplay: service
// discovery and the OTLP exporter read through the bounded reader and
// follow no redirect.

// sdServer is an http_sd (or OTLP) server the test starts: its handler,
// and whether another port (where its redirects point) was reached.
type sdServer struct {
	url           string
	other, secret atomic.Int32 // requests the redirect's target got; with a secret
}

// hostileServer starts a server answering as mode says: "endless" (a
// chunked JSON answer of 2 GiB offered), "announced" (Content-Length 100
// MiB), "redirect" (every request to another port, which counts what it
// gets).
func hostileServer(t *testing.T, mode string) *sdServer {
	s := &sdServer{}
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.other.Add(1)
		if r.Header.Get("Authorization") != "" || r.Header.Get("X-Scope-OrgID") != "" {
			s.secret.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `[{"targets": ["127.0.0.1:1"]}]`)
	}))
	t.Cleanup(other.Close)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch mode {
		case "endless":
			chunk := []byte(`[{"targets": ["` + strings.Repeat("x", 64<<10))
			for i := 0; i < 2<<30/len(chunk); i++ {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		case "announced":
			w.Header().Set("Content-Length", "104857600")
			w.WriteHeader(http.StatusOK)
			fmt.Fprint(w, `[{"targets": [`)
		default:
			http.Redirect(w, r, other.URL+"/steal", http.StatusTemporaryRedirect)
		}
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

// discoveryEntry is a top-level discovery list with one entry.
func discoveryEntry(mechanism string) string {
	return "discovery:\n  - name: hostile\n    " + mechanism + "\n    target: {api: chat}\n"
}

// sdReload reloads the good config plus a discovery entry, then waits for
// the daemon's log to say want (the refresh's failure) and returns the
// reload's answer with that line.
func sdReload(entry func(t *testing.T, d *hostileDaemon) string, want string) func(*testing.T, *hostileDaemon) reply {
	return func(t *testing.T, d *hostileDaemon) reply {
		d.writeRaw(t, fmt.Sprintf(hostileConfig, d.sim)+entry(t, d))
		from := d.logs.Len() // only what the daemon logs from now on
		code, msg := d.do("POST", "/-/reload", "", nil)
		if code != http.StatusOK {
			return reply{code, msg}
		}
		var line string
		testutil.EventuallyWithin(t, 30*time.Second, "the log to say "+want, func() bool {
			l := d.logs.String()[from:]
			i := strings.Index(l, want)
			if i < 0 {
				return false
			}
			j := strings.IndexByte(l[i:], '\n')
			if j < 0 {
				j = len(l) - i
			}
			line = l[max(0, i-300) : i+j]
			return true
		})
		return reply{code, line}
	}
}

// httpSD is sdReload's entry of an http_sd server in mode.
func httpSD(mode string, srv **sdServer) func(*testing.T, *hostileDaemon) string {
	return func(t *testing.T, d *hostileDaemon) string {
		*srv = hostileServer(t, mode)
		return discoveryEntry(fmt.Sprintf("http_sd_configs: [{url: %q, refresh_interval: 1s, authorization: {credentials: sd-secret-c4n4ry}}]", (*srv).url+"/targets"))
	}
}

// fileSD is sdReload's entry of file_sd over dir/sd/*.json, after make
// put a file there.
func fileSD(name string, make func(d *hostileDaemon, path string) error) func(*testing.T, *hostileDaemon) string {
	return func(t *testing.T, d *hostileDaemon) string {
		dir := filepath.Join(d.dir, "sd-"+strings.TrimSuffix(name, ".json"))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := make(d, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
		return discoveryEntry(fmt.Sprintf("file_sd_configs: [{files: [%q], refresh_interval: 1s}]", filepath.Join(dir, "*.json")))
	}
}

// hostileSDCases are issue 34's rows of the replay.
func hostileSDCases() []hostileCase {
	var redirect *sdServer
	var endless, announced *sdServer
	return []hostileCase{
		{"N3 http_sd endless answer", "http_sd answering 2 GiB chunked + reload", sdReload(httpSD("endless", &endless), "larger than 8388608 bytes"), 200, "http_sd answer of http://"},
		{"N3 http_sd Content-Length 100 MiB", "http_sd announcing Content-Length: 104857600 + reload", sdReload(httpSD("announced", &announced), "announced 104857600 bytes (Content-Length), more than the 8388608 allowed"), 200, "not read"},
		{"N3 file_sd → /dev/zero", "file_sd file a symlink to /dev/zero + reload", sdReload(fileSD("zero.json", toDevZero), "zero.json: not a regular file (a character device)"), 200, "zero.json: not a regular file"},
		{"N4 file_sd FIFO", "file_sd file a FIFO + reload", sdReload(fileSD("fifo.json", mkfifo), "fifo.json: not a regular file (a FIFO)"), 200, "fifo.json: not a regular file (a FIFO)"},
		{"N7 http_sd redirect", "http_sd answering 307 to another port, with authorization + reload", func(t *testing.T, d *hostileDaemon) reply {
			r := sdReload(httpSD("redirect", &redirect), "a redirect; not followed")(t, d)
			r.body += fmt.Sprintf(" other port: %d requests, %d with the secret", redirect.other.Load(), redirect.secret.Load())
			return r
		}, 200, "other port: 0 requests, 0 with the secret"},
		{"N3 N4 good config again", "the good config + reload", reload(""), 200, ""},
		{"N3 check-config file_sd /dev/zero", "llmprobe check-config, file_sd file a symlink to /dev/zero", checkSDChild, 1, "files: file_sd file "},
		{"N4 N8 serve: FIFO, OTLP redirect, SIGTERM", "llmprobe serve with file_sd on a FIFO and tracing to a collector answering 307, then SIGTERM", fifoOTLPChild, 0, "exited on SIGTERM; the redirect's port got 0 requests"},
	}
}

// checkSDChild: check-config of a config whose file_sd matches a symlink
// to /dev/zero (it said OK).
func checkSDChild(t *testing.T, d *hostileDaemon) reply {
	dir := filepath.Join(d.dir, "check-sd")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero.json")); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	p := filepath.Join(d.dir, "check-sd.yml")
	cfg := fmt.Sprintf(hostileConfig, d.sim) + discoveryEntry(fmt.Sprintf("file_sd_configs: [{files: [%q]}]", filepath.Join(dir, "*.json")))
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return child(t, "check-config", p)
}

// fifoOTLPChild: a second serve whose file_sd matches a FIFO and whose
// traces go to a collector that redirects every export to another port
// (with the X-Scope-OrgID header); once both were tried it gets SIGTERM and
// must exit within 20 s (N4: the FIFO's open held shutdown forever), the
// other port having received nothing (N8: 9 exports reached it).
func fifoOTLPChild(t *testing.T, d *hostileDaemon) reply {
	col := hostileServer(t, "redirect")
	dir := filepath.Join(d.dir, "sd-serve")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.json"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(d.dir, "fifo-otlp.yml")
	cfg := fmt.Sprintf(hostileConfig, d.sim) + discoveryEntry(fmt.Sprintf("file_sd_configs: [{files: [%q]}]", filepath.Join(dir, "*.json"))) +
		fmt.Sprintf("tracing:\n  endpoint: %s\n  timeout: 2s\n  headers: {X-Scope-OrgID: otlp-secret-c4n4ry}\n", col.url)
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "serve", "--web.listen-address", testutil.FreeAddr(t), "--config.file", p)
	cmd.Env = append(os.Environ(), asMainEnv)
	var logs testutil.SyncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var werr error
	go func() { werr = cmd.Wait(); close(exited) }()
	defer func() {
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
	}()
	testutil.EventuallyWithin(t, 30*time.Second, "the FIFO refused and an export tried", func() bool {
		l := logs.String()
		return strings.Contains(l, "not a regular file (a FIFO)") && strings.Contains(l, "tracing: OpenTelemetry error")
	})
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
		if werr != nil {
			return reply{cmd.ProcessState.ExitCode(), "exit: " + werr.Error() + "\n" + tail(logs.String(), 2000)}
		}
	case <-time.After(20 * time.Second):
		return reply{-1, "still running 20 s after SIGTERM:\n" + tail(logs.String(), 2000)}
	}
	if strings.Contains(logs.String(), "otlp-secret-c4n4ry") {
		return reply{0, "the header's value was logged"}
	}
	return reply{0, fmt.Sprintf("exited on SIGTERM; the redirect's port got %d requests (%d with the header)", col.other.Load(), col.secret.Load())}
}
