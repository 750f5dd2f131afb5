package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/exporter-toolkit/web"
	"golang.org/x/crypto/bcrypt"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/internal/sweepd"
	"github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// sweepHandler is the daemon's handler with the sweep API on, over a sweep
// service whose target "sim" is a simulator (max_sweep_rate 100).
func sweepHandler(t *testing.T) (http.Handler, *sweepd.Service) {
	t.Helper()
	return sweepHandlerFor(t, "sim", "    max_sweep_rate: 100\n")
}

// sweepHandlerFor serves the sweep API over one target named name, probing
// a fast simulator, with extra lines of target config.
func sweepHandlerFor(t *testing.T, name, extra string) (http.Handler, *sweepd.Service) {
	t.Helper()
	url, _ := simtest.Start(t, simtest.Fast())
	cfg, err := config.Parse([]byte("targets:\n  - name: "+name+"\n    base_url: "+url+"\n"+extra), "t.yml")
	if err != nil {
		t.Fatal(err)
	}
	svc := sweepd.New(sweepd.Options{Dir: t.TempDir(),
		Embedded: func(string, workload.Spec) (bool, float64) { return true, 0 }})
	t.Cleanup(svc.Stop)
	svc.Apply(cfg)
	return NewHandler(Options{Gatherer: prometheus.NewRegistry(), EnableSweeps: true, Sweeps: svc}), svc
}

type reply struct {
	code   int
	header http.Header
	body   []byte
}

func (r reply) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("reply %d is not a JSON object: %v\n%s", r.code, err, r.body)
	}
	return m
}

func call(t *testing.T, c *http.Client, method, url, ctype string, body []byte) reply {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, b}
}

const jsonType = "application/json"

