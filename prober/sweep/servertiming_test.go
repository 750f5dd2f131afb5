package sweep

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
)

// TestSweepServerTiming sweeps the simulator (vLLM persona) over HTTP: with
// --enable-per-request-metrics every record carries the server's queue and
// TTFT, and the step's server_timing (result.json) splits its TTFT per
// request (the means add up to the client's mean TTFT); with
// --server-timing off, or against a simulator that does not serve the
// object, the step says not-recorded and why.
func TestSweepServerTiming(t *testing.T) {
	run := func(serve bool, setting, persona string) (*Result, *memSink) {
		t.Helper()
		sc := simtest.Fast()
		if persona != "" {
			sc.Engine = persona
		}
		sc.EnablePerRequestMetrics = serve
		url, _ := simtest.Start(t, sc)
		cfg := testConfig(t, url)
		cfg.API = "chat"
		cfg.ServerTiming = setting
		cfg.Rates, cfg.RatesText, cfg.NumPrompts, cfg.Warmups = []float64{50}, "50", 10, 0
		sink := &memSink{}
		res := runSweep(t, cfg, sink)
		return res, sink
	}
	res, sink := run(true, "", "")
	for _, sr := range sink.recs {
		r := sr.Record
		if !r.OK() || !r.HasServerQueue || !r.HasServerTTFT || !r.HasServerGenerationTime {
			t.Fatalf("record %s: ok %v (%s), server timing %v %v %v", r.RequestID, r.OK(), r.ErrorMessage, r.HasServerQueue, r.HasServerTTFT, r.HasServerGenerationTime)
		}
	}
	st := res.Steps[0].Stats
	sv := st.ServerTiming
	if sv == nil || sv.Requests != 10 || sv.NotRecorded != "" || sv.Queue.N != 10 || sv.Overhead.N != 10 {
		t.Fatalf("step server timing %+v, want 10 requests", sv)
	}
	// Per request TTFT = queue + server TTFT + overhead, so the means add up.
	if sum := sv.Queue.Mean + sv.ServerTTFT.Mean + sv.Overhead.Mean; math.Abs(sum-st.TTFT.Mean) > 1e-6 {
		t.Errorf("queue %v + server TTFT %v + overhead %v = %v ms, client TTFT mean %v ms", sv.Queue.Mean, sv.ServerTTFT.Mean, sv.Overhead.Mean, sum, st.TTFT.Mean)
	}
	if sv.NegativeOverhead != 0 || sv.Overhead.Min < 0 {
		t.Errorf("negative overheads %d (min %v ms) against the simulator on the same host", sv.NegativeOverhead, sv.Overhead.Min)
	}
	b := resultJSON(t, res)
	var doc struct {
		Steps []struct {
			ST *struct {
				Requests int `json:"requests"`
				Queue    struct {
					Mean float64 `json:"mean"`
				} `json:"server_queue_ms"`
			} `json:"server_timing"`
		} `json:"steps"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Steps) != 1 || doc.Steps[0].ST == nil || doc.Steps[0].ST.Requests != 10 {
		t.Errorf("result.json steps: %.2000s", b)
	}

	for _, tt := range []struct {
		serve   bool
		setting string
		persona string
		reason  string
	}{
		{serve: true, setting: ServerTimingOff, reason: "server_timing is off"},
		{serve: false, setting: ServerTimingAuto, reason: "--enable-per-request-metrics"},
		// SGLang is detected from its /metrics and never asked.
		{serve: true, setting: ServerTimingAuto, persona: simulator.EngineSGLang, reason: "engine sglang returns no per-request timing"},
	} {
		res, _ := run(tt.serve, tt.setting, tt.persona)
		sv := res.Steps[0].Stats.ServerTiming
		if sv == nil || sv.Requests != 0 || !strings.Contains(sv.NotRecorded, tt.reason) {
			t.Errorf("serve %v, setting %q: server timing %+v, want not-recorded with %q", tt.serve, tt.setting, sv, tt.reason)
		}
	}
}
