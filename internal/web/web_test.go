package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmprobe/llmprobe/prober/manager"
)

type fixedStatus []manager.TargetStatus

func (f fixedStatus) Status() []manager.TargetStatus { return f }

func do(t *testing.T, h http.Handler, method, path string) (int, string) {
	t.Helper()
	rr := httptest.NewRecorder()
	h.ServeHTTP(rr, httptest.NewRequest(method, path, nil))
	b, _ := io.ReadAll(rr.Result().Body)
	return rr.Code, string(b)
}

func TestHandler(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "llmprobe_test_total", Help: "test"})
	reg.MustRegister(c)
	c.Inc()
	ready := false
	reloadErr := errors.New("targets[0].rate: must be > 0")
	now := time.Now()
	h := NewHandler(Options{
		Gatherer: reg,
		Status: fixedStatus{{
			Name: "b<script>", BaseURL: "http://vllm:8000", API: "chat", Model: "m", SLO: "ttft:800ms",
			Note: "built-in simulator",
			Probes: []manager.ProbeStatus{{
				Name: "p1", Rate: 2, Arrival: "poisson", Sent: 3, Good: 2, Failed: 1,
				Recent:   []manager.Result{{Time: now, RequestID: "req-1", TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", Outcome: "success", Good: true, TTFT: 12 * time.Millisecond}},
				Failures: []manager.Result{{Time: now, RequestID: "req-2", Outcome: "http_5xx", HTTPStatus: 500, Message: "boom"}},
			}},
		}, {Name: "a"}},
		Reload:          func(context.Context) error { return reloadErr },
		Ready:           func() bool { return ready },
		ConfigYAML:      func() string { return "targets: []\n" },
		EnableLifecycle: true,
	})

	for _, tc := range []struct {
		name, method, path string
		code               int
		want               []string
		notWant            []string
	}{
		{"metrics", "GET", "/metrics", 200, []string{"llmprobe_test_total 1"}, nil},
		{"healthy", "GET", "/-/healthy", 200, []string{"Healthy"}, nil},
		{"not ready", "GET", "/-/ready", 503, []string{"Not ready"}, nil},
		{"reload needs POST", "GET", "/-/reload", 405, nil, nil},
		{"reload error", "POST", "/-/reload", 500, []string{"failed to reload config", "must be > 0"}, nil},
		{"config", "GET", "/config", 200, []string{"targets: []"}, nil},
		{"unknown path", "GET", "/nope", 404, nil, nil},
		{"no pprof without the flag", "GET", "/debug/pprof/", 404, nil, nil},
		{"landing", "GET", "/", 200,
			[]string{"Target a", "Target b&lt;script&gt;", "Probe p1", "req-1", "trace 4bf92f3577b34da6a3ce929d0e0e4736", "12.0 ms", "req-2", "http_5xx", "boom", "built-in simulator", "/metrics"},
			[]string{"<script>"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := do(t, h, tc.method, tc.path)
			if code != tc.code {
				t.Errorf("status %d, want %d: %s", code, tc.code, body)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("body lacks %q:\n%s", w, body)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(body, w) {
					t.Errorf("body contains %q", w)
				}
			}
		})
	}
	ready = true
	reloadErr = nil
	if code, _ := do(t, h, "GET", "/-/ready"); code != 200 {
		t.Errorf("ready: %d", code)
	}
	if code, body := do(t, h, "POST", "/-/reload"); code != 200 || !strings.Contains(body, "reloaded") {
		t.Errorf("reload: %d %s", code, body)
	}
	// Target a sorts before b.
	_, body := do(t, h, "GET", "/")
	if strings.Index(body, "Target a") > strings.Index(body, "Target b") {
		t.Error("targets not sorted")
	}
}

// TestLifecycleAndPprofFlags checks the handlers behind
// --web.enable-lifecycle and --web.enable-pprof.
func TestLifecycleAndPprofFlags(t *testing.T) {
	reloads := 0
	reload := func(context.Context) error { reloads++; return nil }
	off := NewHandler(Options{Gatherer: prometheus.NewRegistry(), Reload: reload})
	if code, body := do(t, off, "POST", "/-/reload"); code != http.StatusForbidden || !strings.Contains(body, "--web.enable-lifecycle") {
		t.Errorf("reload without the lifecycle flag: %d %s", code, body)
	}
	if code, _ := do(t, off, "PUT", "/-/reload"); code != http.StatusForbidden {
		t.Errorf("PUT reload without the lifecycle flag: %d", code)
	}
	if reloads != 0 {
		t.Errorf("%d reloads without the lifecycle flag", reloads)
	}

	nothing := NewHandler(Options{Gatherer: prometheus.NewRegistry(), EnableLifecycle: true, EnablePprof: true,
		Reload: func(context.Context) error {
			return fmt.Errorf("%w: the daemon was not started from a config file", ErrNothingToReload)
		}})
	if code, body := do(t, nothing, "POST", "/-/reload"); code != http.StatusConflict || !strings.Contains(body, "not started from a config file") {
		t.Errorf("reload with nothing to reload: %d %s", code, body)
	}
	if code, body := do(t, nothing, "GET", "/debug/pprof/"); code != 200 || !strings.Contains(body, "goroutine") {
		t.Errorf("pprof index: %d %.200s", code, body)
	}
	if code, body := do(t, nothing, "GET", "/debug/pprof/goroutine?debug=1"); code != 200 || !strings.Contains(body, "goroutine profile") {
		t.Errorf("goroutine profile: %d %.200s", code, body)
	}
	os.Args = append(os.Args, "--push.url=https://user:pw-s3cr3t@push.example/api")
	defer func() { os.Args = os.Args[:len(os.Args)-1] }()
	if code, body := do(t, nothing, "GET", "/debug/pprof/cmdline"); code != 200 || strings.Contains(body, "s3cr3t") || !strings.Contains(body, "push.example") {
		t.Errorf("cmdline: %d %q", code, body)
	}
}
