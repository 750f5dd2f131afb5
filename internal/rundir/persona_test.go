package rundir

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober/engine"
	"github.com/llmprobe/llmprobe/prober/fingerprint"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// serverFigures are the keys of a step's "server" object that hold figures
// (ServerStats), each a number or an object of numbers when recorded.
var serverFigures = []string{"prompt_tokens", "generation_tokens", "preemptions", "prefix_cache_queries", "prefix_cache_hits",
	"prefix_cache_hit_rate", "warmup_prefix_cache_hit_rate", "max_running", "max_waiting", "max_kv_cache_usage",
	"ttft", "itl", "tpot", "e2el", "queue_time", "client_minus_server_ttft_mean_ms"}

// TestRunPersonas sweeps each simulator persona (`simulate --engine`) with
// --engine auto, as `llmprobe sweep --target URL` does: the engine is
// detected and recorded with how it was found, the server version and
// context length come from the engine's own endpoints, the idle proof holds
// wherever the engine has running/waiting gauges, every server-side figure
// the engine offers is recorded, and each one it lacks is not-recorded with
// a reason naming the engine (docs/engines.md lists them).
func TestRunPersonas(t *testing.T) {
	tests := []struct {
		engine, title string
		source        string // fingerprint engine_source
		contextSource string // fingerprint max_model_len_source
		version       string
		// missing are the server figures the engine does not expose (nil
		// for Ollama: no /metrics at all).
		missing []string
	}{
		{engine: simulator.EngineVLLM, title: "vLLM", source: "/metrics names", contextSource: "/v1/models max_model_len",
			version: simulator.Version, missing: []string{}},
		{engine: simulator.EngineSGLang, title: "SGLang", source: "/metrics names", contextSource: "/v1/models max_model_len",
			version: simulator.VersionSGLang, missing: []string{"preemptions", "tpot"}},
		{engine: simulator.EngineTGI, title: "TGI", source: "/metrics names", contextSource: "/info max_total_tokens",
			version: simulator.VersionTGI, missing: []string{"preemptions", "prefix_cache_queries", "prefix_cache_hits",
				"prefix_cache_hit_rate", "warmup_prefix_cache_hit_rate", "max_kv_cache_usage", "ttft", "itl",
				"client_minus_server_ttft_mean_ms"}},
		{engine: simulator.EngineLlamaCpp, title: "llama.cpp", source: "/metrics names",
			contextSource: "/props default_generation_settings.n_ctx", version: simulator.VersionLlamaCpp,
			// The prefix-cache figures come from llamacpp:prompt_tokens_total
			// and llamacpp:prompt_tokens_cached_total (issue 22 V7).
			missing: []string{"preemptions", "ttft", "itl", "tpot", "e2el", "queue_time", "client_minus_server_ttft_mean_ms"}},
		{engine: simulator.EngineOllama, title: "Ollama", source: "/api/tags", contextSource: engine.OllamaPsContextSource,
			version: simulator.VersionOllama},
	}
	for _, tt := range tests {
		t.Run(tt.engine, func(t *testing.T) {
			sc := simtest.Fast()
			sc.Engine = tt.engine
			url, _ := simtest.Start(t, sc)
			cfg := testConfig(t, url)
			cfg.Rates, cfg.RatesText = []float64{50}, "50"
			res := mustRun(t, cfg, testOptions(t))
			m := verifyClean(t, res.Dir)
			tg := m.Fingerprint.Target
			if tg.Engine != tt.engine || tg.EngineSource != tt.source {
				t.Errorf("fingerprint engine %q from %q, want %q from %q", tg.Engine, tg.EngineSource, tt.engine, tt.source)
			}
			if tg.ServerVersion != tt.version {
				t.Errorf("server_version %q, want %q", tg.ServerVersion, tt.version)
			}
			// Every persona's configuration is recorded, Ollama's from
			// /api/show though it has no /metrics (issue 36 Deliver 7).
			if len(tg.EngineConfig) == 0 || tg.NotRecorded != nil {
				t.Errorf("engine_config %v (not recorded: %v)", tg.EngineConfig, tg.NotRecorded)
			}
			if tt.engine == simulator.EngineOllama && (tg.EngineConfig["num_ctx"] != strconv.Itoa(sc.MaxModelLen) || tg.EngineConfig["family"] == "") {
				t.Errorf("Ollama engine_config %v lacks /api/show's num_ctx and family", tg.EngineConfig)
			}
			if !tg.MaxModelLen.Recorded || tg.MaxModelLen.Value != int64(sc.MaxModelLen) || tg.MaxModelLenSource != tt.contextSource {
				t.Errorf("max_model_len %v from %q, want %d from %q", tg.MaxModelLen, tg.MaxModelLenSource, sc.MaxModelLen, tt.contextSource)
			}
			st := res.Result.Steps[0]
			if st.Stats.Completed != 20 || st.DistinctPrompts != 20 {
				t.Errorf("completed %d, distinct prompts %d (want 20 and 20)", st.Stats.Completed, st.DistinctPrompts)
			}
			notes := strings.Join(res.Result.Notes, "\n")
			if tt.missing == nil {
				// Ollama: no /metrics, so no idle proof and no server figure,
				// each saying why.
				if st.Validity.Idle.Status != sweep.IdleNotRecorded || !strings.Contains(st.Validity.Idle.Reason, "Ollama") ||
					st.Server.Status != fingerprint.NotRecorded || !strings.Contains(st.Server.Reason, "Ollama") {
					t.Errorf("idle %+v, server %s (%s)", st.Validity.Idle, st.Server.Status, st.Server.Reason)
				}
				if !strings.Contains(notes, "Ollama serves no Prometheus /metrics") {
					t.Errorf("notes do not name the engine: %s", notes)
				}
				return
			}
			// A busy machine can make the client late (client-saturated):
			// that flag depends on the load beside the test, every other
			// one is a fault.
			flags := slices.DeleteFunc(slices.Clone(st.Validity.Flags), func(f string) bool { return f == sweep.FlagClientSaturated })
			if st.Validity.Idle.Status != sweep.IdleProven || len(flags) > 0 {
				t.Errorf("idle proof %+v, flags %v %v", st.Validity.Idle, st.Validity.Flags, st.Validity.Reasons)
			}
			b, err := json.Marshal(st.Server)
			if err != nil {
				t.Fatal(err)
			}
			var server map[string]any
			if err := json.Unmarshal(b, &server); err != nil {
				t.Fatal(err)
			}
			for _, k := range serverFigures {
				v := server[k]
				if o, ok := v.(map[string]any); ok {
					v = o["count"]
				}
				if slices.Contains(tt.missing, k) {
					if v != fingerprint.NotRecorded || !strings.Contains(st.Server.NotRecorded[k], tt.title) {
						t.Errorf("%s = %v (reason %q), want not-recorded with a reason naming %s", k, v, st.Server.NotRecorded[k], tt.title)
					}
					continue
				}
				if _, ok := v.(float64); !ok {
					t.Errorf("%s = %v, want a recorded figure (reason %q)", k, v, st.Server.NotRecorded[k])
				}
			}
			if len(st.Server.NotRecorded) != len(tt.missing) {
				t.Errorf("not-recorded reasons %v, want exactly %v", st.Server.NotRecorded, tt.missing)
			}
			switch {
			case len(tt.missing) == 0 && strings.Contains(notes, "the server is "):
				t.Errorf("a note about missing figures for %s: %s", tt.title, notes)
			case len(tt.missing) > 0 && !strings.Contains(notes, "the server is "+tt.title+", whose /metrics has no "):
				t.Errorf("notes do not name the engine and what it lacks: %s", notes)
			}
		})
	}
}
