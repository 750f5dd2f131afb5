package endpoint

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/engine"
)

// TestChatOutputLimitSpellings (issue 36 Deliver 7): a chat request to a
// server whose engine is known (configured here; detected alike) carries
// its output limit as max_tokens beside max_completion_tokens, since
// Ollama reads only max_tokens; to a server of unknown engine (it may be
// OpenAI's, whose reasoning models refuse max_tokens) only
// max_completion_tokens.
func TestChatOutputLimitSpellings(t *testing.T) {
	base, _ := simtest.Start(t, simtest.Fast())
	for _, tc := range []struct {
		eng  engine.Name
		both bool
	}{{engine.Ollama, true}, {engine.VLLM, true}, {engine.Auto, false}} {
		rec := simtest.Record(t, base)
		e, err := New(Options{BaseURL: rec.URL, API: client.APIChat, Timeout: 30 * time.Second, Engine: tc.eng})
		if err != nil {
			t.Fatal(err)
		}
		c, err := e.Client("llmprobe-sim")
		if err != nil {
			t.Fatal(err)
		}
		r := &prober.Record{}
		c.Do(context.Background(), client.Request{Messages: []client.Message{{Role: "user", Content: "hi"}}, MaxTokens: 3}, r)
		e.CloseIdleConnections()
		if !r.OK() {
			t.Fatalf("%s: %s %s", tc.eng, r.Error, r.ErrorMessage)
		}
		ex := rec.Exchanges()
		if len(ex) != 1 {
			t.Fatalf("%s: %d requests recorded", tc.eng, len(ex))
		}
		var body map[string]any
		if err := json.Unmarshal(ex[0].Request, &body); err != nil {
			t.Fatal(err)
		}
		_, has := body["max_tokens"]
		if body["max_completion_tokens"] != 3.0 || has != tc.both || (has && body["max_tokens"] != 3.0) {
			t.Errorf("engine %q: body %s, want max_completion_tokens 3 and max_tokens %v", tc.eng, ex[0].Request, tc.both)
		}
	}
}
