package simulator

import (
	"encoding/json"
	"net/http"
)

type apiKind int

const (
	kindCompletion apiKind = iota
	kindChat
	kindResponses // POST /v1/responses (reasoning.go, respapi.go)
	kindMessages  // POST /v1/messages, Anthropic Messages (messages.go)
)

type streamOptions struct {
	IncludeUsage         bool `json:"include_usage"`
	ContinuousUsageStats bool `json:"continuous_usage_stats"`
}

// genRequestJSON is the body of /v1/completions and /v1/chat/completions;
// fields the simulator does not model (temperature, top_p, ...) are ignored.
type genRequestJSON struct {
	Model               *string         `json:"model"`
	Prompt              json.RawMessage `json:"prompt"`
	Messages            *[]chatMessage  `json:"messages"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	MinTokens           *int            `json:"min_tokens"`
	IgnoreEOS           bool            `json:"ignore_eos"`
	Stream              bool            `json:"stream"`
	StreamOptions       *streamOptions  `json:"stream_options"`
	N                   *int            `json:"n"`
	IncludeMetrics      bool            `json:"include_metrics"`
	featureFields                       // logprobs, response_format, sampling (features.go)
	reasoningFields                     // reasoning, tools, the Responses API's input (reasoning.go)
	messagesFields                      // the Messages API's system and stop_sequences (messages.go)
}

// genRequest is a validated generation request.
type genRequest struct {
	kind            apiKind
	prompt          []int
	maxTokens       int
	minTokens       int
	ignoreEOS       bool
	stream          bool
	includeUsage    bool
	continuousUsage bool
	// includeMetrics is the request's include_metrics (vLLM's per-request
	// timing, servertiming.go).
	includeMetrics bool
	// Request features (features.go): the model named (the served one or
	// a LoRA adapter), logprobs, and the JSON of a response_format.
	model       string
	logprobs    bool
	topLogprobs int
	structured  []byte
	// question is the text an answer is computed from (answers.go): a
	// completions prompt string, or the last user message of a chat; stop
	// are the request's stop sequences.
	question string
	stop     []string
	// thinks and tool: the request's reasoning and the tool it calls
	// (reasoning.go).
	thinks bool
	tool   *simTool
	// images are the request's images (images.go), looked up in the
	// multimodal cache once the request is accepted.
	images []chatImage
	// replica is 1 + the replica that answers the request (servedby.go;
	// 0: no replicas): its prefix cache is its own.
	replica int
}

// parseGen reads and validates a generation request as vLLM does.
func (s *Simulator) parseGen(w http.ResponseWriter, r *http.Request, kind apiKind) (*genRequest, *apiError) {
	var body genRequestJSON
	if e := readJSON(w, r, &body); e != nil {
		return nil, e
	}
	// SGLang's generation routes do not check the model name: any is
	// answered and echoed (testdata/engines/sglang/0.5/README.md).
	if e := s.checkModel(body.Model); e != nil && s.cfg.Engine != EngineSGLang {
		return nil, e
	}
	g := &genRequest{kind: kind, ignoreEOS: body.IgnoreEOS, stream: body.Stream, includeMetrics: body.IncludeMetrics}
	if kind == kindMessages {
		if e := messagesRequest(&body); e != nil { // messages.go: in chat's terms
			return nil, e
		}
	}
	if e := s.parseFeatures(&body, g); e != nil {
		return nil, e
	}
	if e := s.parseReasoning(&body, g); e != nil {
		return nil, e
	}
	if body.StreamOptions != nil {
		if !body.Stream {
			return nil, badRequest("stream_options", "Stream options can only be defined when `stream=True`.")
		}
		g.includeUsage = body.StreamOptions.IncludeUsage
		g.continuousUsage = g.includeUsage && body.StreamOptions.ContinuousUsageStats
	}
	if body.N != nil && *body.N != 1 {
		return nil, badRequest("n", "n must be 1: the simulator generates one choice per request, got %d", *body.N)
	}
	maxTokens := body.MaxTokens
	switch kind {
	case kindCompletion:
		p, e := parsePrompt(body.Prompt)
		if e != nil {
			return nil, e
		}
		g.prompt = p
		_ = json.Unmarshal(body.Prompt, &g.question) // a string prompt; ids are no question
		if maxTokens == nil {
			sixteen := 16 // vLLM's (and OpenAI's) completions default
			maxTokens = &sixteen
		}
	case kindChat, kindMessages:
		if body.Messages == nil || len(*body.Messages) == 0 {
			return nil, badRequest("messages", "messages must be a non-empty list")
		}
		text, images, err := renderChatImages(*body.Messages, true)
		if err != nil {
			return nil, badRequest("messages", "%v", err)
		}
		g.prompt = tokenize(text)
		g.images = images
		for _, m := range *body.Messages {
			if m.Role == "user" {
				g.question, _ = m.contentText()
			}
		}
		if body.MaxCompletionTokens != nil {
			maxTokens = body.MaxCompletionTokens
		}
	case kindResponses:
		p, images, e := parseInput(body.Input)
		if e != nil {
			return nil, e
		}
		g.prompt, g.images, maxTokens = p, images, body.MaxOutputTokens
	}
	if e := s.rendererCheck(kind, len(g.prompt), maxTokens); e != nil { // errors.go
		return nil, e
	}
	if len(g.prompt) >= s.cfg.MaxModelLen {
		e := badRequest("", "This model's maximum context length is %d tokens. However, your request has %d input tokens. "+
			"Please reduce the length of the input messages.", s.cfg.MaxModelLen, len(g.prompt))
		e.over = &contextExcess{prompt: len(g.prompt), context: s.cfg.MaxModelLen}
		if maxTokens != nil {
			e.over.output = max(*maxTokens, 0)
		}
		return nil, e
	}
	if maxTokens == nil {
		g.maxTokens = s.cfg.MaxModelLen - len(g.prompt)
	} else {
		g.maxTokens = *maxTokens
	}
	param := "max_tokens"
	if kind == kindChat && body.MaxCompletionTokens != nil {
		param = "max_completion_tokens"
	}
	if kind == kindResponses {
		param = "max_output_tokens"
	}
	if g.maxTokens < 1 {
		return nil, badRequest(param, "max_tokens must be at least 1, got %d.", g.maxTokens)
	}
	// Written so that a huge max_tokens cannot overflow (len(prompt) < MaxModelLen here).
	if g.maxTokens > s.cfg.MaxModelLen-len(g.prompt) {
		e := badRequest(param, "This model's maximum context length is %d tokens. However, you requested %d tokens "+
			"(%d in the messages, %d in the completion). Please reduce the length of the messages or completion.",
			s.cfg.MaxModelLen, uint64(len(g.prompt))+uint64(g.maxTokens), len(g.prompt), g.maxTokens)
		e.over = &contextExcess{prompt: len(g.prompt), output: g.maxTokens, context: s.cfg.MaxModelLen}
		return nil, e
	}
	if body.MinTokens != nil {
		g.minTokens = *body.MinTokens
		if g.minTokens < 0 {
			return nil, badRequest("min_tokens", "min_tokens must be greater than or equal to 0, got %d.", g.minTokens)
		}
		if g.minTokens > g.maxTokens {
			return nil, badRequest("min_tokens", "min_tokens must be less than or equal to max_tokens=%d, got %d.", g.maxTokens, g.minTokens)
		}
	}
	return g, nil
}

// parsePrompt accepts a string, an array of token ids, or a one-element
// array of either (batched prompts are not simulated).
func parsePrompt(raw json.RawMessage) ([]int, *apiError) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, badRequest("prompt", "Either prompt or prompt_embeds must be provided and non-empty.")
	}
	var ids []int
	var text string
	var texts []string
	var idLists [][]int
	switch {
	case json.Unmarshal(raw, &text) == nil:
		ids = tokenize(text)
	case json.Unmarshal(raw, &ids) == nil:
	case json.Unmarshal(raw, &texts) == nil:
		if len(texts) != 1 {
			return nil, badRequest("prompt", "the simulator takes exactly one prompt per request, got %d", len(texts))
		}
		ids = tokenize(texts[0])
	case json.Unmarshal(raw, &idLists) == nil:
		if len(idLists) != 1 {
			return nil, badRequest("prompt", "the simulator takes exactly one prompt per request, got %d", len(idLists))
		}
		ids = idLists[0]
	default:
		return nil, badRequest("prompt", "prompt must be a string, an array of token ids, or a one-element array of either")
	}
	for _, id := range ids {
		if id < 0 || id >= VocabSize {
			return nil, badRequest("prompt", "token id %d is out of vocabulary [0, %d)", id, VocabSize)
		}
	}
	if len(ids) == 0 {
		return nil, badRequest("prompt", "the prompt must contain at least one token")
	}
	return ids, nil
}
