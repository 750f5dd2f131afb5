package sweep

import (
	"github.com/llmprobe/llmprobe/prober/gpusel"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober/scrape"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// inferenceSum reads vllm:request_inference_time_seconds_sum (the time
// requests spent scheduled) from a snapshot body.
func inferenceSum(t *testing.T, body []byte) float64 {
	t.Helper()
	snap, err := scrape.NewSnapshot(time.Now(), body)
	if err != nil {
		t.Fatal(err)
	}
	f := snap.Families["vllm:request_inference_time_seconds"]
	if f == nil || len(f.GetMetric()) == 0 {
		t.Fatal("no vllm:request_inference_time_seconds in the snapshot")
	}
	s := 0.0
	for _, m := range f.GetMetric() {
		s += m.GetHistogram().GetSampleSum()
	}
	return s
}

// TestSweepEnergyPerGoodToken is issue 38's acceptance test: a sweep
// against the simulator's power model reports joules per good output token
// within 2 % of the model's truth at every valid step. The truth comes from
// other counters than the energy counter: with idle watts I per GPU and W
// watts per running sequence spread over the GPUs (no per-token watts, no
// limit), one selected GPU of two spends I x window + W/2 x the time
// sequences ran, which is the growth of vllm:request_inference_time_seconds_sum
// between the step's before and after snapshots.
func TestSweepEnergyPerGoodToken(t *testing.T) {
	const idle, perSeq = 20.0, 40.0
	sc := simtest.Fast()
	sc.StepBase = 2 * time.Millisecond
	sc.Power = simulator.Power{GPUs: 2, IdleWatts: idle, WattsPerSeq: perSeq, GPUModel: "SIM-GPU", Hostname: "h", Pod: "vllm-0"}
	url, _ := simtest.Start(t, sc)
	cfg := testConfig(t, url)
	cfg.Workload = workload.Spec{InputTokens: workload.Fixed(32), OutputTokens: workload.Fixed(32)}
	cfg.GPUMetricsURL = url + simulator.DCGMPath
	cfg.GPUSelector = `pod="vllm-0",gpu="1"`
	sink := &memSink{}
	res := runSweep(t, cfg, sink)
	bodies := map[[2]any][]byte{}
	for _, s := range sink.snaps {
		bodies[[2]any{s.Step, s.Phase}] = s.Body
	}
	valid := 0
	for _, st := range res.Steps {
		e := st.Energy
		if e == nil || e.NotRecorded != "" || e.Method != EnergyCounter || e.GPUs != 1 || e.GPUModel != "SIM-GPU" {
			t.Fatalf("step %d energy: %+v", st.Index, e)
		}
		if !st.Validity.Valid {
			continue
		}
		valid++
		ran := inferenceSum(t, bodies[[2]any{st.Index, PhaseAfter}]) - inferenceSum(t, bodies[[2]any{st.Index, PhaseBefore}])
		truth := (idle*e.WindowS + perSeq/2*ran) / float64(st.Stats.GoodOutputTokens)
		got := *e.JoulesPerGoodOutputToken
		t.Logf("step %d: %.4f J per good token, truth %.4f (window %.3f s, sequences ran %.3f s, peak %.1f W)",
			st.Index, got, truth, e.WindowS, ran, e.PeakW)
		if math.Abs(got-truth) > 0.02*truth {
			t.Errorf("step %d: %.4f J per good output token, truth %.4f (more than 2 %% off)", st.Index, got, truth)
		}
		if e.PeakW < idle || e.PeakW > idle+perSeq/2*float64(cfg.NumPrompts) || e.MeanW < idle {
			t.Errorf("step %d: mean %.1f W, peak %.1f W", st.Index, e.MeanW, e.PeakW)
		}
		if w := *e.WhPer1000GoodRequests; math.Abs(w-e.Joules/3.6/float64(st.Stats.Good)) > 1e-9 {
			t.Errorf("step %d: %v Wh per 1000 good requests", st.Index, w)
		}
	}
	if valid == 0 {
		t.Fatal("no valid step")
	}
	if g := res.Fingerprint.Target.GPU; g == nil || g.Count != 1 || g.Model != "SIM-GPU" || g.Selector != cfg.GPUSelector {
		t.Errorf("fingerprint gpu: %+v", g)
	}
	if _, ok := res.KneeEnergyPerGoodToken(); ok != res.Knee.Found {
		t.Errorf("knee energy ok=%v, knee found %v", ok, res.Knee.Found)
	}
}

// TestSweepEnergyNotRecorded: without a GPU source every step says
// not-recorded with the reason, and no figure (never 0).
func TestSweepEnergyNotRecorded(t *testing.T) {
	url, _ := simtest.Start(t, simtest.Fast())
	cfg := testConfig(t, url)
	cfg.Rates, cfg.RatesText, cfg.NumPrompts = []float64{40}, "40", 10
	res := runSweep(t, cfg, &memSink{})
	for _, st := range res.Steps {
		e := st.Energy
		if e == nil || !strings.Contains(e.NotRecorded, "--gpu-metrics-url") || e.Joules != 0 || e.JoulesPerGoodOutputToken != nil {
			t.Fatalf("step %d energy: %+v", st.Index, e)
		}
	}
	if _, ok := res.KneeEnergyPerGoodToken(); ok {
		t.Error("a knee energy without a GPU source")
	}
}

func TestParseGPUSelector(t *testing.T) {
	for _, tc := range []struct{ in, err string }{
		{`pod="a",namespace="b"`, ""},
		{`{UUID=~"GPU-1.*"}`, ""},
		{``, ""},
		{`pod=`, "not a label selector"},
		{`{__name__="x"}`, "selects GPUs by label, not by metric name"},
		{strings.Repeat("a", gpusel.MaxBytes+1), "must be at most 1024 bytes"},
	} {
		_, err := ParseGPUSelector(tc.in)
		if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("ParseGPUSelector(%q) = %v, want %q", tc.in, err, tc.err)
		}
	}
}

// TestEnergyPowerTimeFallback: without the energy counter the power
// readings are integrated, and the method says so.
func TestEnergyPowerTimeFallback(t *testing.T) {
	t0 := time.Unix(0, 0)
	rs := []gpuReading{{t: t0, watts: 100, hasPower: true, gpus: 1}, {t: t0.Add(time.Second), watts: 300, hasPower: true, gpus: 1},
		{t: t0.Add(3 * time.Second), watts: 100, hasPower: true, gpus: 1}}
	st := &Step{Stats: Stats{TotalOutputTokens: 100, GoodOutputTokens: 50, Good: 5}}
	var e StepEnergy
	computeEnergy(&e, rs, st)
	// 200 J + 400 J.
	if e.Method != EnergyPowerTime || e.Joules != 600 || e.PeakW != 300 || e.MeanW != 200 || *e.JoulesPerGoodOutputToken != 12 {
		t.Fatalf("%+v", e)
	}
	// A counter reset falls back too.
	rs[0].energyMJ, rs[2].energyMJ = map[string]float64{"g": 5000}, map[string]float64{"g": 10}
	computeEnergy(&e, rs, st)
	if e.Method != EnergyPowerTime {
		t.Fatalf("after a reset: %+v", e)
	}
	rs[2].energyMJ["g"] = 605000
	computeEnergy(&e, rs, st)
	if e.Method != EnergyCounter || e.Joules != 600 {
		t.Fatalf("counter: %+v", e)
	}
}
