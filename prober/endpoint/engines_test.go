package endpoint

import (
	"context"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/engine"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// TestDiscoverAndSizePersonas detects each simulator persona, reads its
// version and context length from the engine's own endpoint, and sizes
// prompts with its tokenizer (or by calibration where it has none), for
// both APIs. The count must equal the usage.prompt_tokens the server
// reports for the same prompt.
func TestDiscoverAndSizePersonas(t *testing.T) {
	type want struct {
		engine    engine.Name
		from      string // Info.EngineSource
		version   string
		lenSource string
		config    string // a key EngineConfig must hold
		method    string // completions API sizing method
		chat      string // chat API sizing method
	}
	f := func(persona string, w want) {
		t.Helper()
		t.Run(persona, func(t *testing.T) {
			sc := fastSim()
			sc.Engine = persona
			sc.MaxModelLen = 3000
			base, _ := simtest.Start(t, sc)
			for _, api := range []string{client.APICompletions, client.APIChat} {
				e := newEndpoint(t, Options{BaseURL: base, API: api})
				info := discover(t, e)
				if info.Engine != w.engine || info.EngineSource != w.from || info.ServerVersion != w.version ||
					info.MaxModelLen != 3000 || info.MaxModelLenSource != w.lenSource || info.Model != sc.Model {
					t.Errorf("%s: info = %+v", api, info)
				}
				if _, ok := info.EngineConfig[w.config]; !ok {
					t.Errorf("%s: engine config %v lacks %s", api, info.EngineConfig, w.config)
				}
				if e.Engine().Name() != w.engine {
					t.Errorf("%s: Engine() = %s", api, e.Engine().Name())
				}
				sz, err := e.PromptSizing(context.Background(), info.Model)
				if err != nil {
					t.Fatalf("%s: sizing: %v", api, err)
				}
				wantMethod := w.method
				if api == client.APIChat {
					wantMethod = w.chat
				}
				if sz.Method() != wantMethod {
					t.Errorf("%s: sizing method %s (fallback %q), want %s", api, sz.Method(), sz.Fallback, wantMethod)
				}
				n, rec := countAndSend(t, e, sz, api, info.Model, 77, 3)
				if !rec.OK() || rec.PromptTokens != n || rec.CompletionTokens != 3 || rec.TokensCounted {
					t.Errorf("%s: counted %d; record ok=%v %s %q prompt_tokens=%d completion_tokens=%d counted=%v",
						api, n, rec.OK(), rec.Error, rec.ErrorMessage, rec.PromptTokens, rec.CompletionTokens, rec.TokensCounted)
				}
			}
		})
	}
	tokenize, calibrated := workload.MethodServerTokenize, workload.MethodCalibrated
	f(simulator.EngineVLLM, want{engine.VLLM, EngineFromMetrics, simulator.Version, "/v1/models max_model_len", "block_size", tokenize, tokenize})
	f(simulator.EngineSGLang, want{engine.SGLang, EngineFromMetrics, simulator.VersionSGLang, "/v1/models max_model_len", "max_running_requests", tokenize, calibrated})
	f(simulator.EngineTGI, want{engine.TGI, EngineFromMetrics, simulator.VersionTGI, "/info max_total_tokens", "max_input_tokens", tokenize, tokenize})
	f(simulator.EngineLlamaCpp, want{engine.LlamaCpp, EngineFromMetrics, simulator.VersionLlamaCpp, "/props default_generation_settings.n_ctx", "total_slots", tokenize, tokenize})
	f(simulator.EngineOllama, want{engine.Ollama, "/api/tags", simulator.VersionOllama, engine.OllamaPsContextSource, "context_length_trained", calibrated, calibrated})
}

// TestConfiguredEngineSkipsDetection: a configured engine is used as is
// (no detection), and its own endpoints are read.
func TestConfiguredEngineSkipsDetection(t *testing.T) {
	sc := fastSim()
	sc.Engine = simulator.EngineLlamaCpp
	base, _ := simtest.Start(t, sc)
	e := newEndpoint(t, Options{BaseURL: base, Engine: engine.LlamaCpp})
	info := discover(t, e)
	if info.Engine != engine.LlamaCpp || info.EngineSource != EngineFromConfig || info.ServerVersion != simulator.VersionLlamaCpp ||
		info.MaxModelLen != sc.MaxModelLen {
		t.Errorf("info = %+v", info)
	}
	// A wrong configured engine is believed: vLLM's /version does not
	// exist on llama.cpp, so the version stays unknown (never guessed).
	e = newEndpoint(t, Options{BaseURL: base, Engine: engine.VLLM})
	info = discover(t, e)
	if info.Engine != engine.VLLM || info.ServerVersion != "" || info.MaxModelLen != 0 {
		t.Errorf("info with the wrong engine = %+v", info)
	}
}

// TestVLLMShapeAgainstLlamaCppIsNotACount: llama.cpp answers vLLM's
// {"prompt"} request with 200 {"tokens": []}; that must not size a prompt
// as 0 tokens, and the generic policy falls back to calibration.
func TestVLLMShapeAgainstLlamaCppIsNotACount(t *testing.T) {
	sc := fastSim()
	sc.Engine = simulator.EngineLlamaCpp
	base, _ := simtest.Start(t, sc)
	st, err := workload.NewServerTokenizer(workload.ServerTokenizerOptions{BaseURL: base, Shape: workload.TokenizeVLLM})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := st.Count(context.Background(), "a few words here"); err == nil {
		t.Fatalf("vLLM's shape against llama.cpp counted %d tokens without error", n)
	}
	st, err = workload.NewServerTokenizer(workload.ServerTokenizerOptions{BaseURL: base, Shape: workload.TokenizeLlamaCpp})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := st.Count(context.Background(), "a few words here"); err != nil || n != 4 {
		t.Fatalf("llama.cpp's shape counted %d, %v; want 4", n, err)
	}
	// An endpoint told it is vLLM (detection skipped) still refuses the
	// zero count, and then tries the other shapes (issue 22 V4): llama.cpp's
	// counts right.
	e := newEndpoint(t, Options{BaseURL: base, Engine: engine.VLLM})
	sz, err := e.PromptSizing(context.Background(), sc.Model)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := sz.Tokenizer.Count(context.Background(), "a few words here"); sz.Method() != workload.MethodServerTokenize ||
		err != nil || n != 4 {
		t.Errorf("sizing %s (fallback %q) counted %d, %v; want the server's tokenizer in llama.cpp's shape: 4", sz.Method(), sz.Fallback, n, err)
	}
}
