package simulator

import (
	"math"
	"net/http"
	"slices"
	"time"
)

// Embeddings and rerank as vLLM's pooling models serve them:
//
//   - POST /v1/embeddings {model, input: string | [string...]} answers
//     {object: "list", data: [{object: "embedding", index, embedding}],
//     model, usage: {prompt_tokens, total_tokens}}: one unit vector of
//     Config.EmbeddingDim floats per input, a pure function of the seed and
//     the input's tokens.
//   - POST /rerank and /v1/rerank {model, query, documents, top_n} answer
//     {id, model, usage: {total_tokens}, results: [{index, document: {text},
//     relevance_score}]}, the results by descending score, top_n of them
//     (0 or absent: all).
//   - POST /score {model, text_1, text_2: string | [string...]} answers
//     {id, object: "list", model, data: [{index, object: "score", score}],
//     usage}.
//
// Each input (embeddings) or query-document pair (rerank, score) is one
// sequence of the engine model with one output step: its latency is its
// prefill, batched with every other running sequence, so load raises it
// and a sweep finds a knee. The fault wrong-count leaves the last vector,
// result or score out of the answer.

// DefaultEmbeddingDim is the dimension of the simulator's embeddings when
// Config.EmbeddingDim is 0; MaxEmbeddingDim bounds it.
const (
	DefaultEmbeddingDim = 384
	MaxEmbeddingDim     = 8192
)

// MaxPoolingInputs bounds the inputs of one embeddings request and the
// documents of one rerank or score request.
const MaxPoolingInputs = 2048

type embeddingsJSON struct {
	Model *string `json:"model"`
	Input any     `json:"input"`
}

type rerankJSON struct {
	Model     *string  `json:"model"`
	Query     *string  `json:"query"`
	Documents []string `json:"documents"`
	TopN      int      `json:"top_n"`
}

type scoreJSON struct {
	Model *string `json:"model"`
	Text1 *string `json:"text_1"`
	Text2 any     `json:"text_2"`
}

// texts reads a string or an array of strings.
func texts(field string, v any) ([]string, *apiError) {
	switch t := v.(type) {
	case string:
		return []string{t}, nil
	case []any:
		out := make([]string, 0, len(t))
		for i, x := range t {
			s, ok := x.(string)
			if !ok {
				return nil, badRequest(field, "%s[%d] must be a string", field, i)
			}
			out = append(out, s)
		}
		return out, nil
	case nil:
		return nil, badRequest(field, "%s is required", field)
	}
	return nil, badRequest(field, "%s must be a string or an array of strings", field)
}

// pool runs one prefill-only sequence per prompt through the engine and
// returns each prompt's token count; nil (with the answer written) when
// the request fails.
func (s *Simulator) pool(c *call, prompts [][]int) bool {
	if len(prompts) == 0 {
		c.fail(badRequest("", "no inputs"))
		return false
	}
	if len(prompts) > MaxPoolingInputs {
		c.fail(badRequest("", "at most %d inputs per request, got %d", MaxPoolingInputs, len(prompts)))
		return false
	}
	seqs := make([]*sequence, 0, len(prompts))
	for i, p := range prompts {
		if len(p) == 0 {
			c.fail(badRequest("", "input %d is empty", i))
			return false
		}
		if len(p) >= s.cfg.MaxModelLen {
			c.fail(badRequest("", "input %d has %d tokens; this model's maximum context length is %d tokens",
				i, len(p), s.cfg.MaxModelLen))
			return false
		}
		seqs = append(seqs, s.newSequence(&genRequest{kind: kindCompletion, prompt: p, maxTokens: 1, ignoreEOS: true}))
	}
	for i, seq := range seqs {
		if err := s.eng.submit(seq); err != nil {
			for _, q := range seqs[:i] {
				s.eng.abort(q)
			}
			c.fail(errShuttingDown)
			return false
		}
	}
	for i, seq := range seqs {
		if !c.wait(seq) {
			for _, q := range seqs[i+1:] {
				s.eng.abort(q)
			}
			return false
		}
		if _, _, reason := seq.snapshot(); reason == finishAbort {
			c.fail(errShuttingDown)
			return false
		}
	}
	return true
}

// startPooling is generate's preamble for the pooling endpoints: the
// request id, the served-by headers and the faults drawn; false when the
// request's own error bad (not nil) or a terminal fault answered.
func (s *Simulator) startPooling(w http.ResponseWriter, r *http.Request, bad *apiError) (*call, faultPlan, string, bool) {
	if bad != nil {
		s.writeError(w, bad)
		return nil, faultPlan{}, "", false
	}
	c, reqNo, _ := s.startCall(w, r)
	fp := s.drawFaults(reqNo)
	switch fp.terminal {
	case faultReset:
		c.reset()
		return nil, fp, "", false
	case faultHTTP429, faultHTTP500, faultHTTP503:
		c.fail(&apiError{Status: http.StatusServiceUnavailable, Type: "ServiceUnavailableError", Message: "simulated fault: " + fp.terminal})
		return nil, fp, "", false
	}
	return c, fp, c.tr.RequestID, true
}

