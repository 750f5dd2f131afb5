package endpoint

import (
	"strings"

	"github.com/llmprobe/llmprobe/prober/client"
)

// The inputs of a pooling request (api embeddings and rerank). A workload
// item's prompt, whose length the input length distribution drew, is each
// input of the request: input i is the prompt's words rotated left by i,
// so the inputs of one request are distinct (no prefix-cache hit between
// them) and of the drawn length. A rerank request's query is the prompt's
// first rerankQueryWords words, its documents the inputs. MaxTokens and
// IgnoreEOS do not apply (no output tokens).

// rerankQueryWords is the length of a rerank query in words.
const rerankQueryWords = 16

// poolingRequest sets req's inputs (and a rerank query) from prompt: n of
// them.
func poolingRequest(req *client.Request, api client.API, prompt string, n int) {
	words := strings.Fields(prompt)
	req.Inputs = make([]string, 0, n)
	for i := range n {
		if len(words) == 0 {
			req.Inputs = append(req.Inputs, prompt)
			continue
		}
		k := i % len(words)
		req.Inputs = append(req.Inputs, strings.Join(append(words[k:len(words):len(words)], words[:k]...), " "))
	}
	if api.Query {
		req.Prompt = strings.Join(words[:min(len(words), rerankQueryWords)], " ")
	}
	req.MaxTokens, req.IgnoreEOS = 0, false
}

// WithBatch makes a pooling request (api embeddings or rerank, built by
// NewRequest) carry n inputs from its first, each of the drawn length;
// Request.InputTokens becomes n times the drawn length. Other APIs and
// n <= 1 leave req as it is.
func WithBatch(req *client.Request, api string, n int) {
	a, _ := client.Lookup(api)
	if n <= 1 || len(req.Inputs) != 1 || !a.Pooling {
		return
	}
	prompt := req.Inputs[0]
	query := req.Prompt
	poolingRequest(req, a, prompt, n)
	req.Prompt = query
	req.InputTokens *= n
}
