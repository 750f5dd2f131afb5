package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/report"
	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
)

// TestSweepEnergyCLI: `llmprobe sweep --gpu-metrics-url` against the
// simulator's power model records every step's energy, quotes the joules
// per good output token at the knee (analysis.md's answer, the terminal
// table) and draws energy.svg. Two running sequences of 16 steps of 2 ms
// serve about 60 req/s, so 400 req/s cannot keep up (a loose TTFT SLO: a
// busy host passes 20 req/s) and the knee is
// bracketed at 20 (100 requests a step: enough for the SLO p99s).
func TestSweepEnergyCLI(t *testing.T) {
	cfg := simulator.DefaultConfig()
	cfg.StepBase = 2 * time.Millisecond
	cfg.MaxNumSeqs, cfg.MaxNumBatchedTokens = 2, 2048
	url, _ := simtest.Start(t, cfg)
	out := t.TempDir()
	stdout, _ := runOK(t, "sweep", "--target", url, "--rates", "20,400", "--num-prompts", "100", "--warmups", "1",
		"--input-len", "16", "--output-len", "16", "--goodput", "ttft:500", "--out", out, "--name", "energy",
		"--gpu-metrics-url", url+simulator.DCGMPath, "--gpu-selector", `gpu="0"`,
		"--max-send-lag", "250ms", "--max-sched-latency", "250ms", "--no-progress", "--log.level", "warn")
	runDir := onlyRunDir(t, out, "*-energy")
	res := loadRun(t, runDir)
	for _, st := range res.Steps {
		if e := st.Energy; e == nil || e.NotRecorded != "" || e.JoulesPerGoodOutputToken == nil || e.GPUs != 1 {
			t.Errorf("step %s energy read back: %+v", st.Label, e)
		}
	}
	j, ok := res.KneeEnergyPerGoodToken()
	if !ok {
		t.Fatalf("no joules per good token at the knee (knee %+v)\n%s", res.Knee, stdout)
	}
	md, err := os.ReadFile(filepath.Join(runDir, "analysis.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"### Energy", "J per good output token at the knee", "](energy.svg)"} {
		if !strings.Contains(string(md), w) {
			t.Errorf("analysis.md lacks %q", w)
		}
	}
	if !strings.Contains(stdout, "energy: ") || !strings.Contains(stdout, "J per good output token at the knee") {
		t.Errorf("the terminal table has no energy line (knee %.4g J):\n%s", j, stdout)
	}
	if _, err := os.Stat(filepath.Join(runDir, report.EnergyPlotFile)); err != nil {
		t.Errorf("energy.svg: %v", err)
	}
	if g := res.Fingerprint.Target.GPU; g == nil || g.Count != 1 {
		t.Errorf("manifest target.gpu: %+v", g)
	}
}
