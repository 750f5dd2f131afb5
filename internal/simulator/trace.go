package simulator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sync"
)

// TraceRecord is one line of the trace file (--trace-file): the server-side
// ground truth of one generation request. Times are Unix nanoseconds taken
// right after the bytes were written and flushed to the socket.
type TraceRecord struct {
	// RequestID is the x-request-id header (generated when absent).
	RequestID string `json:"request_id"`
	// Traceparent is the request's W3C traceparent header as received
	// (empty when absent or longer than maxTraceparent bytes): the trace
	// context a traced client put on it, as vLLM reads it.
	Traceparent string `json:"traceparent,omitempty"`
	// Endpoint is the request path, e.g. "/v1/completions".
	Endpoint string `json:"endpoint"`
	// Stream tells whether the request asked for SSE.
	Stream bool `json:"stream"`
	// Status is the HTTP status sent; 0 when the connection was reset.
	Status int `json:"status"`
	// HeadersNS is when the response headers were flushed (for a
	// non-streaming response: when headers and body were flushed).
	HeadersNS int64 `json:"headers_ns"`
	// EventsNS holds, for every SSE event with a non-empty choices array
	// (chat's role chunk included), when it was flushed; malformed and usage
	// events are not content events.
	EventsNS []int64 `json:"events_ns"`
	// DoneNS is when `data: [DONE]` was flushed; 0 when it was not sent.
	DoneNS int64 `json:"done_ns,omitempty"`
	// PromptTokens and CompletionTokens are the request's token counts as
	// far as they were sent to the client.
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	// DraftTokens and DraftAccepted are the speculative decoding figures
	// the response's timings carried (--spec-draft-tokens; 0: none sent).
	DraftTokens   int `json:"draft_tokens,omitempty"`
	DraftAccepted int `json:"draft_accepted,omitempty"`
	// ArrivalNS (when the engine queued the request, Unix nanoseconds),
	// QueueNS (queued to scheduled) and ServerTTFTNS (scheduled to the
	// first output token) are the simulator's own timing of the request,
	// set when it sent its per-request metrics
	// (--enable-per-request-metrics): the truth the metrics object's
	// milliseconds carry.
	ArrivalNS    int64 `json:"arrival_ns,omitempty"`
	QueueNS      int64 `json:"queue_ns,omitempty"`
	ServerTTFTNS int64 `json:"server_ttft_ns,omitempty"`
	// FinishReason is stop, length or abort; empty for error responses.
	FinishReason string `json:"finish_reason,omitempty"`
	// Faults names the injected faults (the --fault.<name> suffixes).
	Faults []string `json:"faults,omitempty"`
	// Model is the model the request named (the served one or a LoRA
	// adapter); Features the request features it asked for, in this order:
	// "logprobs", "response_format" (json_schema or json_object), "no_stream".
	Model    string   `json:"model,omitempty"`
	Features []string `json:"features,omitempty"`
}

// maxTraceparent bounds TraceRecord.Traceparent (a version-00 traceparent
// is 55 bytes; later versions may append fields).
const maxTraceparent = 256

// traceparent is r's traceparent header for the trace file ("" when
// absent or too long).
func traceparent(r *http.Request) string {
	tp := r.Header.Get("Traceparent")
	if len(tp) > maxTraceparent {
		return ""
	}
	return tp
}

// traceWriter appends TraceRecords as JSON lines. Safe for concurrent use;
// records written after close are dropped.
type traceWriter struct {
	mu     sync.Mutex
	f      *os.File
	closed bool
}

func openTrace(path string) (*traceWriter, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open trace file: %w", err)
	}
	return &traceWriter{f: f}, nil
}

func (t *traceWriter) write(r *TraceRecord) error {
	if r.EventsNS == nil {
		r.EventsNS = []int64{}
	}
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode trace record: %w", err)
	}
	b = append(b, '\n')
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	if _, err := t.f.Write(b); err != nil {
		return fmt.Errorf("write trace file: %w", err)
	}
	return nil
}

func (t *traceWriter) close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	t.closed = true
	if err := t.f.Close(); err != nil {
		return fmt.Errorf("close trace file: %w", err)
	}
	return nil
}
