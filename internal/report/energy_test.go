package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/prober/sweep"
)

func TestAnalysisEnergy(t *testing.T) {
	f := func(res *sweep.Result, want ...string) {
		t.Helper()
		md := string(Analysis(res))
		var tbl bytes.Buffer
		if err := WriteTable(&tbl, res); err != nil {
			t.Fatal(err)
		}
		all := md + tbl.String()
		for _, w := range want {
			if !strings.Contains(all, w) {
				t.Errorf("no %q in analysis.md or the table:\n%s", w, all)
			}
		}
	}
	// Recorded: a per-step table, the knee figure in the answer, the
	// section and the terminal table.
	res := ladder()
	for _, st := range res.Steps {
		j, jg, wh := 0.5*st.Level, 0.6*st.Level, 2.0
		st.Energy = &sweep.StepEnergy{Method: sweep.EnergyCounter, GPUs: 2, Joules: 100, MeanW: 300, PeakW: 410,
			JoulesPerOutputToken: &j, JoulesPerGoodOutputToken: &jg, WhPer1000GoodRequests: &wh}
	}
	res.Steps[5].Energy = &sweep.StepEnergy{NotRecorded: "interrupted"}
	f(res, "### Energy", "| counter | 2 | 100 | 300 | 410 | 4 | 4.8 | 2 |", "not-recorded: interrupted",
		"At the knee (8 req/s): **4.8 J per good output token**", "; 4.8 J per good output token at the knee",
		"energy: 4.8 J per good output token at the knee")
	svg, ok, err := EnergySVG(res)
	if err != nil || !ok {
		t.Fatalf("EnergySVG: ok %v, %v", ok, err)
	}
	for _, w := range []string{EnergyTitle, PowerTitle, "J per good output token", "mean power", "knee 8 req/s"} {
		if !bytes.Contains(svg, []byte(w)) {
			t.Errorf("energy.svg lacks %q", w)
		}
	}
	// No GPU source: one line with the reason, never a 0.
	res = ladder()
	for _, st := range res.Steps {
		st.Energy = &sweep.StepEnergy{NotRecorded: "no GPU metrics source: set --gpu-metrics-url"}
	}
	f(res, "Energy: not-recorded (no GPU metrics source: set --gpu-metrics-url).")
	if md := string(Analysis(res)); strings.Contains(md, "J per good output token") {
		t.Errorf("a joule figure without a GPU source:\n%s", md)
	}
	if _, ok, err := EnergySVG(res); ok || err != nil {
		t.Errorf("energy.svg without energy: ok %v, %v", ok, err)
	}
}
