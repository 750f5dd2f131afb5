package client

import (
	"fmt"
	"slices"
	"strings"

	"github.com/llmprobe/llmprobe/prober/tracing"
)

// The API table: each request API is one row of apis, the only place that
// knows it; callers Lookup a row and read its facts, nothing else switches
// on an API's name. A new API is a row, its body builder and, when its
// answers are not OpenAI choices, a decoding (docs/architecture.md, "Where
// to add"); the simulator must serve its Paths (TestSimulatorServesEveryAPI).

// The API names (Options.API, a target's and a sweep's api).
const (
	APICompletions = "completions"
	APIChat        = "chat"
	APIResponses   = "responses"
	APIEmbeddings  = "embeddings"
	APIRerank      = "rerank"
	APIMessages    = "messages" // Anthropic Messages (messages.go)
	// DefaultAPI is the API of a target, sweep or Options naming none.
	DefaultAPI = APICompletions
)

// API is one row of the API table.
type API struct {
	Name string // in api:, --api and Options.API
	// Paths are its request paths under the server root: the first by
	// default, another chosen by Options.RerankPath (rerank_path).
	Paths     []string
	Operation string // gen_ai.operation.name
	Streams   bool   // false: always sent non-streamed
	// Messages: the prompt is sent as chat messages (chat template).
	// Conversations: it takes a conversation of the caller's (multi-turn
	// sessions, dataset messages entries, answer checks with messages).
	// Images: image content parts. Pooling: Inputs (batch_size), no text
	// generated (no answer checks, no GenAI client metrics). Query:
	// Request.Prompt is a query beside the Inputs.
	Messages, Conversations, Images, Pooling, Query bool
	// ServerTiming: vLLM answers include_metrics with its per-request
	// timing (Options.IncludeMetrics).
	ServerTiming bool
	// BenchBackends are its names in `vllm bench serve` results; the
	// first is what a sweep's result.json says.
	BenchBackends []string

	streamEnd string // what ends its stream, for the error of one cut short
	body      func(c *Client, req *Request, model string, so *streamOptions, top *int) any
	decode    decoding
}

// decoding is how a row's answers are measured. The measurer switches on it
// (measure.go, nostream.go): a function value would move each request's
// measurer to the heap.
type decoding uint8

const (
	decodeChoices   decoding = iota // OpenAI choices: chunk.go, nostream.go
	decodeResponses                 // the Responses API: respevent.go
	decodePooling                   // a pooling answer: pooling.go
	decodeMessages                  // the Anthropic Messages API: messages.go
)

var apis = []API{
	{Name: APICompletions, Paths: []string{"/v1/completions"}, Operation: tracing.OperationTextCompletion, Streams: true,
		ServerTiming:  true,
		BenchBackends: []string{"openai", "vllm"}, streamEnd: "[DONE]", body: completionsBody},
	{Name: APIChat, Paths: []string{"/v1/chat/completions"}, Operation: tracing.OperationChat, Streams: true,
		Messages: true, Conversations: true, Images: true, ServerTiming: true, BenchBackends: []string{"openai-chat"}, streamEnd: "[DONE]", body: chatBody},
	{Name: APIResponses, Paths: []string{"/v1/responses"}, Operation: tracing.OperationChat, Streams: true,
		Messages: true, Images: true, streamEnd: "response.completed", body: responsesBody, decode: decodeResponses},
	{Name: APIEmbeddings, Paths: []string{"/v1/embeddings"}, Operation: tracing.OperationEmbeddings, Pooling: true,
		body: embeddingsBody, decode: decodePooling},
	{Name: APIRerank, Paths: []string{RerankV1, RerankBare, RerankScore}, Operation: tracing.OperationRerank, Pooling: true,
		Query: true, body: rerankBody, decode: decodePooling},
	{Name: APIMessages, Paths: []string{"/v1/messages"}, Operation: tracing.OperationChat, Streams: true,
		Messages: true, Conversations: true, streamEnd: "message_stop", body: messagesBody, decode: decodeMessages},
}

// APIs returns the rows of the API table in order (a copy).
func APIs() []API { return slices.Clone(apis) }

// Lookup returns the row of the API named name (the zero row and false for
// none).
func Lookup(name string) (API, bool) {
	i := slices.IndexFunc(apis, func(a API) bool { return a.Name == name })
	if i < 0 {
		return API{}, false
	}
	return apis[i], true
}

// ParseAPI is Lookup with an error naming every API: the one validation
// of an API name.
func ParseAPI(name string) (API, error) {
	a, ok := Lookup(name)
	if !ok {
		return a, fmt.Errorf("must be %s, got %q", NamesWith(nil, "or"), name)
	}
	return a, nil
}

// NamesWith lists the names of the APIs with fact (all when nil) for a
// message: "chat", "chat and responses", "completions, chat or rerank".
func NamesWith(fact func(API) bool, conj string) string {
	var names []string
	for _, a := range apis {
		if fact == nil || fact(a) {
			names = append(names, a.Name)
		}
	}
	return join(names, conj)
}

func join(names []string, conj string) string {
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " " + conj + " " + names[len(names)-1]
}

// The facts callers name the APIs of (NamesWith); WithPathChoice: several
// Paths, Options.RerankPath chooses.
var (
	WithImages        = func(a API) bool { return a.Images }
	WithConversations = func(a API) bool { return a.Conversations }
	WithPooling       = func(a API) bool { return a.Pooling }
	Generating        = func(a API) bool { return !a.Pooling }
	WithPathChoice    = func(a API) bool { return len(a.Paths) > 1 }
)

// Path returns a's request path: Paths[0], or choice when a has several
// and choice is not empty (an error when it is none of them).
func (a API) Path(choice string) (string, error) {
	if choice == "" || len(a.Paths) == 1 {
		return a.Paths[0], nil
	}
	if !slices.Contains(a.Paths, choice) {
		return "", fmt.Errorf("must be %s, got %q", join(a.Paths, "or"), choice)
	}
	return choice, nil
}
