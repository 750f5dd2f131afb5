package client

// A probe request: what the caller asks of one Do (Request), its chat
// messages and images.

import (
	"bytes"
	"net/http"
)

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Request is one probe request.
type Request struct {
	// ID is sent as the x-request-id header and kept in Record.RequestID.
	ID string
	// Model overrides Options.Model for this request when not empty (for
	// callers that resolve the model after building the Client, e.g. from
	// /v1/models).
	Model string
	// Prompt is the prompt of a completions request.
	Prompt string
	// Messages are the messages of a chat request.
	Messages []Message
	// MaxTokens is sent as max_tokens (completions) or
	// max_completion_tokens (chat) when > 0.
	MaxTokens int
	// MinTokens is sent as min_tokens (vLLM) when > 0.
	MinTokens int
	// IgnoreEOS sends "ignore_eos": true (vLLM) so the output has exactly
	// MaxTokens tokens.
	IgnoreEOS bool
	// InputTokens is the prompt length the workload intended (kept in the
	// Record beside the server-reported prompt tokens).
	InputTokens int
	// Collect, when not nil, receives the generated text, unescaped, in
	// order: each token event's text on every API (completions'
	// choices[0].text, chat's choices[0].delta.content, the Responses and
	// Messages APIs' text deltas), or a non-streamed answer's text.
	// Collecting stops silently once it holds MaxCollect bytes, streamed or
	// not (Record keeps no text; the caller owns the buffer).
	// Nil keeps the per-event path free of copies.
	Collect *bytes.Buffer

	// NoStream sends "stream": false and reads one JSON response (bounded
	// by MaxBodyBytes): the Record then has E2E (t0 to the end of the
	// body) and tokens from usage, no TTFT, ITL or TPOT (Record.NoStream).
	// Only Timeout applies; TTFTTimeout and StallTimeout do not.
	NoStream bool
	// Logprobs asks for log probabilities: completions "logprobs":
	// TopLogprobs; chat "logprobs": true, "top_logprobs": TopLogprobs.
	// Record.Logprobs says whether they came back.
	Logprobs    bool
	TopLogprobs int
	// Body holds JSON object members (`,"key":value`...) appended to the
	// payload as they are: sampling parameters, extra_body,
	// response_format (workload.RequestDraw.Body). Keys must not repeat
	// the client's own.
	Body []byte
	// Check, when not nil, receives the generated text of a request that
	// succeeded (collected as Collect is; into Collect when set); an error
	// fails the request as invalid_response with the error's text.
	Check func(text []byte) error
	// Features names the request features carried (Record.Features).
	Features []string
	// CollectLogprobs, when not nil (and Logprobs asks for them), receives
	// the log-probabilities of the reply's first tokens (Logprobs.Max).
	// Nil keeps the per-event path free of any logprobs decoding: the
	// value is only skipped, as for every other request.
	CollectLogprobs *Logprobs
	// ReasoningEffort, when not empty, is sent as "reasoning_effort"
	// (chat) or "reasoning": {"effort": ...} (responses); completions
	// have no such parameter and do not send it.
	ReasoningEffort string
	// Tools, when not empty, are offered to the model ("tools", in the
	// API's shape) with ToolChoice ("tool_choice": "auto", "required" and
	// "none" as they are, another value as the named function in the
	// API's shape; "": not sent). The tool calls of the response are then assembled from
	// their deltas and checked: each must name one of Tools and carry a
	// JSON object as arguments that CheckTool (when not nil) accepts; a
	// malformed call fails the request as invalid_response naming why.
	// Record.ToolCalls counts them.
	Tools      []Tool
	ToolChoice string
	CheckTool  func(name string, args []byte) error
	// Inputs are the inputs of an embeddings request or the documents of
	// a rerank request (whose query is Prompt); TopN is a rerank request's
	// top_n (0: not sent, every document is ranked).
	Inputs []string
	TopN   int
	// Header holds extra request headers (a session's affinity header,
	// the SLO headers of SLO-aware routing), set before the client's own:
	// it cannot replace Content-Type, Accept, User-Agent, Authorization or
	// X-Request-Id. The client only reads it.
	Header http.Header
	// Images, when not empty, are attached to the last user message of a
	// chat request as image_url content parts after its text (a Responses
	// request: input_image parts; the other APIs refuse the request);
	// Record.Images and ImageBytes count them.
	Images []Image
}

// Image is one image of a Request: its data URL
// ("data:image/png;base64,...") and its encoded bytes before base64.
type Image struct {
	URL   string
	Bytes int
}

// MaxCollect bounds the text Request.Collect receives (bytes).
const MaxCollect = 4 << 20
