package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober"
)

// TestPoolingSimulator sends embeddings and rerank requests (every rerank
// path) to the simulator: each succeeds non-streamed with E2E only, the
// inputs, dimension and prompt tokens recorded; with --fault.wrong-count
// each is invalid_response naming the wrong count.
func TestPoolingSimulator(t *testing.T) {
	sc := simulator.DefaultConfig()
	sc.EmbeddingDim = 64
	url, _ := simtest.Start(t, sc)
	fc := simulator.DefaultConfig()
	fc.Faults.WrongCount = 1
	faulty, _ := simtest.Start(t, fc)
	docs := []string{"the cat sat on the mat", "a dog ran in the park", "rain fell all day long"}
	for _, tt := range []struct {
		name, api, path string
		topN            int
		wantDim         int
		wrongMsg        string
	}{
		{name: "embeddings", api: APIEmbeddings, wantDim: 64, wrongMsg: "wrong embedding count: 2 for 3 inputs"},
		{name: "rerank v1", api: APIRerank, wrongMsg: "wrong rerank result count: 2, want 3 (3 documents)"},
		{name: "rerank bare top_n", api: APIRerank, path: RerankBare, topN: 2, wrongMsg: "wrong rerank result count: 1, want 2 (3 documents)"},
		{name: "score", api: APIRerank, path: RerankScore, wrongMsg: "wrong score count: 2 for 3 documents"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, base := range []string{url, faulty} {
				c := newClient(t, Options{BaseURL: base, API: tt.api, RerankPath: tt.path, Timeout: 30 * time.Second})
				rec := do(t, context.Background(), c, Request{ID: "r1", Prompt: "which animal", Inputs: docs, TopN: tt.topN})
				if base == faulty {
					if rec.Error != prober.ClassInvalidResponse || rec.ErrorMessage != tt.wrongMsg {
						t.Errorf("wrong-count fault: class %q, message %q, want invalid_response %q", rec.Error, rec.ErrorMessage, tt.wrongMsg)
					}
					continue
				}
				if !rec.OK() || !rec.NoStream || rec.TTFT != 0 || rec.E2E <= 0 || rec.Inputs != 3 || rec.Dimension != tt.wantDim ||
					rec.PromptTokens <= 0 || len(rec.ITL) != 0 {
					t.Errorf("record: error %q %q, no_stream %v, TTFT %v, E2E %v, inputs %d, dimension %d, prompt tokens %d",
						rec.Error, rec.ErrorMessage, rec.NoStream, rec.TTFT, rec.E2E, rec.Inputs, rec.Dimension, rec.PromptTokens)
				}
			}
		})
	}
}

// TestPoolingChecks answers with malformed pooling shapes a server could
// send: each is invalid_response with a reason naming what was wrong.
func TestPoolingChecks(t *testing.T) {
	for _, tt := range []struct {
		name, api, path, body, want string
	}{
		{"ragged", APIEmbeddings, "", `{"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":[1]}],"usage":{"prompt_tokens":4}}`,
			"ragged embeddings: embedding 1 has dimension 1, embedding 0 has 2"},
		{"missing vector", APIEmbeddings, "", `{"data":[{"index":0,"embedding":[1]},{"index":1}]}`, "embedding 1 missing"},
		{"empty vector", APIEmbeddings, "", `{"data":[{"index":0,"embedding":[]},{"index":1,"embedding":[]}]}`, "embedding 0 is empty"},
		{"base64", APIEmbeddings, "", `{"data":[{"index":0,"embedding":"AAA="},{"index":1,"embedding":"AAA="}]}`,
			"embedding 0: not an array of numbers"},
		{"repeated index", APIEmbeddings, "", `{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[1]}]}`,
			"embedding 1: index 0 repeated"},
		{"index out of range", APIRerank, "", `{"results":[{"index":0,"relevance_score":0.5},{"index":2,"relevance_score":0.1}]}`,
			"result 1: index 2 outside [0, 2)"},
		{"no score", APIRerank, "", `{"results":[{"index":0,"relevance_score":0.5},{"index":1}]}`, "result 1 without relevance_score"},
		{"score without index", APIRerank, RerankScore, `{"data":[{"score":0.5},{"index":1,"score":0.1}]}`, "score 0 without index"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(tt.body))
			}))
			defer srv.Close()
			c := newClient(t, Options{BaseURL: srv.URL, API: tt.api, RerankPath: tt.path})
			rec := do(t, context.Background(), c, Request{Prompt: "q", Inputs: []string{"a", "b"}})
			if rec.Error != prober.ClassInvalidResponse || rec.ErrorMessage != tt.want {
				t.Errorf("class %q, message %q, want invalid_response %q", rec.Error, rec.ErrorMessage, tt.want)
			}
		})
	}
}

// TestPoolingOptions refuses a bad rerank path, and a request without
// inputs or with more than MaxInputs.
func TestPoolingOptions(t *testing.T) {
	if _, err := New(Options{BaseURL: "http://127.0.0.1:1", API: APIRerank, RerankPath: "/v2/rerank"}); err == nil ||
		!strings.Contains(err.Error(), "rerank path") {
		t.Errorf("bad rerank path: %v", err)
	}
	if _, err := New(Options{BaseURL: "http://127.0.0.1:1", API: APIRerank, ExtraBody: map[string]any{"documents": []string{}}}); err == nil ||
		!strings.Contains(err.Error(), `extra body may not set "documents"`) {
		t.Errorf("extra body documents: %v", err)
	}
	c := newClient(t, Options{BaseURL: "http://127.0.0.1:1", API: APIEmbeddings})
	if c.URL() != "http://127.0.0.1:1/v1/embeddings" {
		t.Errorf("url %s", c.URL())
	}
	for _, n := range []int{0, MaxInputs + 1} {
		rec := do(t, context.Background(), c, Request{Inputs: make([]string, n)})
		if rec.Error != prober.ClassInvalidResponse || !strings.Contains(rec.ErrorMessage, "want 1 to 2048") {
			t.Errorf("%d inputs: class %q, message %q", n, rec.Error, rec.ErrorMessage)
		}
	}
}
