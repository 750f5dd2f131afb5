package web

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/manager"
)

// probeServer serves NewHandler with cfg behind ProbeConfig on a loopback
// test server, stopped at cleanup.
func probeServer(t *testing.T, cfg *config.Config) string {
	t.Helper()
	srv := httptest.NewServer(NewHandler(Options{ProbeConfig: func() *config.Config { return cfg }}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// probeConfig parses a config whose probe_allowed_targets are allowed.
func probeConfig(t *testing.T, modules string, allowed ...string) *config.Config {
	t.Helper()
	y := "targets:\n  - {name: t, base_url: \"http://127.0.0.1:1\"}\n"
	if modules != "" {
		y += "modules:\n" + modules
	}
	if len(allowed) > 0 {
		y += "probe_allowed_targets:\n"
		for _, a := range allowed {
			y += "  - " + a + "\n"
		}
	}
	cfg, err := config.Parse([]byte(y), "probe.yml")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// getProbe sends GET /probe with the query and returns the status and body.
func getProbe(t *testing.T, base string, q url.Values) (int, string) {
	t.Helper()
	resp, err := http.Get(base + "/probe?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// probeOK probes through base's /probe with q, requires status 200 and
// returns the body and its metric families.
func probeOK(t *testing.T, base string, q url.Values) (string, map[string]*dto.MetricFamily) {
	t.Helper()
	code, body := getProbe(t, base, q)
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	return body, families(t, body)
}

// families parses a text exposition.
func families(t *testing.T, body string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("not the text format: %v\n%s", err, body)
	}
	return mfs
}

// gaugeValue returns the value of the series of name with the label pair
// (label "" for a series without labels), and whether it exists.
func gaugeValue(mfs map[string]*dto.MetricFamily, name, label, value string) (float64, bool) {
	mf, ok := mfs[name]
	if !ok {
		return 0, false
	}
	for _, m := range mf.GetMetric() {
		if label == "" && len(m.GetLabel()) == 0 {
			return m.GetGauge().GetValue(), true
		}
		for _, lp := range m.GetLabel() {
			if lp.GetName() == label && lp.GetValue() == value {
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}

// probeSimulator probes the simulator through /probe with module (of the
// modules added to the default one): the answer must be a 200 whose gauges
// have the values of want, and the positive ones positive. It returns the
// simulator's and the server's URL, the body and its families.
func probeSimulator(t *testing.T, modules, module string, want map[string]float64, positive ...string) (string, string, string, map[string]*dto.MetricFamily) {
	t.Helper()
	sim, _ := simtest.Start(t, simtest.Fast())
	base := probeServer(t, probeConfig(t, modules, sim))
	body, mfs := probeOK(t, base, url.Values{"target": {sim}, "module": {module}})
	for name, w := range want {
		if v, ok := gaugeValue(mfs, name, "", ""); !ok || v != w {
			t.Errorf("%s = %v (present %v), want %v\n%s", name, v, ok, w, body)
		}
	}
	for _, name := range positive {
		if v, ok := gaugeValue(mfs, name, "", ""); !ok || v <= 0 {
			t.Errorf("%s = %v (present %v), want > 0", name, v, ok)
		}
	}
	return sim, base, body, mfs
}

// TestProbeMessages: /probe with a module of api: messages (the Anthropic
// Messages API) measures the simulator's /v1/messages: success, status 200,
// the output tokens from message_delta's usage, TTFT and E2E.
func TestProbeMessages(t *testing.T) {
	probeSimulator(t, "  anthropic: {api: messages}\n", "anthropic", map[string]float64{"probe_success": 1,
		"probe_http_status_code": 200, "probe_output_tokens": 16, "probe_requests": 1}, "probe_ttft_seconds", "probe_e2e_seconds")
}

func TestProbeSimulator(t *testing.T) {
	sim, base, body, mfs := probeSimulator(t, "", "default", map[string]float64{"probe_success": 1, "probe_http_status_code": 200,
		"probe_output_tokens": 16, "probe_requests": 1, "probe_slo_met": 1}, "probe_duration_seconds", "probe_ttft_seconds", "probe_e2e_seconds")
	// TPOT is measured at the client's reads: on a busy host the 16 tokens
	// can all be read at once (TPOT 0, truthfully), so it is only bounded
	// by the time from the first token to the end.
	tpot, ok := gaugeValue(mfs, "probe_tpot_seconds", "", "")
	ttft, _ := gaugeValue(mfs, "probe_ttft_seconds", "", "")
	e2e, _ := gaugeValue(mfs, "probe_e2e_seconds", "", "")
	if !ok || tpot < 0 || tpot > e2e-ttft {
		t.Errorf("probe_tpot_seconds = %v (present %v), want in [0, e2e %v - ttft %v]", tpot, ok, e2e, ttft)
	}
	if _, ok := mfs["probe_error_info"]; ok {
		t.Errorf("probe_error_info present for a successful probe:\n%s", body)
	}
	// host:port alone is http://host:port, as blackbox_exporter takes it.
	code, body := getProbe(t, base, url.Values{"target": {strings.TrimPrefix(sim, "http://")}})
	if v, _ := gaugeValue(families(t, body), "probe_success", "", ""); code != http.StatusOK || v != 1 {
		t.Errorf("target without a scheme: status %d probe_success %v:\n%s", code, v, body)
	}
}

func TestProbeConnectRefused(t *testing.T) {
	target := "http://" + testutil.RefusedAddr(t)
	base := probeServer(t, probeConfig(t, "", target))
	body, mfs := probeOK(t, base, url.Values{"target": {target}, "module": {"default"}})
	if v, _ := gaugeValue(mfs, "probe_success", "", ""); v != 0 {
		t.Errorf("probe_success %v, want 0", v)
	}
	if v, ok := gaugeValue(mfs, "probe_error_info", "class", "connect"); !ok || v != 1 {
		t.Errorf("probe_error_info{class=\"connect\"} = %v (present %v), want 1:\n%s", v, ok, body)
	}
	if _, ok := mfs["probe_ttft_seconds"]; ok {
		t.Errorf("probe_ttft_seconds present without a successful request")
	}
}

func TestProbeRefusals(t *testing.T) {
	sim, _ := simtest.Start(t, simtest.Fast())
	base := probeServer(t, probeConfig(t, "  chat: {api: chat}\n", sim))
	for _, tc := range []struct {
		name string
		q    url.Values
		code int
		want string
	}{
		{"outside the allow-list", url.Values{"target": {"http://127.0.0.2:8000"}}, http.StatusForbidden,
			`target "http://127.0.0.2:8000" is not allowed: it must match probe_allowed_targets`},
		{"unknown module", url.Values{"target": {sim}, "module": {"nope"}}, http.StatusBadRequest, `unknown module "nope"`},
		{"no target", url.Values{"module": {"chat"}}, http.StatusBadRequest, "target parameter is missing"},
		{"count over the cap", url.Values{"target": {sim}, "count": {"11"}}, http.StatusBadRequest,
			`count must be an integer from 1 to 10, got "11"`},
		{"count zero", url.Values{"target": {sim}, "count": {"0"}}, http.StatusBadRequest, "count must be an integer from 1 to 10"},
		{"bad target", url.Values{"target": {"file:///etc/passwd"}}, http.StatusBadRequest, `scheme must be http or https, got "file"`},
		{"debug not a bool", url.Values{"target": {sim}, "debug": {"yes please"}}, http.StatusBadRequest, "debug must be true or false"},
		{"query too long", url.Values{"target": {sim}, "x": {strings.Repeat("a", MaxProbeQueryBytes)}}, http.StatusBadRequest,
			"the query is longer than 4096 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := getProbe(t, base, tc.q)
			if code != tc.code || !strings.Contains(body, tc.want) {
				t.Errorf("status %d %q, want %d containing %q", code, body, tc.code, tc.want)
			}
		})
	}
	resp, err := http.Post(base+"/probe?target="+url.QueryEscape(sim), "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: status %d, want 405", resp.StatusCode)
	}
	// Without probe_allowed_targets only the configured targets are allowed.
	def := probeServer(t, probeConfig(t, ""))
	if code, body := getProbe(t, def, url.Values{"target": {sim}}); code != http.StatusForbidden {
		t.Errorf("no allow-list, unconfigured target: status %d %q, want 403", code, body)
	}
}

// TestProbeCountAndDebug: count=N sends N requests; debug=true answers the
// request's log, the metrics and the module, with the x-request-id sent,
// its echo and the attribution header; a second probe of the same target
// and module while one runs gets 429.
func TestProbeCountAndDebug(t *testing.T) {
	cfg := simtest.Fast()
	cfg.ServedBy = "pod-a"
	sim, _ := simtest.Start(t, cfg)
	base := probeServer(t, probeConfig(t, "  attr:\n    attribution_headers: [x-served-by]\n", sim))
	body, mfs := probeOK(t, base, url.Values{"target": {sim}, "module": {"attr"}, "count": {"3"}})
	if v, _ := gaugeValue(mfs, "probe_requests", "", ""); v != 3 {
		t.Errorf("probe_requests %v, want 3", v)
	}
	if v, _ := gaugeValue(mfs, "probe_requests_succeeded", "", ""); v != 3 {
		t.Errorf("probe_requests_succeeded %v, want 3", v)
	}
	if v, ok := gaugeValue(mfs, "probe_backend_info", "backend", "pod-a"); !ok || v != 1 {
		t.Errorf("probe_backend_info{backend=\"pod-a\"} %v (present %v), want 1:\n%s", v, ok, body)
	}

	code, body := getProbe(t, base, url.Values{"target": {sim}, "module": {"attr"}, "debug": {"true"}})
	if code != http.StatusOK {
		t.Fatalf("debug: status %d: %s", code, body)
	}
	for _, want := range []string{"Logs for the probe:\n", "msg=\"beginning probe\"", "msg=\"request done\"",
		"x-served-by=pod-a", "msg=\"probe succeeded\"", "\n\n\nMetrics that would have been returned:\n",
		"\nprobe_success 1\n", "\n\n\nModule configuration:\n", "attribution_headers:\n    - x-served-by\n"} {
		if !strings.Contains(body, want) {
			t.Errorf("debug output lacks %q:\n%s", want, body)
		}
	}
	var sent, echo string
	for _, l := range strings.Split(body, "\n") {
		if !strings.Contains(l, `msg="request done"`) {
			continue
		}
		for _, f := range strings.Fields(l) {
			if v, ok := strings.CutPrefix(f, "request_id="); ok {
				sent = v
			}
			if v, ok := strings.CutPrefix(f, "request_id_echo="); ok {
				echo = v
			}
		}
	}
	if sent == "" || echo != sent {
		t.Errorf("x-request-id sent %q, echo recorded %q: want the echo of the id sent", sent, echo)
	}
}

// TestProbeOneAtATime: while a probe of (target, module) runs, another of
// the same pair is refused with 429; another module is not.
func TestProbeOneAtATime(t *testing.T) {
	cfg := simtest.Fast()
	cfg.Faults = simulator.Faults{StallBeforeFirstToken: 1, StallDuration: time.Minute}
	sim, _ := simtest.Start(t, cfg)
	pc := probeConfig(t, "", sim)
	h := &probeHandler{cfg: func() *config.Config { return pc }, inflight: map[string]bool{}}
	srv := httptest.NewServer(http.HandlerFunc(h.serve))
	defer srv.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/probe?target="+url.QueryEscape(sim), nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	key := sim + "\x00" + config.DefaultModuleName
	testutil.Eventually(t, "the first probe is in flight", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.inflight[key]
	})
	code, body := getProbe(t, srv.URL, url.Values{"target": {sim}, "module": {"default"}})
	if code != http.StatusTooManyRequests || !strings.Contains(body, "already running") {
		t.Errorf("second probe: status %d %q, want 429", code, body)
	}
	cancel()
	<-done
	testutil.Eventually(t, "the first probe ends when its scrape goes away", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return !h.inflight[key]
	})
	http.DefaultClient.CloseIdleConnections()
}

// TestLandingShowsBackend: the latest requests of a target with
// attribution_headers name the backend that answered.
func TestLandingShowsBackend(t *testing.T) {
	ts := fixedStatus{{Name: "gw", BaseURL: "http://gw", API: "completions", Probes: []manager.ProbeStatus{{
		Name: "p", Recent: []manager.Result{{RequestID: "r-1", Outcome: "success", Backend: "replica-7", Time: time.Now()}},
	}}}}
	code, body := do(t, NewHandler(Options{Gatherer: prometheus.NewRegistry(), Status: ts}), "GET", "/")
	if code != http.StatusOK || !strings.Contains(body, `r-1<br><span class="muted">backend replica-7</span>`) {
		t.Errorf("status %d; the latest request does not name its backend:\n%s", code, body)
	}
}

// TestProbeTooLongIsSkipped: a module whose prompt and output do not fit
// the served model's max_model_len sends nothing and says so.
func TestProbeTooLongIsSkipped(t *testing.T) {
	cfg := simtest.Fast()
	cfg.MaxModelLen = 256
	sim, _ := simtest.Start(t, cfg)
	base := probeServer(t, probeConfig(t, "  long: {workload: {input_tokens: {dist: fixed, value: 300}}}\n", sim))
	code, body := getProbe(t, base, url.Values{"target": {sim}, "module": {"long"}})
	mfs := families(t, body)
	if v, ok := gaugeValue(mfs, "probe_error_info", "class", ClassSkipped); code != http.StatusOK || !ok || v != 1 {
		t.Errorf("status %d, probe_error_info{class=%q} %v (present %v):\n%s", code, ClassSkipped, v, ok, body)
	}
	if v, _ := gaugeValue(mfs, "probe_success", "", ""); v != 0 {
		t.Errorf("probe_success %v, want 0", v)
	}
}

// TestProbeTraversal (issue 34 N5): with http://<upstream>/s/echo allowed,
// every dot-segment, encoded-slash and backslash form of the target is
// answered 400 naming why, and the upstream gets no request at all; a
// target under the prefix is sent there (so the upstream does see what
// /probe sends: its model discovery, /v1/models, answered 404 here).
func TestProbeTraversal(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.RequestURI)
		mu.Unlock()
		http.NotFound(w, r)
	}))
	t.Cleanup(up.Close)
	base := probeServer(t, probeConfig(t, "", up.URL+"/s/echo"))
	for _, tc := range []struct{ path, want string }{
		{"/s/echo/../ok", `a ".." segment`},
		{"/s/echo/%2e%2e/ok", `a "%2e%2e" segment`},
		{"/s/echo/%2E%2E/ok", `a "%2E%2E" segment`},
		{"/s/echo%2F..%2Fok", "an encoded / (%2F)"},
		{"/s/echo%2f..%2fok", "an encoded / (%2F)"},
		{"/s/echo/x/../../ok", `a ".." segment`},
		{"/s/echo/..", `a ".." segment`},
		{"/s/echo/../", `a ".." segment`},
		{"/s/echo/./x", `a "." segment`},
		{"/s/echo/.%2e/ok", `a ".%2e" segment`},
		{`/s/echo/..\ok`, `a backslash (\)`},
		{"/s/echo/..%5cok", `an encoded \ (%5C)`},
		{"/s/echo/%252e%252e/ok", "an encoded % (%25)"},
		{"/s/echo/..;/ok", `a ";"`},
		{"/s/echo//ok", "an empty segment (//)"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			code, body := getProbe(t, base, url.Values{"target": {up.URL + tc.path}})
			if code != http.StatusBadRequest || !strings.Contains(body, tc.want) {
				t.Errorf("status %d %q, want 400 containing %q", code, body, tc.want)
			}
		})
	}
	mu.Lock()
	if len(seen) != 0 {
		t.Errorf("the upstream got %q from refused targets", seen)
	}
	mu.Unlock()
	if code, body := getProbe(t, base, url.Values{"target": {up.URL + "/s/echo/x"}}); code != http.StatusOK {
		t.Fatalf("a target under the prefix: status %d %q", code, body)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 {
		t.Error("the upstream got nothing from a target under the prefix")
	}
	for _, s := range seen {
		if !strings.HasPrefix(s, "/s/echo/x/v1/") {
			t.Errorf("the upstream got %q, want requests under /s/echo/x/v1/", s)
		}
	}
}
