package conformance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober/engine"
	"github.com/llmprobe/llmprobe/prober/scrape"
)

// personaCase pairs a simulator persona with the corpus version it must
// match. A format case serves the persona's families in another
// exposition format than the corpus's (--metrics-format): its names,
// types, labels and framing must still match, its format must not.
type personaCase struct {
	persona, format string
	frontend        string // --vllm-frontend
	corpus          string // engine/version under corpusRoot
}

func (p personaCase) name() string {
	n := p.persona
	if p.frontend != "" {
		n += "+" + p.frontend
	}
	if p.format != "" {
		n += "+" + p.format
	}
	return n
}

var personaCases = []personaCase{
	{persona: simulator.EngineVLLM, corpus: "vllm/0.24"},
	// The Python frontend's families in OpenMetrics framing: a format
	// switch, held to the Python frontend's corpus.
	{persona: simulator.EngineVLLM, format: simulator.MetricsFormatOpenMetrics, corpus: "vllm/0.24"},
	{persona: simulator.EngineVLLM, frontend: simulator.VLLMFrontendRust, corpus: "vllm/0.24-rust-frontend"},
	{persona: simulator.EngineSGLang, corpus: "sglang/0.5"},
	{persona: simulator.EngineTGI, corpus: "tgi/3.3.6"},
	{persona: simulator.EngineLlamaCpp, corpus: "llamacpp/2025-12"},
	{persona: simulator.EngineOllama, corpus: "ollama/0.33"},
}

// engineFamilies keeps the families of snap that belong to eng (its metric
// prefix): the simulator's own and Go runtime families are no engine's.
func engineFamilies(snap *scrape.Snapshot, prefix string) map[string]signature {
	out := map[string]signature{}
	for name, sig := range signatures(snap) {
		if strings.HasPrefix(name, prefix) {
			out[name] = sig
		}
	}
	return out
}

// metricDiffs names every family the persona serves that the corpus lacks
// or serves with another type or other label names (info families'
// labels, the fields of an engine's config object, are not compared).
func metricDiffs(persona, corpus map[string]signature) []string {
	var d []string
	for name, ps := range persona {
		cs, ok := corpus[name]
		switch {
		case !ok:
			d = append(d, "metric "+name+" not served by the engine")
		case ps.Type != cs.Type:
			d = append(d, fmt.Sprintf("metric %s type %s, engine %s", name, ps.Type, cs.Type))
		case ps.Labels != cs.Labels && !strings.HasSuffix(name, "_info"):
			d = append(d, fmt.Sprintf("metric %s labels {%s}, engine {%s}", name, ps.Labels, cs.Labels))
		}
	}
	return d
}

// personaStream posts a streamed request with include_usage to the
// persona and returns the SSE body; with tool, a chat offers that one
// function (a city argument), which the persona calls.
func personaStream(t *testing.T, base, model, api, tool string) []byte {
	t.Helper()
	body := map[string]any{"model": model, "max_tokens": 8, "ignore_eos": true, "stream": true,
		"stream_options": map[string]any{"include_usage": true}}
	if tool != "" {
		body["max_tokens"], body["ignore_eos"] = 64, false
		body["tools"] = []map[string]any{{"type": "function", "function": map[string]any{"name": tool,
			"parameters": map[string]any{"type": "object", "required": []string{"city"},
				"properties": map[string]any{"city": map[string]any{"type": "string"}}}}}}
	}
	path := "/v1/completions"
	if api == "chat" {
		path = "/v1/chat/completions"
		body["messages"] = []map[string]string{{"role": "user", "content": "What is the capital of France?"}}
	} else {
		body["prompt"] = "The capital of France is"
	}
	return personaPost(t, base+path, body, nil)
}

// personaMessages posts a streamed Anthropic Messages request to the
// persona and returns the SSE body.
func personaMessages(t *testing.T, base, model string) []byte {
	t.Helper()
	return personaPost(t, base+"/v1/messages", map[string]any{"model": model, "max_tokens": 8, "ignore_eos": true, "stream": true,
		"messages": []map[string]string{{"role": "user", "content": "What is the capital of France?"}}},
		map[string]string{"anthropic-version": "2023-06-01"})
}

// personaPost posts body as JSON to url with header and returns the
// answer's body, which must be a 200.
func personaPost(t *testing.T, url string, body any, header map[string]string) []byte {
	t.Helper()
	b, _ := json.Marshal(body)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %d %v: %s", url, resp.StatusCode, err, out)
	}
	return out
}

