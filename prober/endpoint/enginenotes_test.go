package endpoint

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/engine"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// TestOllamaEndpointsMissing: an Ollama behind a gateway that exposes only
// /v1 (404 on /api/version and /api/show, in Ollama's own error shape) or
// answers /api/show out of shape: discovery still succeeds, the version
// and config stay unknown (never guessed), and EngineNotes says per call
// why, with its class. Against the plain persona there is no note.
func TestOllamaEndpointsMissing(t *testing.T) {
	notFound := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":"404 page not found"}`))
	}
	f := func(name string, paths map[string]http.HandlerFunc, wantVersion string, wantConfig bool, wantNotes ...string) {
		t.Helper()
		t.Run(name, func(t *testing.T) {
			sc := fastSim()
			sc.Engine = simulator.EngineOllama
			base := simWith(t, sc, replace(paths))
			e := newEndpoint(t, Options{BaseURL: base, Engine: engine.Ollama})
			info := discover(t, e)
			if info.Engine != engine.Ollama || info.Model != sc.Model || info.ServerVersion != wantVersion {
				t.Errorf("info = %+v", info)
			}
			if (info.EngineConfig != nil) != wantConfig {
				t.Errorf("engine config %v, want recorded=%v", info.EngineConfig, wantConfig)
			}
			if len(info.EngineNotes) != len(wantNotes) {
				t.Fatalf("notes %q, want %d containing %q", info.EngineNotes, len(wantNotes), wantNotes)
			}
			for i, w := range wantNotes {
				if !strings.Contains(info.EngineNotes[i], w) {
					t.Errorf("note %d = %q, want it to contain %q", i, info.EngineNotes[i], w)
				}
			}
		})
	}
	f("both served", nil, simulator.VersionOllama, true)
	f("gateway exposes only /v1", map[string]http.HandlerFunc{engine.OllamaVersionPath: notFound, engine.OllamaShowPath: notFound}, "", false,
		"GET /api/version: HTTP 404 Not Found (http_4xx)", "POST /api/show: HTTP 404 Not Found (http_4xx)")
	f("show out of shape", map[string]http.HandlerFunc{engine.OllamaShowPath: func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`["not", "an", "object"]`))
	}}, simulator.VersionOllama, false, "POST /api/show: not in ollama's shape (invalid_response)")
	f("show fails", map[string]http.HandlerFunc{engine.OllamaShowPath: func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(`{"error":"llama runner process has terminated"}`))
	}}, simulator.VersionOllama, false, "POST /api/show: HTTP 500 Internal Server Error (http_5xx)")
	// A POST's answer is bounded and classified as a GET's (one call).
	f("show oversized", map[string]http.HandlerFunc{engine.OllamaShowPath: func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"modelfile": "` + strings.Repeat("x", MaxInfoBodyBytes) + `"}`))
	}}, simulator.VersionOllama, false, fmt.Sprintf("POST /api/show: response larger than %d bytes (invalid_response)", MaxInfoBodyBytes))
}

// TestUnservedAPI: api messages against a TGI (the persona, detected from
// its /metrics) is refused before any request with a classified error
// naming the engine and the source that shows it; the same API against the
// SGLang and vLLM personas gets a client, and a streamed answer.
func TestUnservedAPI(t *testing.T) {
	f := func(persona string, wantErr string) {
		t.Helper()
		t.Run(persona, func(t *testing.T) {
			sc := fastSim()
			sc.Engine = persona
			base, _ := simtest.Start(t, sc)
			e := newEndpoint(t, Options{BaseURL: base, API: client.APIMessages})
			info := discover(t, e)
			c, err := e.Client(info.Model)
			if wantErr != "" {
				var ee *Error
				if !errors.As(err, &ee) || ee.Class != prober.ClassHTTP4xx || !strings.Contains(ee.Msg, wantErr) {
					t.Fatalf("error %v, want http_4xx containing %q", err, wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			rec := &prober.Record{}
			c.Do(context.Background(), NewRequest(client.APIMessages, "m1", workload.Item{Prompt: "hello there", OutputTokens: 4}, true), rec)
			if !rec.OK() || rec.CompletionTokens != 4 || rec.PromptTokens == 0 || rec.TTFT <= 0 {
				t.Errorf("record ok=%v %s %q prompt %d completion %d ttft %v", rec.OK(), rec.Error, rec.ErrorMessage, rec.PromptTokens, rec.CompletionTokens, rec.TTFT)
			}
		})
	}
	f(simulator.EngineTGI, "api messages: TGI serves no Anthropic Messages API")
	f(simulator.EngineSGLang, "")
	f(simulator.EngineVLLM, "")
}
