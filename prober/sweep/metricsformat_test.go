package sweep_test

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober/scrape"
	"github.com/llmprobe/llmprobe/prober/sweep"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// snapshotSink keeps the /metrics snapshots and during-step scrapes a
// sweep hands on.
type snapshotSink struct {
	sweep.DiscardSink
	mu      sync.Mutex
	bodies  [][]byte
	scrapes [][]byte
}

func (s *snapshotSink) Snapshot(snap sweep.Snapshot) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if snap.Body != nil {
		s.bodies = append(s.bodies, bytes.Clone(snap.Body))
	}
	return nil
}

func (s *snapshotSink) Scrape(_ int, entry []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scrapes = append(s.scrapes, bytes.Clone(entry))
	return nil
}

// serverShape is a step's server section as JSON with every figure that
// depends on timing (latency means and quantiles, gauge maxima, the
// first bucket's count) replaced by whether it was recorded; counts,
// token and finish deltas, bucket bounds, status and reasons stay exact.
func serverShape(t *testing.T, st sweep.ServerStats) map[string]any {
	t.Helper()
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	known := func(v any) any {
		if _, ok := v.(float64); ok {
			return "known"
		}
		return v
	}
	for k, v := range m {
		switch k {
		case "max_running", "max_waiting", "max_kv_cache_usage", "client_minus_server_ttft_mean_ms":
			m[k] = known(v)
		case "ttft", "itl", "tpot", "e2el", "queue_time":
			lat, _ := v.(map[string]any)
			for lk, lv := range lat {
				if lk != "count" && lk != "first_bucket_le_ms" {
					lat[lk] = known(lv)
				}
			}
		}
	}
	return m
}

// twoStepSweep sweeps a simulator of sim (EOS off) on api at 20 and 40
// req/s, 10 requests a step, into sink, and requires both steps.
func twoStepSweep(t *testing.T, sim simulator.Config, api string, sink sweep.RecordSink) *sweep.Result {
	t.Helper()
	sim.EOSProbability = 0
	url, _ := simtest.Start(t, sim)
	cfg := sweep.Config{
		Target: url, API: api, Timeout: 30 * time.Second,
		Workload:       workload.Spec{InputTokens: workload.Fixed(48), OutputTokens: workload.Fixed(6)},
		WorkloadSource: "flags", Rates: []float64{20, 40}, RatesText: "20,40", Arrival: "poisson", Burstiness: 1,
		NumPrompts: 10, Warmups: 1, Rounds: 1, MetricsInterval: 50 * time.Millisecond, IdleTimeout: 5 * time.Second,
		OutDir: t.TempDir(), Name: "test", Embedded: true, Seed: 11,
		Validity: sweep.ValidityOptions{MaxSendLag: 100 * time.Millisecond},
		// Two steps whatever the host: a busy one can put the knee
		// between 20 and 40 req/s, whose bracket a ladder repeats.
		Search: sweep.SearchOptions{Repeats: 1},
	}
	p, err := sweep.Prepare(context.Background(), cfg, sweep.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Run(context.Background(), sink, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Steps) != 2 {
		t.Fatalf("%d steps, want 2", len(res.Steps))
	}
	return res
}

// TestSweepEachMetricsFormat sweeps the simulator serving /metrics as text,
// OpenMetrics (whatever Accept says, as vLLM's Rust frontend) and protobuf:
// each sweep detects vLLM from the /metrics names, reads its engine config,
// proves every step idle, records the same server figures (counts and
// deltas; timing-dependent values only as recorded or not), and hands on
// snapshots and during-step scrapes that parse again as text.
func TestSweepEachMetricsFormat(t *testing.T) {
	run := func(t *testing.T, format string) (*sweep.Result, *snapshotSink) {
		t.Helper()
		sim := simtest.Fast()
		sim.MetricsFormat = format
		sink := &snapshotSink{}
		return twoStepSweep(t, sim, "completions", sink), sink
	}
	formats := []string{simulator.MetricsFormatText, simulator.MetricsFormatOpenMetrics, simulator.MetricsFormatProtobuf}
	wantFormat := map[string]scrape.Format{
		simulator.MetricsFormatText:        scrape.FormatText,
		simulator.MetricsFormatOpenMetrics: scrape.FormatOpenMetrics,
		// The sweep's Raw of a protobuf scrape is its OpenMetrics text.
		simulator.MetricsFormatProtobuf: scrape.FormatOpenMetrics,
	}
	var (
		textShape  []map[string]any
		textConfig map[string]string
	)
	for _, format := range formats {
		t.Run(format, func(t *testing.T) {
			res, sink := run(t, format)
			fp := res.Fingerprint.Target
			if fp.Engine != "vllm" || fp.EngineSource != "/metrics names" {
				t.Errorf("engine %q from %q, want vllm from /metrics names", fp.Engine, fp.EngineSource)
			}
			if fp.EngineConfig["block_size"] != "16" || fp.EngineConfig["enable_prefix_caching"] != "True" {
				t.Errorf("engine config %v, want vllm:cache_config_info's labels", fp.EngineConfig)
			}
			var shapes []map[string]any
			for _, st := range res.Steps {
				if st.Validity.Idle.Status != sweep.IdleProven {
					t.Errorf("step %s: idle proof %+v", st.Label, st.Validity.Idle)
				}
				if st.Server.Status != "recorded" || len(st.Server.NotRecorded) > 0 {
					t.Errorf("step %s: server %s %q, not recorded %v", st.Label, st.Server.Status, st.Server.Reason, st.Server.NotRecorded)
				}
				if !st.Server.GenerationTokens.Known || st.Server.GenerationTokens.Value != 10*6 {
					t.Errorf("step %s: generation tokens %+v, want 60", st.Label, st.Server.GenerationTokens)
				}
				if st.Server.FinishedReasons["length"] != 10 {
					t.Errorf("step %s: finished reasons %v, want 10 length", st.Label, st.Server.FinishedReasons)
				}
				shapes = append(shapes, serverShape(t, st.Server))
			}
			if format == simulator.MetricsFormatText {
				textShape, textConfig = shapes, fp.EngineConfig
			} else {
				if !reflect.DeepEqual(shapes, textShape) {
					t.Errorf("server figures differ from the text format's:\n got %v\nwant %v", shapes, textShape)
				}
				if !reflect.DeepEqual(map[string]string(fp.EngineConfig), textConfig) {
					t.Errorf("engine config %v, text format's %v", fp.EngineConfig, textConfig)
				}
			}
			sink.mu.Lock()
			defer sink.mu.Unlock()
			if len(sink.bodies) == 0 || len(sink.scrapes) == 0 {
				t.Fatalf("%d snapshots, %d scrapes handed on", len(sink.bodies), len(sink.scrapes))
			}
			for _, b := range sink.bodies {
				s, err := scrape.NewSnapshot(time.Now(), b)
				if err != nil || s.Format != wantFormat[format] || !s.Has("vllm:request_success_total") {
					t.Fatalf("snapshot body does not parse back as %s (%v):\n%.300s", wantFormat[format], err, b)
				}
			}
			for _, e := range sink.scrapes {
				ss, err := scrape.ReadScrapes(bytes.NewReader(e))
				if err != nil || len(ss) != 1 || ss[0].Format != wantFormat[format] {
					t.Fatalf("scrape entry does not parse back (%v, %d):\n%.300s", err, len(ss), e)
				}
			}
		})
	}
}
