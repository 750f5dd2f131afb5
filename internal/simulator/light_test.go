package simulator_test

import (
	"context"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/client"
)

func lightConfig(t *testing.T) simulator.Config {
	c := simulator.DefaultConfig()
	c.Light = simulator.Light{Enabled: true, TTFT: 10 * time.Millisecond, Gap: 2 * time.Millisecond, Tokens: 8}
	c.TraceFile = filepath.Join(t.TempDir(), "trace.jsonl")
	return c
}

// TestLightStream measures light-mode streams with llmprobe's own client over
// real HTTP: the events come at TTFT + k·gap or later, the counts and usage
// are exact, and the trace file holds the write time of every event.
func TestLightStream(t *testing.T) {
	cfg := lightConfig(t)
	base, sim := simtest.Start(t, cfg)
	ctx := context.Background()
	do := func(api string, req client.Request) (prober.Record, time.Time) {
		t.Helper()
		c, err := client.New(client.Options{BaseURL: base, API: api, Timeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseIdleConnections()
		var rec prober.Record
		sent := time.Now()
		c.Do(ctx, req, &rec)
		if !rec.OK() {
			t.Fatalf("%s: %s %s", api, rec.Error, rec.ErrorMessage)
		}
		return rec, sent
	}

	rec, sent := do(client.APICompletions, client.Request{ID: "light-1", Prompt: "a b c", MaxTokens: 5})
	if rec.Events != 5 || rec.CompletionTokens != 5 || rec.TokensCounted || rec.PromptTokens != 3 || rec.FinishReason != "length" {
		t.Errorf("completions record: events %d, completion %d (counted %v), prompt %d, finish %q",
			rec.Events, rec.CompletionTokens, rec.TokensCounted, rec.PromptTokens, rec.FinishReason)
	}
	if rec.TTFT < cfg.Light.TTFT || rec.E2E < cfg.Light.TTFT+4*cfg.Light.Gap || len(rec.ITL) != 4 {
		t.Errorf("completions timing: ttft %v, e2e %v, %d gaps; want ttft >= %v, e2e >= %v, 4 gaps",
			rec.TTFT, rec.E2E, len(rec.ITL), cfg.Light.TTFT, cfg.Light.TTFT+4*cfg.Light.Gap)
	}

	chat, _ := do(client.APIChat, client.Request{ID: "light-2", Messages: []client.Message{{Role: "user", Content: "x y"}}})
	// The role chunk is a token-bearing event without a token; no max
	// tokens: --light.tokens tokens.
	if chat.Events != 9 || chat.CompletionTokens != 8 || chat.FinishReason != "length" || chat.TTFTText < cfg.Light.TTFT {
		t.Errorf("chat record: events %d, completion %d, finish %q, ttft text %v", chat.Events, chat.CompletionTokens,
			chat.FinishReason, chat.TTFTText)
	}

	recs := readTrace(t, cfg.TraceFile, 2)
	tr := recs["light-1"]
	if tr.Status != 200 || !tr.Stream || len(tr.EventsNS) != 5 || tr.CompletionTokens != 5 || tr.PromptTokens != 3 ||
		tr.FinishReason != "length" || tr.DoneNS < tr.EventsNS[len(tr.EventsNS)-1] || !slices.IsSorted(tr.EventsNS) {
		t.Fatalf("trace record %+v", tr)
	}
	for k, at := range tr.EventsNS {
		if due := sent.Add(cfg.Light.TTFT + time.Duration(k)*cfg.Light.Gap).UnixNano(); at < due {
			t.Errorf("event %d written at %d, before it was due (%d)", k, at, due)
		}
	}
	if c := recs["light-2"]; len(c.EventsNS) != 9 || c.CompletionTokens != 8 {
		t.Errorf("chat trace record %+v", c)
	}

	var st simulator.LightStats
	getJSON(t, base+"/light/stats", &st)
	if st.Requests != 2 || st.Events != 13 || st.Tokens != 13 || st.Active != 0 || st.CPUNS <= 0 {
		t.Errorf("light stats %+v", st)
	}
	if got := sim.LightStats(); got.Requests != 2 {
		t.Errorf("LightStats() %+v", got)
	}
}

// TestLightNonStreamingAndErrors covers the rest of light mode's API: a
// non-streaming answer, a bad max_tokens, and the validation of its flags.
func TestLightNonStreamingAndErrors(t *testing.T) {
	cfg := lightConfig(t)
	base, _ := simtest.Start(t, cfg)
	var out struct {
		Choices []struct {
			Text         string `json:"text"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	postJSON(t, base+"/v1/completions", `{"prompt":"one two","max_tokens":3}`, http.StatusOK, &out)
	if len(out.Choices) != 1 || strings.Count(out.Choices[0].Text, "light") != 3 || out.Usage.CompletionTokens != 3 ||
		out.Usage.PromptTokens != 2 || out.Choices[0].FinishReason != "length" {
		t.Errorf("non-streaming answer %+v", out)
	}
	postJSON(t, base+"/v1/completions", `{"prompt":"x","max_tokens":0,"stream":true}`, http.StatusBadRequest, nil)
	postJSON(t, base+"/v1/chat/completions", `{"messages":[],"stream":true}`, http.StatusBadRequest, nil)

	for _, l := range []simulator.Light{
		{Enabled: true, TTFT: -1, Gap: 1, Tokens: 1},
		{Enabled: true, Gap: -1, Tokens: 1},
		{Enabled: true, Tokens: 0},
	} {
		c := simulator.DefaultConfig()
		c.Light = l
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "--light.") {
			t.Errorf("Validate(%+v) = %v, want an error naming a --light flag", l, err)
		}
	}
	c := simulator.DefaultConfig()
	c.Light.Tokens = 0 // ignored while light mode is off
	if err := c.Validate(); err != nil {
		t.Errorf("Validate with light mode off: %v", err)
	}
}
