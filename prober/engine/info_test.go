package engine_test

import (
	"testing"

	"github.com/llmprobe/llmprobe/prober/engine"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]engine.Name{"": engine.Auto, "auto": engine.Auto, " llamacpp ": engine.LlamaCpp, "tgi": engine.TGI} {
		if got, err := engine.Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := engine.Parse("llama.cpp"); err == nil || err.Error() != `unknown engine "llama.cpp" (want auto, vllm, sglang, tgi, llamacpp, ollama)` {
		t.Errorf("Parse(llama.cpp) error %v", err)
	}
}

// TestInfoParsers pins what each info endpoint yields, and that an answer in
// another shape (or without the context field) leaves it unknown.
func TestInfoParsers(t *testing.T) {
	f := func(name string, parse func([]byte) (engine.Fingerprint, bool), body string, ok bool, version string, ctx int) {
		t.Helper()
		got, gotOK := parse([]byte(body))
		if gotOK != ok || got.Version != version || got.ContextLength != ctx {
			t.Errorf("%s: got %+v ok=%v; want version %q ctx %d ok=%v", name, got, gotOK, version, ctx, ok)
		}
	}
	f("props", engine.ParseProps, `{"default_generation_settings":{"n_ctx":4096},"total_slots":4,"build_info":"b1-x"}`, true, "b1-x", 4096)
	f("props without n_ctx", engine.ParseProps, `{"default_generation_settings":{},"build_info":"b1"}`, true, "b1", 0)
	f("props of another server", engine.ParseProps, `{"version":"1"}`, false, "", 0)
	f("tgi", engine.ParseTGIInfo, `{"model_id":"m","max_total_tokens":2048,"max_input_length":1024,"version":"1.4.0"}`, true, "1.4.0", 2048)
	f("tgi shape without model_id", engine.ParseTGIInfo, `{"max_total_tokens":2048}`, false, "", 0)
	f("sglang", engine.ParseSGLangServerInfo, `{"model_path":"m","version":"0.4.0","context_length":null}`, true, "0.4.0", 0)
	f("sglang with context", engine.ParseSGLangServerInfo, `{"model_path":"m","version":"0.4.0","context_length":"8192"}`, true, "0.4.0", 8192)
	f("ollama version", engine.ParseOllamaVersion, `{"version":"0.5.7"}`, true, "0.5.7", 0)
	f("ollama version empty", engine.ParseOllamaVersion, `{"version":""}`, false, "", 0)
	// The trained context is config, never the served context.
	f("ollama show without num_ctx", engine.ParseOllamaShow,
		`{"parameters":"stop \"x\"","model_info":{"general.architecture":"llama","llama.context_length":131072}}`, true, "", 0)
	f("ollama show with num_ctx", engine.ParseOllamaShow, `{"parameters":"num_ctx 8192\nstop \"x\""}`, true, "", 8192)
	if got, _ := engine.ParseOllamaShow([]byte(`{"model_info":{"general.architecture":"llama","llama.context_length":131072}}`)); got.Config["context_length_trained"] != "131072" {
		t.Errorf("trained context not in config: %v", got.Config)
	}
	for owner, want := range map[string]engine.Name{"vllm": engine.VLLM, "sglang": engine.SGLang, "llamacpp": engine.LlamaCpp, "library": engine.Unknown, "": engine.Unknown} {
		if e, _ := engine.FromOwner(owner); e.Name() != want {
			t.Errorf("FromOwner(%q) = %s, want %s", owner, e.Name(), want)
		}
	}
}
