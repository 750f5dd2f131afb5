package simulator_test

import (
	"math"
	"net/http"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
)

type embeddingsAnswer struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float64 `json:"embedding"`
	} `json:"data"`
	Usage struct {
		PromptTokens int `json:"prompt_tokens"`
	} `json:"usage"`
}

type rerankAnswer struct {
	Results []struct {
		Index          int     `json:"index"`
		RelevanceScore float64 `json:"relevance_score"`
	} `json:"results"`
	Usage struct {
		TotalTokens int `json:"total_tokens"`
	} `json:"usage"`
}

type scoreAnswer struct {
	Data []struct {
		Index int     `json:"index"`
		Score float64 `json:"score"`
	} `json:"data"`
}

// TestPoolingEndpoints: /v1/embeddings answers one unit vector of the
// configured dimension per input, the same for the same input; /rerank and
// /v1/rerank rank the documents by descending score, top_n of them, with
// /score's scores; the fault wrong-count leaves one out; bad requests are
// 400s.
func TestPoolingEndpoints(t *testing.T) {
	cfg := fastConfig()
	cfg.EmbeddingDim = 16
	base, _ := simtest.Start(t, cfg)
	in := []string{"alpha beta gamma", "delta epsilon", "alpha beta gamma"}
	var e embeddingsAnswer
	postJSON(t, base+"/v1/embeddings", map[string]any{"input": in}, http.StatusOK, &e)
	if len(e.Data) != 3 || e.Usage.PromptTokens <= 0 {
		t.Fatalf("answer %+v", e)
	}
	for i, d := range e.Data {
		var n float64
		for _, x := range d.Embedding {
			n += x * x
		}
		if d.Index != i || len(d.Embedding) != 16 || math.Abs(n-1) > 1e-4 {
			t.Errorf("embedding %d: index %d, dimension %d, norm² %v", i, d.Index, len(d.Embedding), n)
		}
	}
	if e.Data[0].Embedding[0] != e.Data[2].Embedding[0] || e.Data[0].Embedding[0] == e.Data[1].Embedding[0] {
		t.Errorf("vectors not a function of the input: %v %v %v", e.Data[0].Embedding[:2], e.Data[1].Embedding[:2], e.Data[2].Embedding[:2])
	}
	docs := []string{"one two", "three four five", "six", "seven eight"}
	var s scoreAnswer
	postJSON(t, base+"/score", map[string]any{"text_1": "q w", "text_2": docs}, http.StatusOK, &s)
	if len(s.Data) != 4 {
		t.Fatalf("score answer %+v", s)
	}
	for _, path := range []string{"/rerank", "/v1/rerank"} {
		var r rerankAnswer
		postJSON(t, base+path, map[string]any{"query": "q w", "documents": docs, "top_n": 3}, http.StatusOK, &r)
		if len(r.Results) != 3 || r.Usage.TotalTokens <= 0 {
			t.Fatalf("%s: answer %+v", path, r)
		}
		for i, x := range r.Results {
			if x.RelevanceScore != s.Data[x.Index].Score || (i > 0 && x.RelevanceScore > r.Results[i-1].RelevanceScore) {
				t.Errorf("%s: result %d %+v, scores %+v", path, i, x, s.Data)
			}
		}
	}
	postJSON(t, base+"/v1/embeddings", map[string]any{"input": []any{"a", 3}}, http.StatusBadRequest, nil)
	postJSON(t, base+"/v1/embeddings", map[string]any{"input": []string{}}, http.StatusBadRequest, nil)
	postJSON(t, base+"/v1/rerank", map[string]any{"documents": docs}, http.StatusBadRequest, nil)

	fc := fastConfig()
	fc.Faults.WrongCount = 1
	faulty, _ := simtest.Start(t, fc)
	var fe embeddingsAnswer
	postJSON(t, faulty+"/v1/embeddings", map[string]any{"input": in}, http.StatusOK, &fe)
	var fr rerankAnswer
	postJSON(t, faulty+"/v1/rerank", map[string]any{"query": "q", "documents": docs}, http.StatusOK, &fr)
	if len(fe.Data) != 2 || len(fr.Results) != 3 {
		t.Errorf("wrong-count: %d embeddings for 3 inputs, %d results for 4 documents", len(fe.Data), len(fr.Results))
	}
}
