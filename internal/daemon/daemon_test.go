package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-kit/log"
	toolkit "github.com/prometheus/exporter-toolkit/web"
	"go.uber.org/goleak"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/internal/testutil"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// options are a daemon's options on a free address, logging to the
// buffer returned.
func options(t *testing.T) (Options, string, *testutil.SyncBuffer) {
	t.Helper()
	addr := testutil.FreeAddr(t)
	systemd, webConfig := false, ""
	logs := &testutil.SyncBuffer{}
	return Options{
		Logger:              log.NewLogfmtLogger(logs),
		Web:                 &toolkit.FlagConfig{WebListenAddresses: &[]string{addr}, WebSystemdSocket: &systemd, WebConfigFile: &webConfig},
		ShutdownTimeout:     10 * time.Second,
		EnableLifecycle:     true,
		SweepsDir:           t.TempDir(),
		SweepsMaxConcurrent: 1,
	}, "http://" + addr, logs
}

// fixedConfig gives o the config that flags build for tg at base (never
// reloaded).
func fixedConfig(t *testing.T, o *Options, base string, tg Target) {
	t.Helper()
	tg.URL = base
	cfg, err := tg.Config()
	if err != nil {
		t.Fatal(err)
	}
	o.Config, o.ConfigFrom = cfg, base
}

// start runs the daemon until the test ends; stop cancels it and returns
// Run's error.
func start(t *testing.T, o Options) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, o) }()
	var err error
	stopped := false
	stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			err = <-done
		}
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// get returns the body of url once it contains want (every 50 ms, up to
// 20 s).
func get(t *testing.T, url, want string, logs *testutil.SyncBuffer) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var body string
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if body = string(b); strings.Contains(body, want) {
				return body
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s never had %q; last body:\n%.3000s\nlog:\n%s", url, want, body, logs.String())
	return ""
}

// writeFile writes content to path (mode 0644).
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// setConfig makes llmprobe.yml in dir o's config file, holding yml.
func setConfig(t *testing.T, o *Options, dir, yml string) {
	t.Helper()
	o.ConfigFile = filepath.Join(dir, "llmprobe.yml")
	writeFile(t, o.ConfigFile, yml)
}

// reload POSTs the daemon's /-/reload and requires the status want; what
// names the reload in the error.
func reload(t *testing.T, url, what string, want int) {
	t.Helper()
	resp, err := http.Post(url+"/-/reload", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != want {
		t.Errorf("%s: %d, want %d", what, resp.StatusCode, want)
	}
}

// TestRunFromFile runs the daemon from a config file against the
// simulator: the landing page's summary (the window observer) counts its
// requests with the file's goodput objective, SIGHUP reloads a changed
// objective in place, an invalid file keeps the old config, and cancelling
// the context shuts down cleanly.
func TestRunFromFile(t *testing.T) {
	base, _ := simtest.Start(t, simulator.DefaultConfig())
	o, url, logs := options(t)
	config := func(objective float64) string {
		return fmt.Sprintf("targets:\n  - name: sim\n    base_url: %s\n    goodput_objective: %v\n    labels: {canary: chat, role: baseline}\n"+
			"    probes:\n      - name: p\n        rate: 20\n", base, objective)
	}
	setConfig(t, &o, t.TempDir(), config(0.9))
	hup := make(chan os.Signal, 1)
	o.Hup = hup
	stop := start(t, o)
	get(t, url+"/", `<td class="objective">90.0 %</td><td class="slo-state good">met</td>`, logs)
	// The manager's target events reach the landing page: the engine
	// discovery found, the canary labels (issue 21 Deliver 6, issue 22 V10).
	get(t, url+"/", `<td class="engine">vllm</td>`, logs)
	get(t, url+"/", `data-canary="chat"`, logs)

	writeFile(t, o.ConfigFile, config(0.95))
	hup <- syscall.SIGHUP
	get(t, url+"/", `<td class="objective">95.0 %</td>`, logs)

	writeFile(t, o.ConfigFile, "targets: [{name: sim, base_url: x}]\n")
	reload(t, url, "reload of an invalid file", http.StatusInternalServerError)
	get(t, url+"/metrics", "llmprobe_config_last_reload_successful 0", logs)
	get(t, url+"/", `<td class="objective">95.0 %</td>`, logs)

	if err := stop(); err != nil {
		t.Errorf("Run after cancel: %v", err)
	}
	for _, want := range []string{"msg=\"config reloaded\"", "msg=\"error reloading config, keeping the old one\"", "msg=stopped"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, logs.String())
		}
	}
}

