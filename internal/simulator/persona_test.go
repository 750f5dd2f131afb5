package simulator_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/client"
)

// TestPersonaStreamQuirks pins each persona's stream: where the
// finish_reason and the usage ride, the role chunk, system_fingerprint.
func TestPersonaStreamQuirks(t *testing.T) {
	type shape struct {
		fingerprint string
		roleChunk   bool // chat: a first chunk with the role and no text
		finishAlone bool // a last choices chunk with no text carries the finish_reason
		usageOnIt   bool // ... and the usage (and no usage chunk follows)
		timingsOnIt bool
		// timingsOnUsage: the timings ride on the trailing usage chunk
		// (llama.cpp's chat asked for include_usage).
		timingsOnUsage bool
		promptTokens   bool // the first completions chunk has prompt_token_ids (vLLM 0.11)
	}
	f := func(persona string, kind string, want shape) {
		t.Helper()
		t.Run(persona+"/"+kind, func(t *testing.T) {
			c := fastConfig()
			c.Engine = persona
			base, _ := simtest.Start(t, c)
			body := map[string]any{"model": c.Model, "max_tokens": 5, "ignore_eos": true, "stream": true,
				"stream_options": map[string]any{"include_usage": true}}
			path := "/v1/completions"
			if kind == "chat" {
				path = "/v1/chat/completions"
				body["messages"] = []map[string]string{{"role": "user", "content": "hello there"}}
			} else {
				body["prompt"] = "hello there"
			}
			s := readSSE(t, post(t, base+path, body))
			if !s.done {
				t.Error("no [DONE]")
			}
			var raw []map[string]any
			for _, e := range s.events {
				var m map[string]any
				if err := json.Unmarshal([]byte(e), &m); err != nil {
					t.Fatal(err)
				}
				raw = append(raw, m)
			}
			chunks := decodeChunks(t, s)
			for i, m := range raw {
				if fp, _ := m["system_fingerprint"].(string); fp != want.fingerprint {
					t.Errorf("event %d system_fingerprint %q, want %q", i, fp, want.fingerprint)
				}
			}
			last := chunks[len(chunks)-1]
			lastChoices := len(chunks) - 1
			if len(last.Choices) == 0 {
				lastChoices--
				if want.usageOnIt || last.Usage == nil || last.Usage.CompletionTokens != 5 {
					t.Errorf("trailing usage chunk %+v (usage on the finish chunk: %v)", last.Usage, want.usageOnIt)
				}
			} else if !want.usageOnIt {
				t.Error("no trailing usage chunk")
			}
			fin := chunks[lastChoices]
			text := fin.Choices[0].Text
			if d := fin.Choices[0].Delta; d != nil && d.Content != nil {
				text = *d.Content
			}
			if fin.Choices[0].FinishReason == nil || *fin.Choices[0].FinishReason != "length" {
				t.Fatalf("last choices chunk has no finish_reason length: %s", s.events[lastChoices])
			}
			if (text == "") != want.finishAlone {
				t.Errorf("finish chunk text %q, finish alone %v", text, want.finishAlone)
			}
			if want.usageOnIt && (fin.Usage == nil || fin.Usage.CompletionTokens != 5 || fin.Usage.PromptTokens == 0) {
				t.Errorf("finish chunk usage %+v", fin.Usage)
			}
			if _, ok := raw[lastChoices]["timings"]; ok != want.timingsOnIt {
				t.Errorf("timings on the finish chunk: %v, want %v", ok, want.timingsOnIt)
			}
			if lastChoices < len(raw)-1 {
				if _, ok := raw[len(raw)-1]["timings"]; ok != want.timingsOnUsage {
					t.Errorf("timings on the usage chunk: %v, want %v", ok, want.timingsOnUsage)
				}
			}
			if kind == "chat" {
				d := chunks[0].Choices[0].Delta
				isRole := d != nil && d.Role != nil && (d.Content == nil || *d.Content == "")
				if isRole != want.roleChunk {
					t.Errorf("first chunk %s: role chunk %v, want %v", s.events[0], isRole, want.roleChunk)
				}
			} else {
				ids := raw[0]["choices"].([]any)[0].(map[string]any)["prompt_token_ids"]
				if (ids != nil) != want.promptTokens {
					t.Errorf("prompt_token_ids on the first chunk: %v", ids)
				}
			}
		})
	}
	// The shapes of each engine's source (testdata/engines/*/*/README.md;
	// internal/conformance holds the personas to that corpus).
	for _, kind := range []string{"completions", "chat"} {
		f(simulator.EngineVLLM, kind, shape{roleChunk: true, promptTokens: true})
		f(simulator.EngineOllama, kind, shape{fingerprint: "fp_ollama", finishAlone: true})
	}
	f(simulator.EngineSGLang, "completions", shape{})
	f(simulator.EngineSGLang, "chat", shape{roleChunk: true, finishAlone: true})
	tgi := simulator.VersionTGI + "-native"
	f(simulator.EngineTGI, "completions", shape{fingerprint: tgi, usageOnIt: true})
	f(simulator.EngineTGI, "chat", shape{fingerprint: tgi})
	f(simulator.EngineLlamaCpp, "completions", shape{fingerprint: simulator.VersionLlamaCpp, finishAlone: true,
		usageOnIt: true, timingsOnIt: true})
	f(simulator.EngineLlamaCpp, "chat", shape{fingerprint: simulator.VersionLlamaCpp, roleChunk: true, finishAlone: true,
		timingsOnUsage: true})
}

