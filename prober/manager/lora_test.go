package manager_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// simModels reads the simulator's trace file (one line per generation
// request it received) and counts the requests by model.
func simModels(t *testing.T, path string) map[string]int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r simulator.TraceRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			continue // a line being written
		}
		out[r.Model]++
	}
	return out
}

// TestDaemonProbeUnlistedAdapter: a probe's lora feature names an adapter
// that the simulator's /v1/models does not list. Its draws send nothing
// (the simulator receives no request naming it) and their Records are
// NotSent, invalid_response, with discovery's message for a model that is
// not listed; the other draws succeed. Once the simulator serves the
// adapter and a discovery lists it, its draws are sent and succeed.
func TestDaemonProbeUnlistedAdapter(t *testing.T) {
	simCfg := fastSim()
	simCfg.LoRAModules = "sql-lora=/adapters/sql"
	simCfg.TraceFile = filepath.Join(t.TempDir(), "sim-trace.jsonl")
	base, sim := simtest.Start(t, simCfg)
	m, reg, col := start(t, oneProbe(t, "sim", base, "", "lora", 16, 4, `{kind: lora, share: 0.5, model: late-lora}`))
	isLoRA := func(r *prober.Record) bool { return slices.Contains(r.Features, workload.FeatureLoRA) }
	const msg = "GET /v1/models: model late-lora not listed (it serves: llmprobe-sim, sql-lora)"
	evs := col.waitFor(t, 30*time.Second, "10 unlisted-adapter and 10 plain records", func(evs []event) bool {
		n, plain := 0, 0
		for _, e := range evs {
			if isLoRA(e.Record) {
				n++
			} else if e.Record.OK() {
				plain++
			}
		}
		return n >= 10 && plain >= 10
	})
	for _, e := range evs {
		r := e.Record
		if !isLoRA(r) {
			if !r.OK() {
				t.Errorf("a plain request failed: %s %s", r.Error, r.ErrorMessage)
			}
			continue
		}
		if !r.NotSent || r.Error != prober.ClassInvalidResponse || r.ErrorMessage != msg || r.Model != "late-lora" {
			t.Fatalf("unlisted-adapter record: not_sent %v class %s model %s message %q", r.NotSent, r.Error, r.Model, r.ErrorMessage)
		}
	}
	lbl := map[string]string{"target": "sim", "probe": "lora", "outcome": string(prober.ClassInvalidResponse)}
	if got := counter(t, reg, "llmprobe_requests_total", lbl); got < 10 {
		t.Errorf("llmprobe_requests_total{outcome=invalid_response} = %v, want >= 10", got)
	}
	seen := simModels(t, simCfg.TraceFile)
	if seen["late-lora"] != 0 || seen["llmprobe-sim"] < 10 {
		t.Fatalf("the simulator received %v", seen)
	}

	// The adapter appears; the next discovery lists it.
	sim.SetLoRA(append(simCfg.LoRA(), simulator.LoRAModule{Name: "late-lora", Path: "/adapters/late"}))
	if !m.Rediscover(context.Background(), "sim") {
		t.Fatal("rediscovery failed")
	}
	from := len(col.snapshot())
	col.waitFor(t, 30*time.Second, "10 sent adapter requests", func(evs []event) bool {
		n := 0
		for _, e := range evs[from:] {
			r := e.Record
			if isLoRA(r) && r.NotSent && strings.Contains(r.ErrorMessage, "not listed") {
				continue // decided before the discovery ended
			}
			if isLoRA(r) {
				if !r.OK() || r.Model != "late-lora" {
					t.Fatalf("adapter record after discovery: %s %q model %s", r.Error, r.ErrorMessage, r.Model)
				}
				n++
			}
		}
		return n >= 10
	})
	if n := simModels(t, simCfg.TraceFile)["late-lora"]; n < 10 {
		t.Errorf("the simulator received %d requests naming late-lora, want >= 10", n)
	}
}