// TestSweepAPILifecycle starts a sweep over real HTTP, follows its
// progress, lists it, reads its files, and cancels another.
func TestSweepAPILifecycle(t *testing.T) {
	h, _ := sweepHandler(t)
	srv := httptest.NewServer(h)
	defer srv.Close()
	c := srv.Client()
	base := srv.URL + "/api/v1/sweeps"

	r := call(t, c, "POST", base, jsonType, []byte(`{"target": "sim", "rates": [20, 40], "num_prompts": 20, "input_len": 32,
		"output_len": 4, "goodput": {"ttft": "800ms", "tpot": "50ms"}, "name": "smoke", "max_send_lag": "250ms", "max_sched_latency": "250ms"}`))
	if r.code != http.StatusCreated {
		t.Fatalf("POST: %d %s", r.code, r.body)
	}
	id, _ := r.json(t)["id"].(string)
	if id == "" || r.header.Get("Location") != "/api/v1/sweeps/"+id {
		t.Fatalf("POST reply %s, Location %q", r.body, r.header.Get("Location"))
	}
	// One sweep per target: 409 with the running sweep's id.
	r = call(t, c, "POST", base, jsonType, []byte(`{"target": "sim", "rates": [1]}`))
	if m := r.json(t); r.code != http.StatusConflict || m["running_id"] != id {
		t.Errorf("second POST: %d %s", r.code, r.body)
	}
	// Progress, then the result.
	var st sweepd.Status
	sawStep := false
	testutil.EventuallyWithin(t, 2*time.Minute, "the sweep to finish", func() bool {
		r := call(t, c, "GET", base+"/"+id, "", nil)
		if r.code != http.StatusOK {
			t.Fatalf("GET: %d %s", r.code, r.body)
		}
		st = sweepd.Status{}
		if err := json.Unmarshal(r.body, &st); err != nil {
			t.Fatal(err)
		}
		sawStep = sawStep || st.Step != nil || len(st.Steps) > 0
		return st.Status != sweepd.StatusRunning
	})
	if !sawStep {
		t.Error("never saw a step in progress or finished before the end")
	}
	if st.Status != sweepd.StatusDone || st.Result == nil || len(st.Steps) != 2 || st.Name != "smoke" {
		t.Fatalf("done: %+v", st)
	}
	// 20 requests per step cannot decide an SLO p99 (the knee rules want
	// 100 samples): the knee is not bracketed, and the result says why.
	if st.Result.KneeFound || st.Result.Reason == "" {
		t.Errorf("knee found %v (knee %v), reason %q", st.Result.KneeFound, st.Result.Knee, st.Result.Reason)
	}
	if b, err := json.Marshal(st.Spec); err != nil || !strings.Contains(string(b), `"ttft":"800ms"`) {
		t.Errorf("spec %s %v", b, err)
	}
	r = call(t, c, "GET", base, "", nil)
	var list struct{ Sweeps []sweepd.Status }
	if err := json.Unmarshal(r.body, &list); err != nil || len(list.Sweeps) != 1 || list.Sweeps[0].ID != id {
		t.Errorf("list: %d %s", r.code, r.body)
	}
	// Files: inside the run directory only.
	r = call(t, c, "GET", base+"/"+id+"/files/analysis.md", "", nil)
	if r.code != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "text/markdown") || !bytes.Contains(r.body, []byte("knee")) {
		t.Errorf("analysis.md: %d %q %.200s", r.code, r.header.Get("Content-Type"), r.body)
	}
	r = call(t, c, "GET", base+"/"+id+"/files/goodput.svg", "", nil)
	if r.code != http.StatusOK || r.header.Get("Content-Type") != "image/svg+xml" || !strings.Contains(r.header.Get("Content-Security-Policy"), "sandbox") {
		t.Errorf("goodput.svg: %d %v", r.code, r.header)
	}
	for _, p := range []string{"/files/..%2F..%2Fsecret", "/files/nope.txt", "/files/%2Fetc%2Fpasswd"} {
		if r := call(t, c, "GET", base+"/"+id+p, "", nil); r.code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", p, r.code)
		}
	}
	if r := call(t, c, "GET", base+"/nope", "", nil); r.code != http.StatusNotFound {
		t.Errorf("unknown id: %d", r.code)
	}
	if r := call(t, c, "PUT", base+"/"+id, "", nil); r.code != http.StatusMethodNotAllowed {
		t.Errorf("PUT: %d", r.code)
	}

	// Cancel: the run directory is kept, marked incomplete.
	r = call(t, c, "POST", base, "", []byte(`{"target": "sim", "rates": [5], "duration": "1m", "input_len": 32, "output_len": 4}`))
	if r.code != http.StatusCreated {
		t.Fatalf("POST: %d %s", r.code, r.body)
	}
	id2 := r.json(t)["id"].(string)
	testutil.Eventually(t, "the second sweep's first step", func() bool {
		var s sweepd.Status
		_ = json.Unmarshal(call(t, c, "GET", base+"/"+id2, "", nil).body, &s)
		return s.Step != nil && s.Step.Done > 0
	})
	r = call(t, c, "DELETE", base+"/"+id2, "", nil)
	if m := r.json(t); r.code != http.StatusOK || m["status"] != sweepd.StatusCanceled {
		t.Fatalf("DELETE: %d %s", r.code, r.body)
	}
	r = call(t, c, "GET", base+"/"+id2+"/files/manifest.json", "", nil)
	if m := r.json(t); r.code != http.StatusOK || m["complete"] != false {
		t.Errorf("manifest of the canceled sweep: %d %.300s", r.code, r.body)
	}
}

