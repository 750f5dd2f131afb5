package client

import (
	"encoding/json"
)

type completionsPayload struct {
	Model         string         `json:"model,omitempty"`
	Prompt        string         `json:"prompt"`
	MaxTokens     int            `json:"max_tokens,omitempty"`
	MinTokens     int            `json:"min_tokens,omitempty"`
	IgnoreEOS     bool           `json:"ignore_eos,omitempty"`
	Stream        bool           `json:"stream"`
	StreamOptions *streamOptions `json:"stream_options,omitempty"`
	Logprobs      *int           `json:"logprobs,omitempty"`
}

type chatPayload struct {
	Model               string         `json:"model,omitempty"`
	Messages            []Message      `json:"messages"`
	MaxCompletionTokens int            `json:"max_completion_tokens,omitempty"`
	MinTokens           int            `json:"min_tokens,omitempty"`
	IgnoreEOS           bool           `json:"ignore_eos,omitempty"`
	Stream              bool           `json:"stream"`
	StreamOptions       *streamOptions `json:"stream_options,omitempty"`
	Logprobs            bool           `json:"logprobs,omitempty"`
	TopLogprobs         *int           `json:"top_logprobs,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// includeUsage is the stream_options of every streamed request.
var includeUsage = &streamOptions{IncludeUsage: true}

// payload encodes the request body.
func (c *Client) payload(req *Request) ([]byte, error) {
	var v any
	so := includeUsage
	if req.NoStream {
		so = nil // vLLM refuses stream_options without stream
	}
	var top *int
	if req.Logprobs {
		top = &req.TopLogprobs
	}
	model := c.model(req)
	if c.chat {
		msgs := req.Messages
		if msgs == nil {
			msgs = []Message{}
		}
		v = chatPayload{Model: model, Messages: msgs, MaxCompletionTokens: req.MaxTokens,
			MinTokens: req.MinTokens, IgnoreEOS: req.IgnoreEOS, Stream: !req.NoStream, StreamOptions: so,
			Logprobs: req.Logprobs, TopLogprobs: top}
	} else {
		v = completionsPayload{Model: model, Prompt: req.Prompt, MaxTokens: req.MaxTokens,
			MinTokens: req.MinTokens, IgnoreEOS: req.IgnoreEOS, Stream: !req.NoStream, StreamOptions: so,
			Logprobs: top}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if len(c.extra) > 0 || len(req.Body) > 0 {
		b = append(append(append(b[:len(b)-1], c.extra...), req.Body...), '}')
	}
	return b, nil
}

// model is the model a request names.
func (c *Client) model(req *Request) string {
	if req.Model != "" {
		return req.Model
	}
	return c.o.Model
}
