package endpoint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/llmprobe/llmprobe/prober/client"
)

// CheckRequest is a request whose reply is judged (prober/answer's answer
// checks): fixed sampling (temperature, seed), the text to send, stop
// sequences, and the reply text collected for the judge. It goes through
// the same client (Endpoint.Client) and so the same measurement, redaction
// and error classes as any probe request.
type CheckRequest struct {
	// Prompt is the text of a completions request; on a chat target it is
	// sent as one user message.
	Prompt string
	// Messages are the messages of a chat request; a completions target
	// cannot take them (NewCheckRequest's error).
	Messages []client.Message
	// MaxTokens is sent as max_tokens (max_completion_tokens for chat).
	MaxTokens int
	// Temperature and Seed are sent as "temperature" and "seed" (greedy
	// decoding with a fixed seed: the reply of a deterministic server
	// repeats).
	Temperature float64
	Seed        uint64
	// Stop, when not empty, is sent as "stop".
	Stop []string
	// TopLogprobs > 0 asks for that many log-probabilities per token and
	// collects those of the first LogprobTokens tokens
	// (client.Request.CollectLogprobs).
	TopLogprobs, LogprobTokens int
}

// NewCheckRequest builds the client request of c for api (an API with
// client.API.Conversations: messages; another: the prompt), streaming, with its reply collected into a buffer of its own
// (client.Request.Collect) and, when c asks for them, the first tokens'
// log-probabilities (client.Request.CollectLogprobs).
func NewCheckRequest(api, id string, c CheckRequest) (client.Request, error) {
	req := client.Request{ID: id, MaxTokens: c.MaxTokens, Collect: &bytes.Buffer{}}
	a, _ := client.Lookup(api)
	switch {
	case len(c.Messages) > 0 && !a.Conversations:
		return client.Request{}, fmt.Errorf("messages need a chat target (api: %s), this one is %s",
			client.NamesWith(client.WithConversations, "or"), api)
	case len(c.Messages) > 0:
		req.Messages = c.Messages
	case a.Conversations:
		req.Messages = []client.Message{{Role: "user", Content: c.Prompt}}
	default:
		req.Prompt = c.Prompt
	}
	body := []byte(`,"temperature":`)
	body = strconv.AppendFloat(body, c.Temperature, 'g', -1, 64)
	body = append(body, `,"seed":`...)
	body = strconv.AppendUint(body, c.Seed, 10)
	if len(c.Stop) > 0 {
		b, err := json.Marshal(c.Stop)
		if err != nil {
			return client.Request{}, fmt.Errorf("stop: %w", err)
		}
		body = append(append(body, `,"stop":`...), b...)
	}
	req.Body = body
	if c.TopLogprobs > 0 {
		req.Logprobs, req.TopLogprobs = true, c.TopLogprobs
		req.CollectLogprobs = &client.Logprobs{Max: c.LogprobTokens}
	}
	return req, nil
}
