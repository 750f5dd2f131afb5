package simulator_test

import (
	"fmt"
	"math"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
)

func scrapeFamilies(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp := getOK(t, url)
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	return fams
}

func sumFamily(t *testing.T, fams map[string]*dto.MetricFamily, name string) float64 {
	t.Helper()
	f, ok := fams[name]
	if !ok {
		t.Fatalf("no %s", name)
	}
	s := 0.0
	for _, m := range f.GetMetric() {
		switch {
		case m.Counter != nil:
			s += m.GetCounter().GetValue()
		case m.Gauge != nil:
			s += m.GetGauge().GetValue()
		case m.Histogram != nil:
			s += m.GetHistogram().GetSampleSum()
		}
	}
	return s
}

// TestDCGMExposition checks the names, types and labels dcgm-exporter uses
// (etc/default-counters.csv and its exposition template).
func TestDCGMExposition(t *testing.T) {
	cfg := fastConfig()
	cfg.Power.GPUs = 2
	cfg.Power.Pod, cfg.Power.Namespace, cfg.Power.Container = "vllm-0", "llm", "vllm"
	base, _ := simtest.Start(t, cfg)
	fams := scrapeFamilies(t, base+simulator.DCGMPath)
	types := map[string]dto.MetricType{
		"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": dto.MetricType_COUNTER,
		"DCGM_FI_DEV_POWER_USAGE":              dto.MetricType_GAUGE,
		"DCGM_FI_DEV_POWER_MGMT_LIMIT":         dto.MetricType_GAUGE,
	}
	for name, typ := range types {
		f := fams[name]
		if f == nil || f.GetType() != typ || len(f.GetMetric()) != 2 {
			t.Fatalf("%s: %v", name, f)
		}
		var all []string
		for _, m := range f.GetMetric() {
			var names []string
			for _, lp := range m.GetLabel() {
				names = append(names, lp.GetName()+"="+lp.GetValue())
			}
			sort.Strings(names)
			all = append(all, strings.Join(names, ","))
		}
		sort.Strings(all)
		got := strings.Join(all, " | ")
		for _, want := range []string{"gpu=0", "gpu=1", "device=nvidia0", "device=nvidia1", "modelName=NVIDIA H100 80GB HBM3",
			"Hostname=llmprobe-sim", "pod=vllm-0", "namespace=llm", "container=vllm", "UUID=GPU-"} {
			if !strings.Contains(got, want) {
				t.Errorf("%s labels %s: no %s", name, got, want)
			}
		}
	}
	if w := sumFamily(t, fams, "DCGM_FI_DEV_POWER_USAGE"); w != 140 {
		t.Errorf("idle draw of 2 GPUs = %v W, want 140", w)
	}
	if len(fams) != 3 {
		t.Errorf("families %d, want 3 (the vLLM metrics stay on /metrics)", len(fams))
	}
}

// TestDCGMEnergyIsTheModelsIntegral checks the energy counter against a
// truth from another counter: with no idle draw and no per-token watts,
// the energy is WattsPerSeq x the time sequences spent running, which is
// vllm:request_inference_time_seconds (scheduled to last token) summed over
// the requests.
func TestDCGMEnergyIsTheModelsIntegral(t *testing.T) {
	cfg := fastConfig()
	cfg.StepBase = 5_000_000 // 5 ms: the running time dwarfs scheduling jitter
	cfg.Power = simulator.Power{GPUs: 1, WattsPerSeq: 40, GPUModel: "x", Hostname: "h"}
	base, _ := simtest.Start(t, cfg)
	e0 := sumFamily(t, scrapeFamilies(t, base+simulator.DCGMPath), "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")
	i0 := sumFamily(t, scrapeFamilies(t, base+"/metrics"), "vllm:request_inference_time_seconds")
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out map[string]any
			postJSON(t, base+"/v1/completions", map[string]any{"model": cfg.Model, "prompt": fmt.Sprintf("hello %d", i),
				"max_tokens": 20 + 5*i, "ignore_eos": true}, http.StatusOK, &out)
		}()
	}
	wg.Wait()
	e1 := sumFamily(t, scrapeFamilies(t, base+simulator.DCGMPath), "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")
	i1 := sumFamily(t, scrapeFamilies(t, base+"/metrics"), "vllm:request_inference_time_seconds")
	gotJ, wantJ := (e1-e0)/1000, 40*(i1-i0)
	if wantJ <= 0 || math.Abs(gotJ-wantJ) > 0.01*wantJ {
		t.Fatalf("energy %.4f J, want 40 W x %.4f s running = %.4f J (1 %%)", gotJ, i1-i0, wantJ)
	}
}