// TestSweepAPIRefusals pins the 4xx answers: strict decoding naming the
// field, the caps, the body limit.
func TestSweepAPIRefusals(t *testing.T) {
	h, _ := sweepHandler(t)
	srv := httptest.NewServer(h)
	defer srv.Close()
	base := srv.URL + "/api/v1/sweeps"
	tests := []struct {
		name  string
		ctype string
		body  string
		code  int
		want  string
	}{
		{"unknown field", jsonType, `{"target": "sim", "rates": [1], "rate": 3}`, 400, "rate: unknown key (rate belongs in a probe)"},
		{"wrong type", jsonType, `{"target": "sim", "rates": [1], "num_prompts": "20"}`, 400, "num_prompts: want an integer, got string"},
		{"nested wrong type", jsonType, `{"target": "sim", "rates": [1], "workload": {"input_tokens": {"dist": "fixed", "value": "x"}, "output_tokens": {"dist": "fixed", "value": 4}}}`, 400, "workload.input_tokens.value: want an integer, got string"},
		{"nested unknown field", jsonType, `{"target": "sim", "rates": [1], "workload": {"input": 3}}`, 400, `workload: unknown field "input"`},
		{"rates shape", jsonType, `{"target": "sim", "rates": "fast"}`, 400, `rates: must be "auto" or a list of rates`},
		{"goodput", jsonType, `{"target": "sim", "rates": [1], "goodput": {"ttft": 800}}`, 400, `goodput.ttft: invalid duration "800" (want e.g. 800ms or 1.5s)`},
		{"duration", jsonType, `{"target": "sim", "rates": [1], "duration": 5}`, 400, `duration: want a duration string such as "30s", got number`},
		{"settings named as keys", jsonType, `{"target": "sim", "rates": [1], "num_prompts": 5, "duration": "1s"}`, 400,
			"num_prompts: give num_prompts or duration per step, not both"},
		{"a bound of the settings table", jsonType, `{"target": "sim", "rates": [1], "range_ratio": 1}`, 400, "range_ratio: must be in [0, 1), got 1"},
		{"over the cap", jsonType, `{"target": "sim", "rates": [1, 500]}`, 400, "rates: rate 500 req/s is over the target's max_sweep_rate (100 req/s)"},
		{"no load", jsonType, `{"target": "sim"}`, 400, `rates: required: "auto", a list of rates, or concurrency levels`},
		{"no target", jsonType, `{"rates": [1]}`, 400, "target: required"},
		{"unknown target", jsonType, `{"target": "nope", "rates": [1]}`, 400, `target: no such target: "nope"`},
		{"not JSON", jsonType, `{"target": `, 400, "invalid JSON"},
		{"syntax", jsonType, `{"target" "sim"}`, 400, "invalid JSON at byte"},
		{"not an object", jsonType, `[1]`, 400, "the body must be a JSON object"},
		{"trailing data", jsonType, `{"target": "sim", "rates": [1]} {}`, 400, "data after the JSON object"},
		{"empty", jsonType, ``, 400, "the body is empty"},
		{"empty key", jsonType, `{"target": "sim", "rates": [1], "": 3}`, 400, `the body has an empty key ("")`},
		{"control character", jsonType, "{\"target\": \"sim\", \"rates\": [1], \"name\": \"a\x7fb\"}", 400, "name: a value a spec cannot carry: control characters are not allowed"},
		// Invalid UTF-8 in a string: encoding/json takes it, the spec's YAML
		// decoder does not (found by FuzzSweepBody).
		{"not UTF-8", jsonType, "{\"target\": \"sim\", \"rates\": [1], \"name\": {\"x\": \"\x95\"}}", 400, "invalid JSON at byte 47: the body is not UTF-8"},
		{"content type", "text/plain", `{}`, 415, "the body must be JSON"},
		{"dataset file", jsonType, `{"target": "sim", "rates": [1], "workload": {"dataset": {"path": "/etc/passwd"}}}`, 400,
			"workload.dataset: the sweep API reads no file named in a request body: a dataset is accepted only in a scheduled sweep of the config file"},
		{"trace file", jsonType, `{"target": "sim", "workload": {"trace": {"path": "/etc/passwd", "speeds": [1]}}}`, 400,
			"workload.trace: the sweep API reads no file named in a request body: a trace is accepted only in a scheduled sweep"},
		{"schema file", jsonType, `{"target": "sim", "rates": [1], "workload": {"input_tokens": {"dist": "fixed", "value": 8}, "output_tokens": {"dist": "fixed", "value": 4}, ` +
			`"request": {"features": [{"kind": "json_schema", "share": 1, "schema_file": "/etc/passwd"}]}}}`, 400,
			"workload.request.features[0].schema_file: the sweep API reads no file named in a request body: a schema file is accepted only in a scheduled sweep of the config file (targets[].sweeps[]); give the schema inline (schema)"},
		{"answer checks file", jsonType, `{"target": "sim", "rates": [1], "answer_checks": "/etc/passwd"}`, 400,
			"answer_checks: the sweep API reads no file named in a request body: a check set file is accepted only in a scheduled sweep of the config file (targets[].sweeps[]); the API takes builtin"},
		// issue 22 risks: the last of duplicate keys won, so the rate a
		// reviewer read (1) was not the rate sent (500 would be refused).
		{"duplicate key", jsonType, `{"target": "sim", "rates": [1], "rates": [500]}`, 400, "rates: given twice: give each key once"},
		{"nested duplicate key", jsonType, `{"target": "sim", "rates": [1], "goodput": {"ttft": "800ms", "ttft": "80s"}}`, 400, "goodput.ttft: given twice"},
		{"too large", jsonType, `{"target": "sim", "name": "` + strings.Repeat("x", MaxSweepBodyBytes) + `"}`, 413, "the body is larger than 1048576 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := call(t, srv.Client(), "POST", base, tt.ctype, []byte(tt.body))
			msg, _ := r.json(t)["error"].(string)
			if r.code != tt.code || !strings.Contains(msg, tt.want) {
				t.Errorf("%d %q, want %d containing %q", r.code, msg, tt.code, tt.want)
			}
		})
	}
}