// vector is the unit embedding of tokens: deterministic in the seed and
// the tokens.
func (s *Simulator) vector(tokens []int, dim int) []float64 {
	h := hashTokens(hash2(uint64(s.cfg.Seed), 0xe3bd), tokens)
	v := make([]float64, dim)
	var n float64
	for i := range v {
		v[i] = uniform(hash2(h, uint64(i)))*2 - 1
		n += v[i] * v[i]
	}
	n = math.Sqrt(n)
	for i := range v {
		v[i] = math.Round(v[i]/n*1e6) / 1e6
	}
	return v
}

// relevance is the deterministic score in [0, 1) of a query and a document.
func (s *Simulator) relevance(query, doc []int) float64 {
	return math.Round(uniform(hashTokens(hashTokens(hash2(uint64(s.cfg.Seed), 0x5c02), query), doc))*1e6) / 1e6
}

func (s *Simulator) handleEmbeddings(w http.ResponseWriter, r *http.Request) {
	var body embeddingsJSON
	if !s.readModelRequest(w, r, &body, &body.Model) {
		return
	}
	in, bad := texts("input", body.Input)
	c, fp, rid, ok := s.startPooling(w, r, bad)
	if !ok {
		return
	}
	prompts := make([][]int, len(in))
	total := 0
	for i, t := range in {
		prompts[i] = tokenize(t)
		total += len(prompts[i])
	}
	if !s.pool(c, prompts) {
		return
	}
	dim := s.cfg.EmbeddingDim
	if dim == 0 {
		dim = DefaultEmbeddingDim
	}
	usage := map[string]any{"prompt_tokens": total, "total_tokens": total, "completion_tokens": 0, "prompt_tokens_details": nil}
	s.writeList(w, fp, "embd-"+rid, body.Model, len(prompts), usage, func(i int) map[string]any {
		return map[string]any{"object": "embedding", "index": i, "embedding": s.vector(prompts[i], dim)}
	})
}

// writeList answers a pooling call with an OpenAI list of n items made by
// item (one fewer under the wrong-count fault) and usage.
func (s *Simulator) writeList(w http.ResponseWriter, fp faultPlan, id string, model *string, n int, usage map[string]any, item func(i int) map[string]any) {
	if fp.wrongCount {
		n--
	}
	data := make([]map[string]any, 0, n)
	for i := range n {
		data = append(data, item(i))
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "list", "created": time.Now().Unix(),
		"model": s.modelName(model), "data": data, "usage": usage})
}

// pairs tokenizes a query and its documents into one prompt per pair.
func pairs(query string, docs []string) (q []int, d [][]int, prompts [][]int, total int) {
	q = tokenize(query)
	for _, doc := range docs {
		t := tokenize(doc)
		d = append(d, t)
		p := append(slices.Clip(q), t...)
		prompts = append(prompts, p)
		total += len(p)
	}
	return q, d, prompts, total
}

func (s *Simulator) handleRerank(w http.ResponseWriter, r *http.Request) {
	var body rerankJSON
	if !s.readModelRequest(w, r, &body, &body.Model) {
		return
	}
	var bad *apiError
	switch {
	case body.Query == nil:
		bad = badRequest("query", "query is required")
	case body.TopN < 0:
		bad = badRequest("top_n", "top_n must be >= 0, got %d", body.TopN)
	}
	c, fp, rid, ok := s.startPooling(w, r, bad)
	if !ok {
		return
	}
	q, docs, prompts, total := pairs(*body.Query, body.Documents)
	if !s.pool(c, prompts) {
		return
	}
	results := make([]map[string]any, 0, len(docs))
	for i, d := range docs {
		results = append(results, map[string]any{"index": i, "document": map[string]any{"text": body.Documents[i]},
			"relevance_score": s.relevance(q, d)})
	}
	slices.SortStableFunc(results, func(a, b map[string]any) int {
		x, y := a["relevance_score"].(float64), b["relevance_score"].(float64)
		switch {
		case x > y:
			return -1
		case x < y:
			return 1
		}
		return 0
	})
	if body.TopN > 0 && body.TopN < len(results) {
		results = results[:body.TopN]
	}
	if fp.wrongCount {
		results = results[:len(results)-1]
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": "rerank-" + rid, "model": s.modelName(body.Model),
		"usage": map[string]any{"total_tokens": total}, "results": results})
}

func (s *Simulator) handleScore(w http.ResponseWriter, r *http.Request) {
	var body scoreJSON
	if !s.readModelRequest(w, r, &body, &body.Model) {
		return
	}
	docs, bad := texts("text_2", body.Text2)
	if body.Text1 == nil {
		bad = badRequest("text_1", "text_1 is required")
	}
	c, fp, rid, ok := s.startPooling(w, r, bad)
	if !ok {
		return
	}
	q, d, prompts, total := pairs(*body.Text1, docs)
	if !s.pool(c, prompts) {
		return
	}
	usage := map[string]any{"prompt_tokens": total, "total_tokens": total, "completion_tokens": 0}
	s.writeList(w, fp, "score-"+rid, body.Model, len(d), usage, func(i int) map[string]any {
		return map[string]any{"index": i, "object": "score", "score": s.relevance(q, d[i])}
	})
}

// modelName is the model an answer names: the request's, else the served one.
func (s *Simulator) modelName(m *string) string {
	if m != nil {
		return *m
	}
	return s.cfg.Model
}
