package client

import (
	"fmt"
	"slices"
	"strings"

	"github.com/llmprobe/llmprobe/prober/tracing"
)

// The API table: every request API llmprobe speaks is one row of apis, and
// the row is the only place that knows it. Callers (config and sweep
// validation, request building in prober/endpoint, the CLI) Lookup a row and
// read its facts; nothing outside this file switches on an API's name.
//
// Adding an API is one row plus its functions: a body builder (payload.go's
// shape) and, when its answers are not OpenAI's choices, a decoding of its
// own (a stream event decoder, as respevent.go, and a whole-answer one, as
// nostream.go's measureResponses, each one case where the measurer
// dispatches); its facts say which features callers may send with it. The built-in simulator
// must serve each of its Paths (TestSimulatorServesEveryAPI).

// The API names (Options.API, a target's and a sweep's api).
const (
	APICompletions = "completions"
	APIChat        = "chat"
	APIResponses   = "responses"
	APIEmbeddings  = "embeddings"
	APIRerank      = "rerank"
)

// DefaultAPI is the API of a target, sweep or Options that names none.
const DefaultAPI = APICompletions

// API is one row of the API table.
type API struct {
	// Name is the API's name in api:, --api and Options.API.
	Name string
	// Paths are the request paths under the server root; the first is the
	// default, another is chosen with Options.RerankPath (rerank_path) where
	// there are several.
	Paths []string
	// Operation is the gen_ai.operation.name of its requests.
	Operation string
	// Streams is false for an API sent non-streamed only (Request.NoStream
	// is forced).
	Streams bool
	// Messages: the prompt is sent as chat messages (an item's messages, or
	// one user message), rendered through the chat template.
	Messages bool
	// Conversations: a request may carry a conversation of its own (multi-turn
	// sessions, a dataset's messages entries, answer checks with messages).
	Conversations bool
	// Images: image content parts may be attached (Request.Images).
	Images bool
	// Pooling: the request carries Inputs (batch_size) and generates no
	// text: no answer checks, no GenAI client metrics.
	Pooling bool
	// Query: Request.Prompt is a query sent beside the Inputs (rerank).
	Query bool
	// BenchBackends are the names `vllm bench serve` results give the API
	// (backend, endpoint_type); the first is written in a sweep's result.
	BenchBackends []string

	// streamEnd names what ends its stream, for the error of a stream
	// that stopped before it.
	streamEnd string
	// body builds the request payload (payload.go, pooling.go).
	body func(c *Client, req *Request, model string, so *streamOptions, top *int) any
	// decode is how its answers are measured.
	decode decoding
}

// decoding names a decoder of answers. The measurer switches on it rather
// than calling a function value, which would move each request's
// measurer to the heap.
type decoding uint8

const (
	// decodeChoices: OpenAI choices, streamed as chat-completion chunks
	// (measure.go, chunk.go) or whole (nostream.go).
	decodeChoices decoding = iota
	// decodeResponses: the Responses API's events (respevent.go) or its
	// whole response (nostream.go's measureResponses).
	decodeResponses
	// decodePooling: a non-streamed pooling answer (pooling.go).
	decodePooling
)

// apis is the API table.
var apis = []API{
	{Name: APICompletions, Paths: []string{"/v1/completions"}, Operation: tracing.OperationTextCompletion, Streams: true,
		BenchBackends: []string{"openai", "vllm"}, streamEnd: "[DONE]", body: completionsBody},
	{Name: APIChat, Paths: []string{"/v1/chat/completions"}, Operation: tracing.OperationChat, Streams: true,
		Messages: true, Conversations: true, Images: true, BenchBackends: []string{"openai-chat"}, streamEnd: "[DONE]", body: chatBody},
	{Name: APIResponses, Paths: []string{"/v1/responses"}, Operation: tracing.OperationChat, Streams: true,
		Messages: true, Images: true, streamEnd: "response.completed", body: responsesBody,
		decode: decodeResponses},
	{Name: APIEmbeddings, Paths: []string{"/v1/embeddings"}, Operation: tracing.OperationEmbeddings, Pooling: true,
		body: embeddingsBody, decode: decodePooling},
	{Name: APIRerank, Paths: []string{RerankV1, RerankBare, RerankScore}, Operation: tracing.OperationRerank, Pooling: true,
		Query: true, body: rerankBody, decode: decodePooling},
}

// APIs returns the rows of the API table in order (a copy).
func APIs() []API { return append([]API(nil), apis...) }

// Lookup returns the row of the API named name.
func Lookup(name string) (API, bool) {
	for _, a := range apis {
		if a.Name == name {
			return a, true
		}
	}
	return API{}, false
}

// ParseAPI returns the row of the API named name, or an error listing the
// names there are: the one validation of an API name.
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

// join lists names as "a, b or c" (conj "or").
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

// Path returns the request path of a under the server root: Paths[0], or
// choice when a has several paths and choice is not empty (an error when
// choice is none of them).
func (a API) Path(choice string) (string, error) {
	if choice == "" || len(a.Paths) == 1 {
		return a.Paths[0], nil
	}
	if !slices.Contains(a.Paths, choice) {
		return "", fmt.Errorf("must be %s, got %q", join(a.Paths, "or"), choice)
	}
	return choice, nil
}