func TestSweepAPIDisabled(t *testing.T) {
	h := NewHandler(Options{Gatherer: prometheus.NewRegistry()})
	for _, p := range []string{"/api/v1/sweeps", "/api/v1/sweeps/abc", "/api/v1/sweeps/abc/files/manifest.json"} {
		code, body := do(t, h, "GET", p)
		if code != http.StatusForbidden || !strings.Contains(body, "--web.enable-sweeps") {
			t.Errorf("GET %s: %d %s", p, code, body)
		}
	}
	code, _ := do(t, h, "POST", "/api/v1/sweeps")
	if code != http.StatusForbidden {
		t.Errorf("POST: %d", code)
	}
}

// TestSweepAPIWebConfig serves the API through exporter-toolkit with a real
// web config (basic auth): without credentials it is 401, like every path.
func TestSweepAPIWebConfig(t *testing.T) {
	h, _ := sweepHandler(t)
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	webCfg := filepath.Join(dir, "web.yml")
	if err := os.WriteFile(webCfg, []byte(fmt.Sprintf("basic_auth_users:\n  ops: %s\n", hash)), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := testutil.FreeAddr(t)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan error, 1)
	go func() {
		done <- web.ListenAndServe(srv, &web.FlagConfig{WebListenAddresses: &[]string{addr}, WebConfigFile: &webCfg},
			slog.New(slog.DiscardHandler))
	}()
	t.Cleanup(func() {
		srv.Close()
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
	})
	c := &http.Client{Timeout: 10 * time.Second}
	url := "http://" + addr + "/api/v1/sweeps"
	testutil.Eventually(t, "the server to listen", func() bool {
		resp, err := c.Get(url)
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})
	body := []byte(`{"target": "sim", "rates": [1]}`)
	for _, m := range []string{"GET", "POST"} {
		if r := call(t, c, m, url, jsonType, body); r.code != http.StatusUnauthorized {
			t.Errorf("%s without credentials: %d", m, r.code)
		}
	}
	req, _ := http.NewRequest("GET", url, nil)
	req.SetBasicAuth("ops", "wrong")
	if resp, err := c.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("wrong password: %v %v", resp.StatusCode, err)
	} else {
		resp.Body.Close()
	}
	req, _ = http.NewRequest("GET", url, nil)
	req.SetBasicAuth("ops", "s3cret")
	resp, err := c.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("with credentials: %v %v", resp, err)
	}
	resp.Body.Close()
}

