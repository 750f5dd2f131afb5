package endpoint_test

import (
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/endpoint"
)

func TestNewCheckRequest(t *testing.T) {
	c := endpoint.CheckRequest{Prompt: "What is 2 + 2?", MaxTokens: 8, Seed: 7, Stop: []string{", 6", `"q"`}}
	r, err := endpoint.NewCheckRequest(client.APICompletions, "id-1", c)
	if err != nil {
		t.Fatal(err)
	}
	if r.Prompt != c.Prompt || r.Messages != nil || r.MaxTokens != 8 || r.ID != "id-1" || r.Collect == nil || r.IgnoreEOS || r.NoStream {
		t.Errorf("request %+v", r)
	}
	if got, want := string(r.Body), `,"temperature":0,"seed":7,"stop":[", 6","\"q\""]`; got != want {
		t.Errorf("body %s, want %s", got, want)
	}
	if r.Logprobs || r.CollectLogprobs != nil {
		t.Errorf("logprobs asked without TopLogprobs")
	}

	c.TopLogprobs, c.LogprobTokens, c.Stop = 2, 16, nil
	r, err = endpoint.NewCheckRequest(client.APIChat, "id-2", c)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Messages) != 1 || r.Messages[0] != (client.Message{Role: "user", Content: c.Prompt}) || r.Prompt != "" {
		t.Errorf("chat messages %+v", r.Messages)
	}
	if !r.Logprobs || r.TopLogprobs != 2 || r.CollectLogprobs == nil || r.CollectLogprobs.Max != 16 || strings.Contains(string(r.Body), "stop") {
		t.Errorf("request %+v", r)
	}

	msgs := endpoint.CheckRequest{Messages: []client.Message{{Role: "system", Content: "s"}, {Role: "user", Content: "u"}}}
	if r, err := endpoint.NewCheckRequest(client.APIChat, "id-3", msgs); err != nil || len(r.Messages) != 2 {
		t.Errorf("chat with messages: %+v, %v", r.Messages, err)
	}
	if _, err := endpoint.NewCheckRequest(client.APICompletions, "id-4", msgs); err == nil ||
		err.Error() != "messages need a chat target (api: chat or messages), this one is completions" {
		t.Errorf("messages on completions: %v", err)
	}
	// Each request collects into a buffer of its own.
	a, _ := endpoint.NewCheckRequest(client.APICompletions, "a", c)
	b, _ := endpoint.NewCheckRequest(client.APICompletions, "b", c)
	if a.Collect == b.Collect || a.CollectLogprobs == b.CollectLogprobs {
		t.Error("requests share their collection buffers")
	}
}
