package client

import (
	"encoding/json"
	"fmt"
	"sort"
)

// MaxLogprobTokens bounds Logprobs.Max: the tokens whose log-probabilities
// one request keeps.
const MaxLogprobTokens = 256

// DefaultLogprobTokens is Logprobs.Max when left 0.
const DefaultLogprobTokens = 32

// maxTopKept is how many of a position's most likely tokens are kept.
const maxTopKept = 2

// Logprobs collects the log-probabilities of the first tokens of a reply
// (Request.CollectLogprobs): for each token its own and those of the most
// likely tokens at its position. It is filled only for the requests that
// ask for it; the caller owns it and reads it after Do returns.
type Logprobs struct {
	// Max is how many tokens to keep: 0 means DefaultLogprobTokens; at most
	// MaxLogprobTokens.
	Max int
	// Tokens are the first tokens' log-probabilities, in order.
	Tokens []TokenLogprob
	// Err is the first reason a logprobs object could not be read (the
	// tokens after it are not collected); empty when all were read.
	Err string
}

// TokenLogprob is one generated token's log-probability and the most likely
// tokens at its position.
type TokenLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	// Top holds the most likely tokens at this position, most likely first
	// (at most 2): the margin between them says how close greedy decoding
	// came to another token there.
	Top []TopLogprob `json:"top,omitempty"`
}

// TopLogprob is one candidate token at a position.
type TopLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
}

// limit is the number of tokens l keeps.
func (l *Logprobs) limit() int {
	switch {
	case l.Max <= 0:
		return DefaultLogprobTokens
	case l.Max > MaxLogprobTokens:
		return MaxLogprobTokens
	}
	return l.Max
}

// wireLogprobs holds both shapes of choices[0].logprobs in a stream:
// completions (CompletionLogProbs) and chat (ChatCompletionLogProbs).
type wireLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []*float64           `json:"token_logprobs"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
	Content       []struct {
		Token       string  `json:"token"`
		Logprob     float64 `json:"logprob"`
		TopLogprobs []struct {
			Token   string  `json:"token"`
			Logprob float64 `json:"logprob"`
		} `json:"top_logprobs"`
	} `json:"content"`
}

// add reads one event's logprobs value (raw JSON). It runs only for the
// requests that collect log-probabilities, never on the plain hot path.
func (l *Logprobs) add(raw []byte) {
	n := l.limit()
	if l.Err != "" || len(l.Tokens) >= n {
		return
	}
	var w wireLogprobs
	if err := json.Unmarshal(raw, &w); err != nil {
		l.Err = "logprobs: " + trimTo(err.Error(), 128)
		return
	}
	for _, c := range w.Content {
		if len(l.Tokens) >= n {
			return
		}
		t := TokenLogprob{Token: c.Token, Logprob: c.Logprob}
		for _, a := range c.TopLogprobs {
			t.Top = append(t.Top, TopLogprob(a))
		}
		t.Top = sortTop(t.Top)
		l.Tokens = append(l.Tokens, t)
	}
	if len(w.Tokens) != len(w.TokenLogprobs) || len(w.TopLogprobs) > 0 && len(w.TopLogprobs) != len(w.Tokens) {
		l.Err = fmt.Sprintf("logprobs: %d tokens with %d token_logprobs and %d top_logprobs", len(w.Tokens), len(w.TokenLogprobs), len(w.TopLogprobs))
		return
	}
	for i, tok := range w.Tokens {
		if len(l.Tokens) >= n {
			return
		}
		t := TokenLogprob{Token: tok}
		if p := w.TokenLogprobs[i]; p != nil {
			t.Logprob = *p
		}
		if i < len(w.TopLogprobs) {
			for k, v := range w.TopLogprobs[i] {
				t.Top = append(t.Top, TopLogprob{Token: k, Logprob: v})
			}
		}
		t.Top = sortTop(t.Top)
		l.Tokens = append(l.Tokens, t)
	}
}

// sortTop orders candidates most likely first (ties by token, so the order
// is stable) and keeps maxTopKept.
func sortTop(top []TopLogprob) []TopLogprob {
	sort.Slice(top, func(i, j int) bool {
		if top[i].Logprob != top[j].Logprob {
			return top[i].Logprob > top[j].Logprob
		}
		return top[i].Token < top[j].Token
	})
	if len(top) > maxTopKept {
		top = top[:maxTopKept]
	}
	return top
}