// TestRunFixedConfig runs the daemon on a config built from flags: it is
// never reloaded (SIGHUP is ignored with a warning, /-/reload answers 409).
func TestRunFixedConfig(t *testing.T) {
	base, _ := simtest.Start(t, simulator.DefaultConfig())
	o, url, logs := options(t)
	fixedConfig(t, &o, base, Target{Name: "flags", API: "completions", SLO: []string{"ttft:800"}})
	hup := make(chan os.Signal, 1)
	o.Hup = hup
	start(t, o)
	get(t, url+"/metrics", `llmprobe_requests_total{outcome="success",probe="default",target="flags"}`, logs)
	// Once a request succeeded: the client's check of itself, and the HTTP
	// phases of the request (its connection may be discovery's: then it
	// has no connect phase).
	success := regexp.MustCompile(`(?m)^llmprobe_requests_total\{outcome="success",probe="default",target="flags"\} [1-9]`)
	var body string
	deadline := time.Now().Add(20 * time.Second)
	for !success.MatchString(body) {
		if time.Now().After(deadline) {
			t.Fatalf("no successful request counted:\n%s", grepLines(body, "requests_total"))
		}
		time.Sleep(20 * time.Millisecond)
		body = get(t, url+"/metrics", "llmprobe_requests_total", logs)
	}
	for _, want := range []string{`(?m)^llmprobe_client_sched_latency_seconds_bucket\{le="0.001"\} [1-9]`,
		`(?m)^llmprobe_http_phase_seconds_count\{phase="wait",probe="default",target="flags"\} [1-9]`} {
		if !regexp.MustCompile(want).MatchString(body) {
			t.Errorf("/metrics lacks %s:\n%s", want, grepLines(body, "phase_seconds_count", "sched_latency"))
		}
	}
	hup <- syscall.SIGHUP
	get(t, url+"/-/healthy", "Healthy", logs)
	reload(t, url, "reload without a config file", http.StatusConflict)
	deadline = time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "SIGHUP ignored") {
		if time.Now().After(deadline) {
			t.Fatalf("no SIGHUP warning; log:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRunErrors checks the failures Run reports: a bad push URL is a bad
// setting (ErrUsage), a bad web config file and a failing simulator are
// not; each is logged.
func TestRunErrors(t *testing.T) {
	base, _ := simtest.Start(t, simulator.DefaultConfig())
	f := func(name string, edit func(o *Options), usage bool, logged string) {
		t.Helper()
		o, _, logs := options(t)
		cfg, err := Target{URL: base, API: "completions"}.Config()
		if err != nil {
			t.Fatal(err)
		}
		o.Config = cfg
		edit(&o)
		err = Run(context.Background(), o)
		if err == nil || errors.Is(err, ErrUsage) != usage {
			t.Errorf("%s: Run = %v, want an error (usage %v)", name, err, usage)
		}
		if !strings.Contains(logs.String(), logged) {
			t.Errorf("%s: log lacks %q:\n%s", name, logged, logs.String())
		}
	}
	f("push url", func(o *Options) { o.Push = Push{URL: "ftp://x", Interval: time.Second, Method: "POST"} }, true, `msg="invalid --push.url"`)
	missing := filepath.Join(t.TempDir(), "missing.yml")
	f("web config", func(o *Options) { o.Web.WebConfigFile = &missing }, false, `msg="invalid --web.config.file"`)
	f("simulator", func(o *Options) {
		o.Config = nil
		o.Simulator.Start = func(log.Logger) (func(), string, error) { return nil, "", errors.New("no port") }
	}, false, `msg="cannot start the built-in simulator" err="no port"`)
}

// grepLines returns the lines of body that contain any of subs.
func grepLines(body string, subs ...string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		for _, s := range subs {
			if strings.Contains(l, s) {
				out = append(out, l)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}
