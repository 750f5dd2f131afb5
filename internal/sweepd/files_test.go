package sweepd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/prober/capacity"
	"github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// TestScheduledTraceAndDatasetSweeps runs two scheduled sweeps from a
// config file loaded with another working directory: a trace replay at two
// speeds and a dataset sweep, both files named relative to the config
// file. The replay's steps are its speeds, command.txt gives the trace, and
// a changed trace file changes the schedule's digest.
func TestScheduledTraceAndDatasetSweeps(t *testing.T) {
	url, _ := simtest.Start(t, fastSim())
	dir := t.TempDir()
	trace := `{"offset_ms": 0, "input_tokens": 40, "output_tokens": 4, "hash_ids": [1]}
{"offset_ms": 50, "input_tokens": 40, "output_tokens": 4, "hash_ids": [1]}
{"offset_ms": 100, "input_tokens": 24, "output_tokens": 2}
{"offset_ms": 200, "input_tokens": 40, "output_tokens": 4, "hash_ids": [1, 2]}
{"offset_ms": 300, "input_tokens": 16, "output_tokens": 3}
`
	for name, body := range map[string]string{
		"trace.jsonl": trace,
		"data.jsonl":  "{\"prompt\": \"a b c d e f\", \"max_tokens\": 3}\n{\"prompt\": \"g h i j\", \"max_tokens\": 2}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfgFile := filepath.Join(dir, "llmprobe.yml")
	yml := `targets:
  - name: replay
    base_url: ` + url + `
    max_sweep_rate: 100
    sweeps:
      - name: trace
        every: 1h
        warmups: -1
        max_send_lag: 250ms
        max_sched_latency: 250ms
        workload:
          trace: {path: trace.jsonl, speeds: [1, 2], block_size: 16}
  - name: data
    base_url: ` + url + `
    sweeps:
      - name: ds
        every: 1h
        rates: [20]
        num_prompts: 6
        warmups: -1
        max_send_lag: 250ms
        max_sched_latency: 250ms
        workload:
          dataset: {path: data.jsonl, sampling: cycle}
`
	if err := os.WriteFile(cfgFile, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir()) // the files are not in the working directory
	cfg, err := config.Load(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	out := t.TempDir()
	s := newService(t, out, rec)
	s.Apply(cfg)
	testutil.EventuallyWithin(t, 2*time.Minute, "both scheduled sweeps to finish", func() bool { return len(rec.calls()) == 2 })
	for _, c := range rec.calls() {
		if c.result != capacity.ResultSuccess || c.last == nil {
			t.Fatalf("%s/%s: %+v", c.target, c.sweep, c)
		}
		switch c.sweep {
		case "trace":
			if len(c.last.Steps) != 2 || c.last.Steps[0].Label != "trace-speed=1" || c.last.Steps[1].Label != "trace-speed=2" {
				t.Errorf("trace steps %+v", c.last.Steps)
			}
			cmd, err := os.ReadFile(filepath.Join(c.last.Dir, artifacts.CommandFile))
			if err != nil {
				t.Fatal(err)
			}
			if want := "--trace " + filepath.Join(dir, "trace.jsonl") + " --trace-speed 1,2 --trace-block-size 16"; !strings.Contains(string(cmd), want) ||
				strings.Contains(string(cmd), "--duration") || strings.Contains(string(cmd), "--rates") {
				t.Errorf("command.txt %q, want %q and no --duration or --rates", cmd, want)
			}
			var res struct {
				Steps []struct {
					NumPrompts int `json:"num_prompts"`
				} `json:"steps"`
			}
			b, _ := os.ReadFile(filepath.Join(c.last.Dir, artifacts.ResultFile))
			if err := json.Unmarshal(b, &res); err != nil || len(res.Steps) != 2 || res.Steps[0].NumPrompts != 5 {
				t.Errorf("result.json steps %+v (%v)", res.Steps, err)
			}
		case "ds":
			var res struct {
				Dataset *struct {
					Path   string `json:"path"`
					Used   int    `json:"used"`
					SHA256 string `json:"sha256"`
				} `json:"dataset"`
			}
			b, _ := os.ReadFile(filepath.Join(c.last.Dir, artifacts.ResultFile))
			if err := json.Unmarshal(b, &res); err != nil || res.Dataset == nil || res.Dataset.Path != filepath.Join(dir, "data.jsonl") ||
				res.Dataset.Used != 2 {
				t.Errorf("result.json dataset %+v (%v)", res.Dataset, err)
			}
		default:
			t.Errorf("unexpected sweep %+v", c)
		}
	}

	// A changed trace file changes the schedule's digest (a reload restarts
	// the schedule); the same file keeps it.
	digest := func(c *config.Config) string {
		return scheduleDigest(c.Targets[0], c.Targets[0].Sweeps[0])
	}
	same, err := config.Load(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	if digest(same) != digest(cfg) {
		t.Error("reloading the same files changed the schedule's digest")
	}
	if err := os.WriteFile(filepath.Join(dir, "trace.jsonl"), []byte(trace+`{"offset_ms": 400, "input_tokens": 16, "output_tokens": 3}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	changed, err := config.Load(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	if digest(changed) == digest(cfg) {
		t.Error("a changed trace file kept the schedule's digest")
	}
}

// TestStartRefusesFiles: the API's Start refuses a spec naming a file
// before it reads anything, and takes an inline schema.
func TestStartRefusesFiles(t *testing.T) {
	url, _ := simtest.Start(t, fastSim())
	s := simService(t, t.TempDir(), newRecorder(), url)
	dataset := small()
	dataset.Workload = &workload.Spec{Dataset: &workload.DatasetSpec{Path: "/etc/passwd"}}
	trace := specOf(t, "{}")
	trace.Workload = &workload.Spec{Trace: &workload.TraceSpec{Path: "/etc/passwd"}}
	for _, spec := range []config.SweepSpec{dataset, trace} {
		_, err := s.Start("sim", spec)
		se, ok := err.(*config.SpecError)
		if !ok || !strings.HasPrefix(se.Key, "workload.") || !strings.Contains(err.Error(), "the sweep API reads no file") {
			t.Errorf("Start with a file: %v", err)
		}
	}
	inline := specOf(t, "rates: [20]\nnum_prompts: 4\nwarmups: -1\nmax_send_lag: 250ms\nmax_sched_latency: 250ms")
	inline.Workload = &workload.Spec{InputTokens: workload.Fixed(16), OutputTokens: workload.Fixed(8), IgnoreEOS: new(false),
		Request: &workload.Request{Features: []workload.RequestFeature{{Kind: workload.FeatureJSONSchema, Share: 1,
			Schema: map[string]any{"type": "object"}}}}}
	st, err := s.Start("sim", inline)
	if err != nil {
		t.Fatalf("an inline schema: %v", err)
	}
	if end := wait(t, s, st.ID); end.Status != StatusDone {
		t.Errorf("inline-schema sweep: %s %s", end.Status, end.Error)
	}
}