// TestPersonaConformance is the drift alarm: each simulator persona serves
// the metric names, types and label names, the SSE framing and the error
// bodies (status, JSON shape, pinned message: errorDiffs) of the engine
// release its corpus holds. Every difference fails the test unless
// allowed lists it with its reason; an allowed entry that no longer
// differs fails it too.
func TestPersonaConformance(t *testing.T) {
	corpora := map[string]*manifest{}
	for _, m := range loadCorpus(t) {
		corpora[m.name()] = m
	}
	for _, pc := range personaCases {
		t.Run(pc.name(), func(t *testing.T) {
			m := corpora[pc.corpus]
			if m == nil {
				t.Fatalf("no corpus %s", pc.corpus)
			}
			cfg := simulator.DefaultConfig()
			cfg.Engine = pc.persona
			if pc.format != "" {
				cfg.MetricsFormat = pc.format
			}
			if pc.frontend != "" {
				cfg.VLLMFrontend = pc.frontend
			}
			cfg.StepBase = 2 * time.Millisecond
			cfg.StepPerSeq, cfg.StepPerPrefillToken = 0, 0
			base, _ := simtest.Start(t, cfg)

			var diffs []string
			eng := engine.Get(engine.Name(m.Expect.Engine))
			if m.Metrics == nil {
				resp, err := http.Get(base + "/metrics")
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					diffs = append(diffs, "metrics: the persona serves /metrics, the engine does not")
				}
			} else {
				snap, err := scrape.Fetch(context.Background(), http.DefaultClient, base+"/metrics")
				if err != nil {
					t.Fatal(err)
				}
				corpusSnap, err := scrape.NewSnapshot(time.Now(), m.read(t, m.Metrics.File))
				if err != nil {
					t.Fatal(err)
				}
				if snap.Format != corpusSnap.Format && pc.format == "" {
					diffs = append(diffs, fmt.Sprintf("metrics format %s, engine %s", snap.Format, corpusSnap.Format))
				}
				prefix := map[engine.Name]string{engine.VLLM: "vllm:", engine.SGLang: "sglang:", engine.TGI: "tgi_",
					engine.LlamaCpp: "llamacpp:"}[eng.Name()]
				ps := engineFamilies(snap, prefix)
				if len(ps) == 0 {
					t.Fatalf("the persona serves no %s family", prefix)
				}
				diffs = append(diffs, metricDiffs(ps, engineFamilies(corpusSnap, prefix))...)
			}
			for _, s := range m.Streams {
				// Reasoning streams are options of the personas, not
				// defaults; tool streams are compared where the persona
				// calls tools (vLLM's; the others ignore them).
				tool := s.ToolCalls > 0 && m.Expect.Engine == string(engine.VLLM)
				if s.File != "completion.sse" && s.File != "chat.sse" && !tool {
					continue
				}
				name := ""
				if tool {
					name = s.Tool
				}
				want, err := framing(m.read(t, s.File))
				if err != nil {
					t.Fatal(err)
				}
				// A persona that coalesced every token into one chunk
				// (the client read late) cannot show where the role goes:
				// ask again.
				got, err := framing(personaStream(t, base, cfg.Model, s.API, name))
				for try := 0; err == nil && got["role"] == "single-chunk" && try < 5; try++ {
					got, err = framing(personaStream(t, base, cfg.Model, s.API, name))
				}
				diffs = append(diffs, framingDiffs(s, want, got, err)...)
			}
			for _, s := range m.MessagesStreams {
				want, err := msgFraming(m.read(t, s.File))
				if err != nil {
					t.Fatal(err)
				}
				got, err := msgFraming(personaMessages(t, base, cfg.Model))
				diffs = append(diffs, framingDiffs(s, want, got, err)...)
			}
			diffs = append(diffs, errorDiffs(t, cfg, m)...) // errors_test.go
			sort.Strings(diffs)
			allow := allowed[pc.name()]
			seen := map[string]bool{}
			for _, d := range diffs {
				if reason, ok := allow[d]; ok {
					seen[d] = true
					t.Logf("allowed: %s (%s)", d, reason)
					continue
				}
				t.Errorf("persona %s drifts from %s (%s): %s", pc.name(), pc.corpus, filepath.Join(corpusRoot, pc.corpus), d)
			}
			for d := range allow {
				if !seen[d] {
					t.Errorf("allowed difference %q of %s no longer occurs: remove it from allowlist_test.go", d, pc.name())
				}
			}
		})
	}
}

// framingDiffs lists where the persona's framing of stream s (got, or the
// error reading it) differs from the engine's (want) in s's facets.
func framingDiffs(s streamCase, want, got map[string]string, err error) []string {
	if err != nil {
		return []string{fmt.Sprintf("framing %s: %v", s.File, err)}
	}
	var diffs []string
	for k := range s.Framing {
		if got[k] != want[k] {
			diffs = append(diffs, fmt.Sprintf("framing %s %s %q, engine %q", s.File, k, got[k], want[k]))
		}
	}
	return diffs
}
