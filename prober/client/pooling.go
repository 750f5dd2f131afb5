package client

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/llmprobe/llmprobe/prober"
)

// The pooling APIs: embeddings and rerank. Both are sent non-streamed
// (Request.NoStream is forced) and measured like any non-streamed request:
// E2E from t0 to the end of the body, no TTFT, ITL or TPOT; the prompt
// tokens from usage.prompt_tokens, else usage.total_tokens (vLLM's rerank
// reports only total_tokens). Record.Inputs is the request's input count.
//
//   - embeddings: POST /v1/embeddings {model, input: [...],
//     encoding_format: "float"}. The answer must carry one embedding per
//     input, each index once, every vector of the same non-zero dimension
//     (Record.Dimension); else invalid_response naming what was wrong.
//   - rerank: {model, query, documents, top_n} to /v1/rerank (RerankV1,
//     the default) or /rerank (RerankBare; vLLM serves both, Cohere- and
//     Jina-style servers one of them); the answer {results: [{index,
//     relevance_score}]} must carry min(top_n, documents) results (all
//     documents when top_n is 0), each index a distinct document, each
//     score a number. RerankScore sends {model, text_1: query, text_2:
//     documents} to vLLM's /score and checks {data: [{index, score}]}, one
//     score per document.

// MaxInputs bounds the inputs of one embeddings request and the documents
// of one rerank request.
const MaxInputs = 2048

// Rerank paths (Options.RerankPath).
const (
	RerankV1    = "/v1/rerank"
	RerankBare  = "/rerank"
	RerankScore = "/score"
)

type embeddingsPayload struct {
	Model          string   `json:"model,omitempty"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
}

type rerankPayload struct {
	Model     string   `json:"model,omitempty"`
	Query     string   `json:"query"`
	Documents []string `json:"documents"`
	TopN      int      `json:"top_n,omitempty"`
}

type scorePayload struct {
	Model string   `json:"model,omitempty"`
	Text1 string   `json:"text_1"`
	Text2 []string `json:"text_2"`
}

// inputs is req.Inputs, never nil.
func inputs(req *Request) []string {
	if req.Inputs == nil {
		return []string{}
	}
	return req.Inputs
}

// embeddingsBody is the body of an embeddings request.
func embeddingsBody(_ *Client, req *Request, model string, _ *streamOptions, _ *int) any {
	return embeddingsPayload{Model: model, Input: inputs(req), EncodingFormat: "float"}
}

// rerankBody is the body of a rerank request.
func rerankBody(c *Client, req *Request, model string, _ *streamOptions, _ *int) any {
	if c.o.RerankPath == RerankScore {
		return scorePayload{Model: model, Text1: req.Prompt, Text2: inputs(req)}
	}
	return rerankPayload{Model: model, Query: req.Prompt, Documents: inputs(req), TopN: req.TopN}
}

// poolingResponse is what the measurement needs of a pooling answer.
type poolingResponse struct {
	Data []struct {
		Index     *int             `json:"index"`
		Embedding *json.RawMessage `json:"embedding"`
		Score     *float64         `json:"score"`
	} `json:"data"`
	Results []struct {
		Index          *int     `json:"index"`
		RelevanceScore *float64 `json:"relevance_score"`
	} `json:"results"`
	Usage *struct {
		PromptTokens *int `json:"prompt_tokens"`
		TotalTokens  *int `json:"total_tokens"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// measurePooling measures and checks a pooling answer.
func (m *measurer) measurePooling(body []byte, end time.Time) (prober.ErrorClass, string, bool) {
	rec := m.rec
	var r poolingResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return prober.ClassInvalidResponse, "response body: " + err.Error(), false
	}
	if isSet(r.Error) {
		return answerError(body)
	}
	rec.E2E = end.Sub(m.t0)
	if u := r.Usage; u != nil {
		switch {
		case u.PromptTokens != nil:
			rec.PromptTokens = *u.PromptTokens
		case u.TotalTokens != nil:
			rec.PromptTokens = *u.TotalTokens
		}
	}
	var why string
	switch {
	case !m.api.Query:
		why = m.checkEmbeddings(&r)
	case m.rerankPath == RerankScore:
		why = checkScores(&r, m.inputs)
	default:
		want := m.inputs
		if m.topN > 0 && m.topN < want {
			want = m.topN
		}
		why = checkResults(&r, m.inputs, want)
	}
	if why != "" {
		return prober.ClassInvalidResponse, why, false
	}
	rec.FinishReason = "stop"
	return prober.ClassNone, "", false
}

// checkIndex checks an answer's index: present, in [0, n), not repeated.
func checkIndex(what string, i int, idx *int, n int, got []bool) string {
	switch {
	case idx == nil:
		return fmt.Sprintf("%s %d without index", what, i)
	case *idx < 0 || *idx >= n:
		return fmt.Sprintf("%s %d: index %d outside [0, %d)", what, i, *idx, n)
	case got[*idx]:
		return fmt.Sprintf("%s %d: index %d repeated", what, i, *idx)
	}
	got[*idx] = true
	return ""
}

func (m *measurer) checkEmbeddings(r *poolingResponse) string {
	if len(r.Data) != m.inputs {
		return fmt.Sprintf("wrong embedding count: %d for %d inputs", len(r.Data), m.inputs)
	}
	got := make([]bool, m.inputs)
	dim := -1
	for i, d := range r.Data {
		if why := checkIndex("embedding", i, d.Index, m.inputs, got); why != "" {
			return why
		}
		if d.Embedding == nil {
			return fmt.Sprintf("embedding %d missing", i)
		}
		var v []float64
		if err := json.Unmarshal(*d.Embedding, &v); err != nil {
			return fmt.Sprintf("embedding %d: not an array of numbers", i)
		}
		switch {
		case len(v) == 0:
			return fmt.Sprintf("embedding %d is empty", i)
		case dim < 0:
			dim = len(v)
		case len(v) != dim:
			return fmt.Sprintf("ragged embeddings: embedding %d has dimension %d, embedding 0 has %d", i, len(v), dim)
		}
	}
	m.rec.Dimension = max(dim, 0)
	return ""
}

func checkResults(r *poolingResponse, docs, want int) string {
	if len(r.Results) != want {
		return fmt.Sprintf("wrong rerank result count: %d, want %d (%d documents)", len(r.Results), want, docs)
	}
	return checkItems("result", len(r.Results), docs, func(i int) (*int, string) {
		if r.Results[i].RelevanceScore == nil {
			return r.Results[i].Index, "without relevance_score"
		}
		return r.Results[i].Index, ""
	})
}

func checkScores(r *poolingResponse, docs int) string {
	if len(r.Data) != docs {
		return fmt.Sprintf("wrong score count: %d for %d documents", len(r.Data), docs)
	}
	return checkItems("score", len(r.Data), docs, func(i int) (*int, string) {
		if r.Data[i].Score == nil {
			return r.Data[i].Index, "missing"
		}
		return r.Data[i].Index, ""
	})
}

// checkItems checks n answers about docs documents: item gives answer i's
// index (checkIndex) and what its figure lacks ("" when present).
func checkItems(what string, n, docs int, item func(i int) (idx *int, lacks string)) string {
	got := make([]bool, docs)
	for i := range n {
		idx, lacks := item(i)
		if why := checkIndex(what, i, idx, docs, got); why != "" {
			return why
		}
		if lacks != "" {
			return fmt.Sprintf("%s %d %s", what, i, lacks)
		}
	}
	return ""
}
