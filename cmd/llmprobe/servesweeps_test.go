package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/internal/sweepd"
	"github.com/llmprobe/llmprobe/internal/testutil"
)

// TestServeSweepAPI is the "done when" on the embedded default: a
// POST answers an id, the status shows the result, and the knee gauge of
// the target "simulator" is on /metrics.
func TestServeSweepAPI(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir) // no ./llmprobe.yml here; sweeps/ goes here
	base, logs, stop := startServe(t, "--web.enable-sweeps")
	waitMetric(t, base, `llmprobe_sweep_running{target="simulator"} 0`)
	resp, err := http.Post(base+"/api/v1/sweeps", "application/json", strings.NewReader(
		// No goodput SLO: with 20 requests per step an SLO p99 would
		// decide no knee (too few samples), and this test is about the API.
		`{"target": "simulator", "rates": [10, 20], "num_prompts": 20, "input_len": 32, "output_len": 4,
		  "max_send_lag": "250ms", "max_sched_latency": "250ms"}`))
	if err != nil {
		t.Fatal(err)
	}
	var created struct{ ID string }
	_ = json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || created.ID == "" {
		t.Fatalf("POST: %d %+v; log:\n%s", resp.StatusCode, created, logs.String())
	}
	var st sweepd.Status
	testutil.EventuallyWithin(t, 2*time.Minute, "the sweep to end", func() bool {
		_, body := get(t, base+"/api/v1/sweeps/"+created.ID)
		st = sweepd.Status{}
		_ = json.Unmarshal([]byte(body), &st)
		return st.Status != "" && st.Status != sweepd.StatusRunning
	})
	if st.Status != sweepd.StatusDone || st.Result == nil || st.Result.Knee <= 0 {
		t.Fatalf("status %+v; log:\n%s", st, logs.String())
	}
	body := waitMetric(t, base, `llmprobe_sweep_knee_requests_per_second{sweep="api",target="simulator"}`)
	if !strings.Contains(body, `llmprobe_sweep_runs_total{result="success",sweep="api",target="simulator"} 1`) {
		t.Errorf("/metrics lacks the run count:\n%s", body)
	}
	// The landing page: the summary, and the sweep with links to its files.
	if code, page := get(t, base+"/"); code != 200 || !strings.Contains(page, `<table id="summary">`) ||
		!strings.Contains(page, `<tr data-target="simulator">`) ||
		!strings.Contains(page, `href="/api/v1/sweeps/`+created.ID+`/files/analysis.md"`) {
		t.Errorf("landing page: %d\n%s", code, page)
	}
	if _, err := os.Stat(filepath.Join(dir, "sweeps", "simulator", st.RunDir, "manifest.json")); err != nil {
		t.Errorf("run directory under --sweeps.dir: %v", err)
	}
	if code := stop(); code != 0 {
		t.Errorf("exit code %d", code)
	}
}

// TestServeScheduledSweep: a config with a sweeps: block keeps the gauge
// fresh without any call, with the sweep API off.
func TestServeScheduledSweep(t *testing.T) {
	url, _ := simtest.Start(t, simulator.DefaultConfig())
	dir := t.TempDir()
	cfg := writeFile(t, dir, "llmprobe.yml", `targets:
  - name: sim
    base_url: `+url+`
    probes:
      - name: slow
        rate: 0.5
    sweeps:
      - name: every-minute
        every: 1m
        rates: [4, 8]
        num_prompts: 10
        input_len: 32
        output_len: 4
        max_send_lag: 250ms
        max_sched_latency: 250ms
`)
	base, _, stop := startServe(t, "--config.file", cfg, "--sweeps.dir", filepath.Join(dir, "runs"))
	// The simulator shares the test process, so the sweep's client CPU
	// check is on: low rates keep it clear of the 0.9-core limit.
	testutil.EventuallyWithin(t, 2*time.Minute, "the scheduled sweep's knee gauge", func() bool {
		_, body := get(t, base+"/metrics")
		return strings.Contains(body, `llmprobe_sweep_knee_requests_per_second{sweep="every-minute",target="sim"}`)
	})
	if code, _ := get(t, base+"/api/v1/sweeps"); code != http.StatusForbidden {
		t.Errorf("sweep API without --web.enable-sweeps: %d", code)
	}
	if code := stop(); code != 0 {
		t.Errorf("exit code %d", code)
	}
}

// TestSweepsDirNotWritable: a config that schedules sweeps with a sweeps
// directory that cannot be written is refused at load, naming the
// directory, by check-config, serve --config.check and serve itself (exit
// 1 before any probe), not at the sweep's first run; the same config with
// LLMPROBE_SWEEPS_DIR pointing at a writable place passes.
func TestSweepsDirNotWritable(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "llmprobe.yml", `targets:
  - name: sim
    base_url: http://127.0.0.1:1
    sweeps:
      - name: nightly
        every: 24h
        rates: [4, 8]
`)
	notADir := writeFile(t, dir, "file", "")
	bad := filepath.Join(notADir, "sweeps")
	for _, args := range [][]string{
		{"check-config", "--sweeps.dir", bad, cfg},
		{"serve", "--config.file", cfg, "--config.check", "--sweeps.dir", bad},
		{"serve", "--config.file", cfg, "--sweeps.dir", bad, "--web.listen-address", testutil.FreeAddr(t)},
	} {
		var out, errb strings.Builder
		code := run(t.Context(), args, &out, &errb)
		if code != 1 || !strings.Contains(errb.String(), bad) || !strings.Contains(errb.String(), "not writable") {
			t.Errorf("llmprobe %s: exit %d, stderr %q; want 1 naming %s as not writable", strings.Join(args, " "), code, errb.String(), bad)
		}
	}
	t.Setenv(sweepsDirEnv, filepath.Join(dir, "state", "sweeps"))
	var out, errb strings.Builder
	if code := run(t.Context(), []string{"check-config", cfg}, &out, &errb); code != 0 {
		t.Errorf("check-config with %s set: exit %d, stderr %q", sweepsDirEnv, code, errb.String())
	}
}
