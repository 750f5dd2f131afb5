package engine_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/engine"
	"github.com/llmprobe/llmprobe/prober/scrape"
	"github.com/llmprobe/llmprobe/prober/workload"
)

func fetch(t *testing.T, base string) *scrape.Snapshot {
	t.Helper()
	s, err := scrape.Fetch(context.Background(), http.DefaultClient, base+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestAdapterReadsPersonaMetrics serves each persona with /metrics over
// real HTTP: the engine is detected from its names, the idle proof is known
// and right when idle and under load, and the counter deltas and latency
// histograms of one request are the request's figures.
func TestAdapterReadsPersonaMetrics(t *testing.T) {
	f := func(persona string, want engine.Name, latencies []engine.Latency, counters map[engine.Quantity]float64) {
		t.Helper()
		t.Run(persona, func(t *testing.T) {
			sc := simulator.DefaultConfig()
			sc.Engine = persona
			sc.StepBase = 5 * time.Millisecond
			sc.StepPerSeq, sc.StepPerPrefillToken = 0, 0
			base, _ := simtest.Start(t, sc)
			before := fetch(t, base)
			eng, ok := engine.FromMetrics(before)
			if !ok || eng.Name() != want || !eng.HasMetrics() {
				t.Fatalf("detected %v (%v), want %s", eng.Name(), ok, want)
			}
			if idle, known := eng.Idle(before); !idle || !known {
				t.Fatalf("idle before any request: idle=%v known=%v", idle, known)
			}
			c, err := client.New(client.Options{BaseURL: base, Model: sc.Model})
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan *prober.Record)
			go func() {
				rec := &prober.Record{}
				// 40 words = 40 prompt tokens (the toy tokenizer), 100
				// output tokens at 5 ms a step: about half a second busy.
				c.Do(context.Background(), client.Request{ID: "load", Prompt: workload.CalibrationText(40),
					MaxTokens: 100, IgnoreEOS: true}, rec)
				done <- rec
			}()
			testutil.Eventually(t, "the adapter to see the request running", func() bool {
				s := fetch(t, base)
				idle, known := eng.Idle(s)
				return known && !idle && eng.Read(s, engine.Running).Value == 1
			})
			rec := <-done
			if !rec.OK() {
				t.Fatalf("request failed: %s %s", rec.Error, rec.ErrorMessage)
			}
			var after *scrape.Snapshot
			testutil.Eventually(t, "the adapter to see the server idle again", func() bool {
				after = fetch(t, base)
				idle, known := eng.Idle(after)
				return known && idle
			})
			for q, v := range counters {
				if got := eng.Delta(before, after, q); !got.Known || got.Value != v {
					t.Errorf("%s delta = %+v, want %v (from %v)", q, got, v, eng.Source(q))
				}
			}
			for _, q := range []engine.Quantity{engine.PrefillSeconds, engine.DecodeSeconds} {
				if len(eng.Source(q)) == 0 {
					continue
				}
				if got := eng.Delta(before, after, q); !got.Known || got.Value <= 0 {
					t.Errorf("%s delta = %+v, want > 0", q, got)
				}
			}
			if got := eng.Delta(before, after, engine.Running); got.Known {
				t.Errorf("a delta of a gauge is known: %+v", got)
			}
			for _, l := range engine.Latencies {
				h, ok := eng.HistogramDelta(before, after, l)
				wantIt := false
				for _, x := range latencies {
					wantIt = wantIt || x == l
				}
				switch {
				case wantIt && (!ok || h.Count() < 1):
					t.Errorf("%s histogram delta: ok=%v", l, ok)
				case !wantIt && ok:
					t.Errorf("%s histogram read for an engine without it", l)
				}
			}
			if kv := eng.Read(after, engine.KVCacheUsage); (len(eng.Source(engine.KVCacheUsage)) > 0) != kv.Known {
				t.Errorf("kv-cache usage %+v with sources %v", kv, eng.Source(engine.KVCacheUsage))
			}
		})
	}
	all := []engine.Latency{engine.TTFT, engine.ITL, engine.TPOT, engine.E2E, engine.QueueTime}
	f(simulator.EngineVLLM, engine.VLLM, all, map[engine.Quantity]float64{
		engine.PromptTokens: 40, engine.GenerationTokens: 100, engine.FinishedRequests: 1,
		engine.PrefixCacheQueries: 40, engine.PrefixCacheHits: 0, engine.Preemptions: 0})
	f(simulator.EngineSGLang, engine.SGLang, []engine.Latency{engine.TTFT, engine.ITL, engine.E2E, engine.QueueTime},
		map[engine.Quantity]float64{engine.PromptTokens: 40, engine.GenerationTokens: 100, engine.FinishedRequests: 1,
			engine.PrefixCacheQueries: 40, engine.PrefixCacheHits: 0})
	f(simulator.EngineTGI, engine.TGI, []engine.Latency{engine.TPOT, engine.E2E, engine.QueueTime},
		map[engine.Quantity]float64{engine.PromptTokens: 40, engine.GenerationTokens: 100, engine.FinishedRequests: 1})
	f(simulator.EngineLlamaCpp, engine.LlamaCpp, nil,
		map[engine.Quantity]float64{engine.PromptTokens: 40, engine.GenerationTokens: 100,
			engine.PrefixCacheQueries: 40, engine.PrefixCacheHits: 0})
}

// TestLlamaCppPromptCacheCounters: llama.cpp's tokens looked up in its
// prompt cache are the evaluated ones plus the cached ones; a build without
// llamacpp:prompt_tokens_cached_total has neither figure.
func TestLlamaCppPromptCacheCounters(t *testing.T) {
	mk := func(evaluated, cached float64, withCached bool) *scrape.Snapshot {
		t.Helper()
		text := "# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing 0\n" +
			"# TYPE llamacpp:prompt_tokens_total counter\nllamacpp:prompt_tokens_total " + ftoa(evaluated) + "\n"
		if withCached {
			text += "# TYPE llamacpp:prompt_tokens_cached_total counter\nllamacpp:prompt_tokens_cached_total " + ftoa(cached) + "\n"
		}
		s, err := scrape.NewSnapshot(time.Now(), []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	before, after := mk(100, 50, true), mk(130, 250, true)
	eng, ok := engine.FromMetrics(after)
	if !ok || eng.Name() != engine.LlamaCpp {
		t.Fatalf("detected %s", eng.Name())
	}
	q, h := eng.Delta(before, after, engine.PrefixCacheQueries), eng.Delta(before, after, engine.PrefixCacheHits)
	if !q.Known || q.Value != 230 || !h.Known || h.Value != 200 {
		t.Errorf("prefix cache deltas %+v %+v, want 230 looked up (30 evaluated + 200 cached), 200 hits", q, h)
	}
	if v := eng.Read(after, engine.PrefixCacheQueries); !v.Known || v.Value != 380 {
		t.Errorf("prefix cache queries read %+v, want 380", v)
	}
	old0, old1 := mk(100, 0, false), mk(130, 0, false)
	if q, h := eng.Delta(old0, old1, engine.PrefixCacheQueries), eng.Delta(old0, old1, engine.PrefixCacheHits); q.Known || h.Known {
		t.Errorf("a build without the cached counter: %+v %+v, want unknown", q, h)
	}
	if got := eng.Source(engine.PrefixCacheQueries); len(got) != 1 || got[0] != "llamacpp:prompt_tokens_total + llamacpp:prompt_tokens_cached_total" {
		t.Errorf("Source = %v", got)
	}
}

// TestOllamaHasNoMetrics: the Ollama persona answers /metrics with 404 and
// its adapter reads nothing.
func TestOllamaHasNoMetrics(t *testing.T) {
	sc := simulator.DefaultConfig()
	sc.Engine = simulator.EngineOllama
	base, _ := simtest.Start(t, sc)
	if _, err := scrape.Fetch(context.Background(), http.DefaultClient, base+"/metrics"); err == nil {
		t.Fatal("the Ollama persona serves /metrics")
	}
	eng := engine.Get(engine.Ollama)
	if eng.HasMetrics() || eng.TokenizeShape(false) != workload.TokenizeNone {
		t.Errorf("ollama adapter: metrics %v, tokenize %s", eng.HasMetrics(), eng.TokenizeShape(false))
	}
	if _, known := eng.Idle(nil); known {
		t.Error("idle known without a snapshot")
	}
}

// TestVLLMV0Names: a server with the pre-V1 names (gpu_cache_usage_perc,
// gpu_prefix_cache_*, time_per_output_token_seconds) is read through the
// fallbacks.
func TestVLLMV0Names(t *testing.T) {
	mk := func(q, h, itl float64) *scrape.Snapshot {
		t.Helper()
		text := "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 0\n" +
			"# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting 2\n" +
			"# TYPE vllm:gpu_cache_usage_perc gauge\nvllm:gpu_cache_usage_perc{model_name=\"m\"} 0.25\n" +
			"# TYPE vllm:gpu_prefix_cache_queries_total counter\nvllm:gpu_prefix_cache_queries_total " + ftoa(q) + "\n" +
			"# TYPE vllm:gpu_prefix_cache_hits_total counter\nvllm:gpu_prefix_cache_hits_total " + ftoa(h) + "\n" +
			"# TYPE vllm:time_per_output_token_seconds histogram\n" +
			"vllm:time_per_output_token_seconds_bucket{le=\"0.1\"} " + ftoa(itl) + "\n" +
			"vllm:time_per_output_token_seconds_bucket{le=\"+Inf\"} " + ftoa(itl) + "\n" +
			"vllm:time_per_output_token_seconds_sum " + ftoa(itl*0.05) + "\n" +
			"vllm:time_per_output_token_seconds_count " + ftoa(itl) + "\n"
		s, err := scrape.NewSnapshot(time.Now(), []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	before, after := mk(100, 10, 4), mk(300, 110, 10)
	eng, ok := engine.FromMetrics(after)
	if !ok || eng.Name() != engine.VLLM {
		t.Fatalf("detected %s", eng.Name())
	}
	if idle, known := eng.Idle(after); idle || !known {
		t.Errorf("idle=%v known=%v with 2 waiting", idle, known)
	}
	if v := eng.Read(after, engine.KVCacheUsage); !v.Known || v.Value != 0.25 {
		t.Errorf("kv usage %+v", v)
	}
	if q, h := eng.Delta(before, after, engine.PrefixCacheQueries), eng.Delta(before, after, engine.PrefixCacheHits); q.Value != 200 || h.Value != 100 {
		t.Errorf("prefix cache deltas %+v %+v", q, h)
	}
	if h, ok := eng.HistogramDelta(before, after, engine.ITL); !ok || h.Count() != 6 {
		t.Errorf("itl delta ok=%v", ok)
	}
	if v := eng.Delta(before, after, engine.PromptTokens); v.Known {
		t.Errorf("prompt tokens known without the metric: %+v", v)
	}
}

// TestVLLMRustFrontendTokens: vLLM's Rust frontend serves OpenMetrics
// with no vllm:prompt_tokens or vllm:generation_tokens counters (its
// registry, testdata/engines/vllm/0.24-rust-frontend/README.md), only the
// per-request token histograms: the token deltas are their sums'.
func TestVLLMRustFrontendTokens(t *testing.T) {
	mk := func(n, prompt, gen float64) *scrape.Snapshot {
		t.Helper()
		hist := func(name string, sum float64) string {
			return "# TYPE " + name + " histogram\n" +
				name + "_bucket{model_name=\"m\",engine=\"0\",le=\"+Inf\"} " + ftoa(n) + "\n" +
				name + "_sum{model_name=\"m\",engine=\"0\"} " + ftoa(sum) + "\n" +
				name + "_count{model_name=\"m\",engine=\"0\"} " + ftoa(n) + "\n"
		}
		text := "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\",engine=\"0\"} 0\n" +
			"# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name=\"m\",engine=\"0\"} 0\n" +
			"# TYPE vllm:request_success counter\nvllm:request_success_total{model_name=\"m\",engine=\"0\",finish_reason=\"length\"} " + ftoa(n) + "\n" +
			hist("vllm:request_prompt_tokens", prompt) + hist("vllm:request_generation_tokens", gen) + "# EOF\n"
		s, err := scrape.NewSnapshot(time.Now(), []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	before, after := mk(2, 128, 32), mk(5, 320, 80)
	eng, ok := engine.FromMetrics(after)
	if !ok || eng.Name() != engine.VLLM {
		t.Fatalf("detected %s", eng.Name())
	}
	for q, want := range map[engine.Quantity]float64{engine.PromptTokens: 192, engine.GenerationTokens: 48, engine.FinishedRequests: 3} {
		if v := eng.Delta(before, after, q); !v.Known || v.Value != want {
			t.Errorf("%s delta %+v, want %v", q, v, want)
		}
	}
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// TestRecorderMaximaForAnyEngine: a scrape.Recorder given the adapter's
// gauges keeps the running maximum of a non-vLLM engine.
func TestRecorderMaximaForAnyEngine(t *testing.T) {
	sc := simulator.DefaultConfig()
	sc.Engine = simulator.EngineLlamaCpp
	sc.StepBase = 5 * time.Millisecond
	base, _ := simtest.Start(t, sc)
	eng := engine.Get(engine.LlamaCpp)
	var out testutil.SyncBuffer
	rec := scrape.NewRecorder(http.DefaultClient, base+"/metrics", 20*time.Millisecond, &out, scrape.WithGauges(eng.RecorderGauges))
	stop := rec.Start(context.Background())
	c, err := client.New(client.Options{BaseURL: base, Model: sc.Model})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Do(context.Background(), client.Request{ID: "x", Prompt: "a b c", MaxTokens: 400, IgnoreEOS: true}, &prober.Record{})
	}()
	testutil.Eventually(t, "the recorder to see the request running", func() bool { return rec.Max()[string(engine.Running)] == 1 })
	<-done
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	m := rec.Max()
	if m[string(engine.Running)] != 1 || m[string(engine.Waiting)] != 0 {
		t.Errorf("maxima %v, want running 1 and waiting 0", m)
	}
	if _, ok := m["vllm:num_requests_running"]; ok {
		t.Errorf("vLLM names kept: %v", m)
	}
}

// TestVLLMNamesByVersion serves the vLLM persona with the current metric
// names and with those before 0.9.2 (--legacy-metric-names) over real HTTP,
// sends both the same requests (a prompt sent twice, so the second finds
// its blocks in the prefix cache) and reads both through the adapter: every
// figure is known under either set of names and they agree; only the
// per-request TPOT histogram, which the old versions lack, is unknown there.
func TestVLLMNamesByVersion(t *testing.T) {
	read := func(legacy bool) (figures map[string]float64, tpotKnown bool) {
		t.Helper()
		sc := simulator.DefaultConfig()
		sc.LegacyMetricNames = legacy
		sc.StepBase, sc.StepPerSeq, sc.StepPerPrefillToken = time.Millisecond, 0, 0
		base, _ := simtest.Start(t, sc)
		before := fetch(t, base)
		eng, ok := engine.FromMetrics(before)
		if !ok || eng.Name() != engine.VLLM {
			t.Fatalf("legacy=%v: detected %s", legacy, eng.Name())
		}
		c, err := client.New(client.Options{BaseURL: base, Model: sc.Model})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			rec := &prober.Record{}
			c.Do(context.Background(), client.Request{ID: "r" + strconv.Itoa(i), Prompt: workload.CalibrationText(48),
				MaxTokens: 8, IgnoreEOS: true}, rec)
			if !rec.OK() {
				t.Fatalf("legacy=%v: request %d failed: %s %s", legacy, i, rec.Error, rec.ErrorMessage)
			}
		}
		var after *scrape.Snapshot
		testutil.Eventually(t, "the engine to retire both requests", func() bool {
			after = fetch(t, base)
			v := eng.Delta(before, after, engine.FinishedRequests)
			idle, known := eng.Idle(after)
			return v.Known && v.Value == 2 && idle && known
		})
		figures = map[string]float64{}
		for _, q := range []engine.Quantity{engine.PromptTokens, engine.PrefixCacheQueries, engine.PrefixCacheHits} {
			v := eng.Delta(before, after, q)
			if !v.Known {
				t.Fatalf("legacy=%v: %s unknown (sources %v)", legacy, q, eng.Source(q))
			}
			figures[string(q)] = v.Value
		}
		for _, q := range []engine.Quantity{engine.KVCacheUsage, engine.Waiting} {
			v := eng.Read(after, q)
			if !v.Known {
				t.Fatalf("legacy=%v: %s unknown (sources %v)", legacy, q, eng.Source(q))
			}
			figures[string(q)] = v.Value
		}
		for _, l := range []engine.Latency{engine.TTFT, engine.ITL, engine.E2E} {
			h, ok := eng.HistogramDelta(before, after, l)
			if !ok {
				t.Fatalf("legacy=%v: %s histogram unknown (names %v)", legacy, l, eng.LatencySource(l))
			}
			figures[string(l)+" count"] = h.Count()
		}
		_, tpotKnown = eng.HistogramDelta(before, after, engine.TPOT)
		return figures, tpotKnown
	}
	current, tpotCurrent := read(false)
	legacy, tpotLegacy := read(true)
	if current["prefix_cache_hits"] <= 0 || current["itl count"] != 2*7 {
		t.Errorf("current names: %v, want prefix-cache hits > 0 and 14 ITL observations", current)
	}
	for k, v := range current {
		if legacy[k] != v {
			t.Errorf("%s: %v with the current names, %v with the legacy ones", k, v, legacy[k])
		}
	}
	if !tpotCurrent || tpotLegacy {
		t.Errorf("TPOT histogram known: current %v, legacy %v; want true, false", tpotCurrent, tpotLegacy)
	}
}
