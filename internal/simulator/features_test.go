package simulator_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// stream posts body and reads the SSE answer.
func stream(t *testing.T, url string, body any) sse {
	t.Helper()
	resp := post(t, url, body)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: status %d", url, resp.StatusCode)
	}
	return readSSE(t, resp)
}

// TestLoRAModules lists the adapters of --lora-modules with their parent
// and accepts them as a request's model; an unknown model is vLLM's 404.
func TestLoRAModules(t *testing.T) {
	cfg := fastConfig()
	cfg.LoRAModules = "sql-lora=/adapters/sql  chat-lora=/adapters/chat"
	base, _ := simtest.Start(t, cfg)
	var list struct {
		Data []struct {
			ID, Root string
			Parent   *string
		}
	}
	getJSON(t, base+"/v1/models", &list)
	if len(list.Data) != 3 || list.Data[0].Parent != nil || list.Data[1].ID != "sql-lora" || list.Data[1].Root != "/adapters/sql" ||
		list.Data[1].Parent == nil || *list.Data[1].Parent != cfg.Model || list.Data[2].ID != "chat-lora" {
		t.Fatalf("models %+v", list.Data)
	}
	var out struct{ Model string }
	postJSON(t, base+"/v1/completions", map[string]any{"model": "sql-lora", "prompt": "hi", "max_tokens": 2}, http.StatusOK, &out)
	if out.Model != "sql-lora" {
		t.Errorf("response model %q", out.Model)
	}
	var e struct{ Error struct{ Message string } }
	postJSON(t, base+"/v1/completions", map[string]any{"model": "other", "prompt": "hi"}, http.StatusNotFound, &e)
	if e.Error.Message != "The model `other` does not exist." {
		t.Errorf("404 message %q", e.Error.Message)
	}
	for _, bad := range []string{"x", "a=b a=c", cfg.Model + "=p"} {
		c := fastConfig()
		c.LoRAModules = bad
		if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), "--lora-modules: ") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// TestLogprobsShapes checks vLLM's logprobs objects, streamed and not, for
// both APIs, and vLLM's refusals.
func TestLogprobsShapes(t *testing.T) {
	base, _ := simtest.Start(t, fastConfig())
	var c struct {
		Choices []struct {
			Logprobs struct {
				Tokens      []string             `json:"tokens"`
				TopLogprobs []map[string]float64 `json:"top_logprobs"`
			} `json:"logprobs"`
		}
	}
	postJSON(t, base+"/v1/completions", map[string]any{"prompt": "hi", "max_tokens": 4, "logprobs": 3}, http.StatusOK, &c)
	if lp := c.Choices[0].Logprobs; len(lp.Tokens) != 4 || len(lp.TopLogprobs) != 4 || len(lp.TopLogprobs[0]) != 3 {
		t.Errorf("completions logprobs %+v", lp)
	}
	var ch struct {
		Choices []struct {
			Logprobs struct {
				Content []struct {
					Token       string            `json:"token"`
					TopLogprobs []json.RawMessage `json:"top_logprobs"`
				} `json:"content"`
			} `json:"logprobs"`
		}
	}
	msgs := []map[string]string{{"role": "user", "content": "hi"}}
	postJSON(t, base+"/v1/chat/completions", map[string]any{"messages": msgs, "max_tokens": 4, "logprobs": true, "top_logprobs": 2}, http.StatusOK, &ch)
	if lp := ch.Choices[0].Logprobs.Content; len(lp) != 4 || len(lp[0].TopLogprobs) != 2 || lp[0].Token == "" {
		t.Errorf("chat logprobs %+v", lp)
	}
	s := stream(t, base+"/v1/chat/completions", map[string]any{"messages": msgs, "max_tokens": 4, "logprobs": true, "stream": true})
	withLP := 0
	for _, ev := range s.events {
		if strings.Contains(ev, `"logprobs":{"content":[{`) {
			withLP++
		}
	}
	if withLP == 0 {
		t.Errorf("no streamed chunk carries logprobs: %v", s.events)
	}
	postJSON(t, base+"/v1/completions", map[string]any{"prompt": "hi", "logprobs": 21}, http.StatusBadRequest, nil)
	postJSON(t, base+"/v1/chat/completions", map[string]any{"messages": msgs, "top_logprobs": 2}, http.StatusBadRequest, nil)
	postJSON(t, base+"/v1/completions", map[string]any{"prompt": "hi", "top_p": 1.5}, http.StatusBadRequest, nil)
	postJSON(t, base+"/v1/completions", map[string]any{"prompt": "hi", "temperature": -1}, http.StatusBadRequest, nil)
	postJSON(t, base+"/v1/completions", map[string]any{"prompt": "hi", "temperature": 0.3, "top_p": 0.5, "seed": 3, "stop": []string{"x"}}, http.StatusOK, nil)
}

// TestStructuredOutput holds the simulator's json_schema output to the
// schema (validated with the prober's own checker), streamed and not,
// whatever the output length.
func TestStructuredOutput(t *testing.T) {
	base, _ := simtest.Start(t, fastConfig())
	schemas := []string{
		`{"type":"object","required":["id","qty","kind","tags","when"],"additionalProperties":false,"properties":{` +
			`"id":{"type":"string","minLength":5},"qty":{"type":"integer","minimum":3},"kind":{"enum":["a","b"]},` +
			`"tags":{"type":"array","minItems":2,"items":{"type":"number","exclusiveMinimum":1}},"when":{"type":"string","format":"date-time"}}}`,
		`{"type":"array","minItems":3,"items":{"type":"object","required":["ok"],"properties":{"ok":{"type":"boolean"}}}}`,
		`{"anyOf":[{"type":"null"},{"type":"string"}]}`,
		`{"type":"object","properties":{"n":{"const":"ünï"}},"required":["n"]}`,
	}
	for _, text := range schemas {
		sch, err := workload.CompileSchema([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		rf := map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "t", "schema": json.RawMessage(text)}}
		for _, maxTokens := range []int{1, 3, 40} {
			var out struct {
				Choices []struct{ Text string }
			}
			postJSON(t, base+"/v1/completions", map[string]any{"prompt": "hi", "max_tokens": maxTokens, "ignore_eos": true, "response_format": rf}, http.StatusOK, &out)
			if err := sch.Check([]byte(out.Choices[0].Text)); err != nil {
				t.Errorf("%s, %d tokens: %q: %v", text, maxTokens, out.Choices[0].Text, err)
			}
			s := stream(t, base+"/v1/completions", map[string]any{"prompt": "hi", "max_tokens": maxTokens, "ignore_eos": true,
				"stream": true, "response_format": rf})
			var b strings.Builder
			for _, ev := range s.events {
				var c struct{ Choices []struct{ Text string } }
				if json.Unmarshal([]byte(ev), &c) == nil && len(c.Choices) > 0 {
					b.WriteString(c.Choices[0].Text)
				}
			}
			if err := sch.Check([]byte(b.String())); err != nil {
				t.Errorf("streamed %s, %d tokens: %q: %v", text, maxTokens, b.String(), err)
			}
		}
	}
	postJSON(t, base+"/v1/completions", map[string]any{"prompt": "hi", "response_format": map[string]any{"type": "yaml"}}, http.StatusBadRequest, nil)
	var out struct{ Choices []struct{ Text string } }
	postJSON(t, base+"/v1/completions", map[string]any{"prompt": "hi", "max_tokens": 3, "response_format": map[string]any{"type": "json_object"}}, http.StatusOK, &out)
	if strings.TrimSpace(out.Choices[0].Text) != "{}" {
		t.Errorf("json_object text %q", out.Choices[0].Text)
	}
}
