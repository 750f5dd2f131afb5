package client

import (
	"encoding/json"
	"fmt"
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
	Model               string          `json:"model,omitempty"`
	Messages            any             `json:"messages"` // []Message, or withImages' parts
	MaxCompletionTokens int             `json:"max_completion_tokens,omitempty"`
	MaxTokens           int             `json:"max_tokens,omitempty"` // Options.BothOutputLimits
	MinTokens           int             `json:"min_tokens,omitempty"`
	IgnoreEOS           bool            `json:"ignore_eos,omitempty"`
	Stream              bool            `json:"stream"`
	StreamOptions       *streamOptions  `json:"stream_options,omitempty"`
	Logprobs            bool            `json:"logprobs,omitempty"`
	TopLogprobs         *int            `json:"top_logprobs,omitempty"`
	ReasoningEffort     string          `json:"reasoning_effort,omitempty"`
	Tools               []chatTool      `json:"tools,omitempty"`
	ToolChoice          json.RawMessage `json:"tool_choice,omitempty"`
}

// responsesPayload is the body of POST /v1/responses. min_tokens and
// ignore_eos are vLLM's sampling extras; servers without them ignore them
// (vLLM's Responses endpoint, too, with a warning).
type responsesPayload struct {
	Model           string           `json:"model,omitempty"`
	Input           any              `json:"input"`
	MaxOutputTokens int              `json:"max_output_tokens,omitempty"`
	MinTokens       int              `json:"min_tokens,omitempty"`
	IgnoreEOS       bool             `json:"ignore_eos,omitempty"`
	Stream          bool             `json:"stream"`
	Reasoning       *reasoningOption `json:"reasoning,omitempty"`
	Tools           []responsesTool  `json:"tools,omitempty"`
	ToolChoice      json.RawMessage  `json:"tool_choice,omitempty"`
}

type reasoningOption struct {
	Effort string `json:"effort"`
}

type chatTool struct {
	Type     string       `json:"type"`
	Function functionSpec `json:"function"`
}

type functionSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