// TestSweepAPILoadBounds: the sweep API refuses, with 400 naming the key,
// a closed loop no process can hold and a rate that would be sent as a
// burst, and a JSON schema that recurses on the same value (issue 22 D1:
// `"concurrency":[100000000]` on a target without max_sweep_rate was
// accepted and took the daemon down; D3: 1e-300; D2: {"$ref": "#"}
// overflowed the stack at the first reply).
func TestSweepAPILoadBounds(t *testing.T) {
	h, svc := sweepHandlerFor(t, "open", "")
	srv := httptest.NewServer(h)
	defer srv.Close()
	for body, want := range map[string]string{
		`{"target": "open", "concurrency": [100000000]}`:              "concurrency: must be at most 10000 requests in flight (each holds a socket and a goroutine; shard a sweep for more), got 100000000",
		`{"target": "open", "rates": [1], "max_concurrency": 100000}`: "max_concurrency: must be at most 10000 requests in flight",
		`{"target": "open", "rates": [1e-300]}`:                       "rates: rate must be >= 0.01, got 1e-300",
		`{"target": "open", "rates": [1], "workload": {"input_tokens": {"dist": "fixed", "value": 8}, "output_tokens": {"dist": "fixed", "value": 4}, "request": {"features": [{"kind": "json_schema", "share": 1, "schema": {"$ref": "#"}}]}}}`: "leads back to the root on the same value",
	} {
		r := call(t, srv.Client(), "POST", srv.URL+"/api/v1/sweeps", jsonType, []byte(body))
		msg, _ := r.json(t)["error"].(string)
		if r.code != 400 || !strings.Contains(msg, want) {
			t.Errorf("%s: %d %q, want 400 containing %q", body, r.code, msg, want)
		}
	}
	if l := svc.List(); len(l) != 0 {
		t.Errorf("a refused body started %d sweeps", len(l))
	}
}

// TestSweepAPIStepBudget: a body whose rate x duration makes a step of more
// than sweep.MaxStepRequests requests is refused with 400 naming the JSON
// keys (issue 22 D8: it was accepted with 201 and failed at its first step
// naming the CLI flag --duration).
func TestSweepAPIStepBudget(t *testing.T) {
	h, svc := sweepHandler(t)
	srv := httptest.NewServer(h)
	defer srv.Close()
	for body, want := range map[string]string{
		`{"target": "sim", "rates": [1, 100], "duration": "24h"}`: "duration: duration 24h0m0s at rates 100 req/s makes 8640000 requests per step, more than 2000000: shorten duration or lower rates",
		`{"target": "sim", "rates": "auto", "duration": "24h"}`:   "duration: duration 24h0m0s at rates 100 req/s makes 8640000 requests per step",
	} {
		r := call(t, srv.Client(), "POST", srv.URL+"/api/v1/sweeps", jsonType, []byte(body))
		msg, _ := r.json(t)["error"].(string)
		if r.code != http.StatusBadRequest || !strings.Contains(msg, want) || strings.Contains(msg, "--") {
			t.Errorf("%s: %d %q, want 400 containing %q (keys, no flags)", body, r.code, msg, want)
		}
	}
	if l := svc.List(); len(l) != 0 {
		t.Errorf("a refused body started %d sweeps", len(l))
	}
	// Under the budget the same target starts (2000000 requests exactly).
	r := call(t, srv.Client(), "POST", srv.URL+"/api/v1/sweeps", jsonType, []byte(`{"target": "sim", "rates": [100], "duration": "20000s"}`))
	if r.code != http.StatusCreated {
		t.Fatalf("at the budget: %d %s", r.code, r.body)
	}
	if _, err := svc.Cancel(r.json(t)["id"].(string)); err != nil {
		t.Fatal(err)
	}
}