// TestErrorEventFault: the error-event fault ends a stream with an error
// event and no [DONE]; the client classifies it as a stream error.
func TestErrorEventFault(t *testing.T) {
	c := fastConfig()
	c.Engine = simulator.EngineLlamaCpp
	c.Faults.ErrorEvent = 1
	base, _ := simtest.Start(t, c)
	s := readSSE(t, post(t, base+"/v1/completions", map[string]any{"model": c.Model, "prompt": "hi", "max_tokens": 8,
		"ignore_eos": true, "stream": true}))
	if s.done || len(s.events) == 0 || !strings.HasPrefix(s.events[len(s.events)-1], `{"error":`) {
		t.Fatalf("events %q, done %v", s.events, s.done)
	}
	cl, err := client.New(client.Options{BaseURL: base, Model: c.Model})
	if err != nil {
		t.Fatal(err)
	}
	rec := &prober.Record{}
	cl.Do(context.Background(), client.Request{ID: "x", Prompt: "hi", MaxTokens: 8, IgnoreEOS: true}, rec)
	if rec.Error != prober.ClassStream {
		t.Errorf("class %s (%s), want stream", rec.Error, rec.ErrorMessage)
	}
	resp := post(t, base+"/v1/completions", map[string]any{"model": c.Model, "prompt": "hi", "max_tokens": 8})
	drain(resp)
	if resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("non-streaming status %d, want 500", resp.StatusCode)
	}
}

// TestPersonaEndpoints: each persona serves its own info and tokenizer
// endpoints and not vLLM's.
func TestPersonaEndpoints(t *testing.T) {
	f := func(persona string, have, lack []string) {
		t.Helper()
		c := fastConfig()
		c.Engine = persona
		base, _ := simtest.Start(t, c)
		for _, c := range []struct {
			paths []string
			want  int
		}{{have, http.StatusOK}, {lack, http.StatusNotFound}} {
			for _, p := range c.paths {
				resp, err := http.Get(base + p)
				if err != nil {
					t.Fatal(err)
				}
				drain(resp)
				if resp.StatusCode != c.want {
					t.Errorf("%s: GET %s = %d, want %d", persona, p, resp.StatusCode, c.want)
				}
			}
		}
	}
	f(simulator.EngineSGLang, []string{"/get_server_info", "/metrics", "/health"}, []string{"/version", "/props", "/info"})
	f(simulator.EngineTGI, []string{"/info", "/metrics"}, []string{"/version", "/props", "/get_server_info"})
	f(simulator.EngineLlamaCpp, []string{"/props", "/metrics"}, []string{"/version", "/info", "/get_server_info"})
	f(simulator.EngineOllama, []string{"/api/version", "/api/tags"}, []string{"/version", "/metrics", "/props", "/info"})
}

func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}