type responsesTool struct {
	Type string `json:"type"`
	functionSpec
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// includeUsage is the stream_options of every streamed request.
var includeUsage = &streamOptions{IncludeUsage: true}

// payload encodes the request body.
func (c *Client) payload(req *Request) ([]byte, error) {
	so := includeUsage
	if req.NoStream {
		so = nil // vLLM refuses stream_options without stream
	}
	var top *int
	if req.Logprobs {
		top = &req.TopLogprobs
	}
	model := c.model(req)
	if len(req.Images) > 0 && !c.api.Images {
		return nil, fmt.Errorf("images are sent with the %s APIs only", NamesWith(WithImages, "and"))
	}
	if c.api.Pooling && (len(req.Inputs) == 0 || len(req.Inputs) > MaxInputs) {
		return nil, fmt.Errorf("%s request with %d inputs, want 1 to %d", c.api.Name, len(req.Inputs), MaxInputs)
	}
	b, err := json.Marshal(c.api.body(c, req, model, so, top))
	if err != nil {
		return nil, err
	}
	metrics := c.api.ServerTiming && c.o.IncludeMetrics != nil && c.o.IncludeMetrics()
	if len(c.extra) > 0 || len(req.Body) > 0 || metrics {
		b = append(append(b[:len(b)-1], c.extra...), req.Body...)
		if metrics {
			b = append(b, includeMetricsField...)
		}
		b = append(b, '}')
	}
	return b, nil
}

// completionsBody is the body of a completions request.
func completionsBody(_ *Client, req *Request, model string, so *streamOptions, top *int) any {
	return completionsPayload{Model: model, Prompt: req.Prompt, MaxTokens: req.MaxTokens,
		MinTokens: req.MinTokens, IgnoreEOS: req.IgnoreEOS, Stream: !req.NoStream, StreamOptions: so,
		Logprobs: top}
}

// chatBody is the body of a chat request.
func chatBody(c *Client, req *Request, model string, so *streamOptions, top *int) any {
	var msgs any = req.Messages
	if req.Messages == nil {
		msgs = []Message{}
	}
	if len(req.Images) > 0 {
		msgs = withImages(req.Messages, req.Images)
	}
	p := chatPayload{Model: model, Messages: msgs, MaxCompletionTokens: req.MaxTokens,
		MinTokens: req.MinTokens, IgnoreEOS: req.IgnoreEOS, Stream: !req.NoStream, StreamOptions: so,
		Logprobs: req.Logprobs, TopLogprobs: top, ReasoningEffort: req.ReasoningEffort, ToolChoice: toolChoice(req.ToolChoice, false)}
	if c.o.BothOutputLimits != nil && c.o.BothOutputLimits() {
		p.MaxTokens = req.MaxTokens
	}
	for _, t := range req.Tools {
		p.Tools = append(p.Tools, chatTool{Type: "function", Function: functionSpec(t)})
	}
	return p
}

// includeMetricsKey is vLLM's request field asking for the per-request
// metrics object (Options.IncludeMetrics); includeMetricsField is the
// member the payload gains.
const (
	includeMetricsKey   = "include_metrics"
	includeMetricsField = `,"include_metrics":true`
)

// responsesBody is the body of a Responses API request: the prompt (or the
// chat messages) as input.
func responsesBody(_ *Client, req *Request, model string, _ *streamOptions, _ *int) any {
	p := responsesPayload{Model: model, MaxOutputTokens: req.MaxTokens, MinTokens: req.MinTokens,
		IgnoreEOS: req.IgnoreEOS, Stream: !req.NoStream, ToolChoice: toolChoice(req.ToolChoice, true)}
	switch {
	case len(req.Images) > 0:
		msgs := req.Messages
		if msgs == nil {
			msgs = []Message{{Role: "user", Content: req.Prompt}}
		}
		p.Input = withInputImages(msgs, req.Images)
	case req.Messages != nil:
		p.Input = req.Messages
	default:
		p.Input = req.Prompt
	}
	if req.ReasoningEffort != "" {
		p.Reasoning = &reasoningOption{Effort: req.ReasoningEffort}
	}
	for _, t := range req.Tools {
		p.Tools = append(p.Tools, responsesTool{Type: "function", functionSpec: functionSpec(t)})
	}
	return p
}

// toolChoice encodes a Request.ToolChoice: auto, required and none as
// strings, a function's name as chat's {"type":"function","function":
// {"name":...}} or the Responses API's {"type":"function","name":...}.
func toolChoice(c string, responses bool) json.RawMessage {
	var v any
	switch {
	case c == "":
		return nil
	case c == "auto" || c == "required" || c == "none":
		v = c
	case responses:
		v = map[string]string{"type": "function", "name": c}
	default:
		v = map[string]any{"type": "function", "function": map[string]string{"name": c}}
	}
	b, _ := json.Marshal(v)
	return b
}

// model is the model a request names.
func (c *Client) model(req *Request) string {
	if req.Model != "" {
		return req.Model
	}
	return c.o.Model
}

// contentPart is one part of a message's content: chat's text and
// {"type":"image_url","image_url":{"url":"data:..."}}, or the Responses
// API's input_text and {"type":"input_image","image_url":"data:...",
// "detail":"auto"}.
type contentPart struct {
	Type     string  `json:"type"`
	Text     *string `json:"text,omitempty"`
	ImageURL any     `json:"image_url,omitempty"` // *imageURL (chat), string (responses)
	Detail   string  `json:"detail,omitempty"`
}

type imageURL struct {
	URL string `json:"url"`
}

type partsMessage struct {
	Role    string        `json:"role"`
	Content []contentPart `json:"content"`
}

// withImages returns the chat messages with the images attached to the
// last user message (a user message of its own when there is none) as
// image_url parts after its text.
func withImages(msgs []Message, images []Image) []any {
	return attachImages(msgs, images, "text", func(url string) contentPart {
		return contentPart{Type: "image_url", ImageURL: &imageURL{URL: url}}
	})
}

// withInputImages is withImages in the Responses API's shape: input_text
// and input_image parts.
func withInputImages(msgs []Message, images []Image) []any {
	return attachImages(msgs, images, "input_text", func(url string) contentPart {
		return contentPart{Type: "input_image", ImageURL: url, Detail: "auto"}
	})
}

func attachImages(msgs []Message, images []Image, textType string, part func(url string) contentPart) []any {
	last := -1
	for i, m := range msgs {
		if m.Role == "user" {
			last = i
		}
	}
	out := make([]any, 0, len(msgs)+1)
	for _, m := range msgs {
		out = append(out, m)
	}
	pm := partsMessage{Role: "user"}
	if last >= 0 {
		text := msgs[last].Content
		pm.Content = append(pm.Content, contentPart{Type: textType, Text: &text})
	}
	for _, im := range images {
		pm.Content = append(pm.Content, part(im.URL))
	}
	if last >= 0 {
		out[last] = pm
	} else {
		out = append(out, pm)
	}
	return out
}
