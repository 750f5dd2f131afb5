package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/llmprobe/llmprobe/collector/probemetrics"
)

// TestSweepPush pushes a one-shot sweep's summary to an httptest receiver
// that parses the exposition.
func TestSweepPush(t *testing.T) {
	url := msSim(t)
	var (
		mu     sync.Mutex
		bodies [][]byte
		paths  []string
	)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rd io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				t.Errorf("gzip: %v", err)
				return
			}
			rd = zr
		}
		b, _ := io.ReadAll(rd)
		mu.Lock()
		bodies, paths = append(bodies, b), append(paths, r.Method+" "+r.URL.Path)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer recv.Close()
	out := t.TempDir()
	runOK(t, "sweep", "--target", url, "--rates", "20,40", "--num-prompts", "10", "--warmups", "1",
		"--input-len", "16", "--output-len", "4", "--goodput", "ttft:800", "tpot:50", "--out", out, "--name", "canary",
		"--max-send-lag", "250ms", "--max-sched-latency", "250ms", "--no-progress", "--log.level", "warn",
		"--push.url", recv.URL+"/api/v1/import/prometheus", "--push.extra-label", "env=ci")
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 1 || paths[0] != "POST /api/v1/import/prometheus" {
		t.Fatalf("pushes: %v", paths)
	}
	body := bodies[0]
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, body)
	}
	for _, n := range probemetrics.ResultNames() {
		if _, ok := mfs[n]; !ok {
			t.Errorf("pushed exposition lacks %s", n)
		}
	}
	label := func(m *dto.Metric, name string) string {
		for _, l := range m.GetLabel() {
			if l.GetName() == name {
				return l.GetValue()
			}
		}
		return ""
	}
	// The pushed knee is the run's own (a lower bound when not bracketed:
	// with 10 requests per step an SLO p99 decides nothing).
	runDir := onlyRunDir(t, out, "*-canary")
	res := loadRun(t, runDir)
	if mf := mfs[probemetrics.NameRunKnee]; mf == nil {
		t.Error("no knee series")
	} else {
		m := mf.GetMetric()[0]
		if label(m, "run") != "canary" || label(m, "env") != "ci" || m.GetGauge().GetValue() != res.Knee.Estimate() {
			t.Errorf("knee series %v, the run's knee %+v", m, res.Knee)
		}
	}
	steps := map[string]bool{}
	for _, m := range mfs[probemetrics.NameRunStepGoodput].GetMetric() {
		steps[label(m, "step")] = true
	}
	if !steps["rate=20"] || !steps["rate=40"] {
		t.Errorf("step goodput series: %v", steps)
	}
}

func TestSweepPushFlags(t *testing.T) {
	for _, tt := range []struct{ args, want string }{
		{"--push.method GET", "--push.method: must be POST or PUT"},
		{"--push.extra-label nolabel", "--push.extra-label:"},
		{"--push.url ftp://x", "--push.url: must be an http:// or https:// URL"},
	} {
		t.Run(tt.args, func(t *testing.T) {
			wantUsageError(t, append([]string{"sweep", "--rates", "1", "--num-prompts", "1", "--out", t.TempDir()},
				strings.Fields(tt.args)...), "llmprobe: error: "+tt.want)
		})
	}
}

// TestSweepPushFailure checks that a push no receiver answers is a logged
// warning (exit 0: a Kubernetes Job's pod succeeds, its results are in the
// run directory) unless --push.required makes it exit 1.
func TestSweepPushFailure(t *testing.T) {
	url := msSim(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	unreachable := "http://" + l.Addr().String() + "/api/v1/import/prometheus"
	l.Close()
	for _, tc := range []struct {
		name  string
		extra []string
		code  int
		level string
	}{
		{name: "warning", code: 0, level: "level=warn"},
		{name: "required", extra: []string{"--push.required"}, code: 1, level: "level=error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			out := t.TempDir()
			args := append([]string{"sweep", "--target", url, "--rates", "20", "--num-prompts", "5", "--warmups", "1",
				"--input-len", "16", "--output-len", "4", "--out", out, "--name", "push", "--max-send-lag", "250ms", "--max-sched-latency", "250ms",
				"--no-progress", "--log.level", "warn", "--push.url", unreachable, "--push.timeout", "5s"}, tc.extra...)
			code := run(context.Background(), args, &stdout, &stderr)
			if code != tc.code {
				t.Fatalf("exit code %d, want %d; stderr:\n%s", code, tc.code, stderr.String())
			}
			line := ""
			for _, l := range strings.Split(stderr.String(), "\n") {
				if strings.Contains(l, "push failed") {
					line = l
				}
			}
			if !strings.Contains(line, tc.level) || !strings.Contains(line, l.Addr().String()) {
				t.Fatalf("want a %s line naming the push URL; stderr:\n%s", tc.level, stderr.String())
			}
			if dirs, _ := filepath.Glob(filepath.Join(out, "*-push", "result.json")); len(dirs) != 1 {
				t.Fatalf("the run directory's result.json: %v", dirs)
			}
		})
	}
}
