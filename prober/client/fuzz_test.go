package client

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/prober"
)

// bodyTransport answers every request with one canned response, read in
// pieces of at most chunk bytes; no network.
type bodyTransport struct {
	status   int
	ct, ce   string
	body     []byte
	chunk    int
	requests int
}

func (b *bodyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	b.requests++
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	h := http.Header{}
	if b.ct != "" {
		h.Set("Content-Type", b.ct)
	}
	if b.ce != "" {
		h.Set("Content-Encoding", b.ce)
	}
	return &http.Response{
		StatusCode: b.status, Status: strconv.Itoa(b.status) + " " + http.StatusText(b.status),
		Header: h, Body: io.NopCloser(&pieceReader{b: b.body, n: b.chunk}), Request: r,
		ProtoMajor: 1, ProtoMinor: 1,
	}, nil
}

// pieceReader returns at most n bytes per Read.
type pieceReader struct {
	b []byte
	n int
}

func (p *pieceReader) Read(buf []byte) (int, error) {
	if len(p.b) == 0 {
		return 0, io.EOF
	}
	k := min(len(buf), p.n, len(p.b))
	copy(buf, p.b[:k])
	p.b = p.b[k:]
	return k, nil
}

// FuzzStream fuzzes the whole response decoding of a request (status,
// content type and encoding, SSE framing, chunk JSON, usage, error events,
// body bounds) through Client.Do, the path every probe takes. It holds:
//   - no panic: Do recovers panics into an "internal error" record, which
//     the target treats as a failure;
//   - the class is one of prober.ErrorClasses (or success) and never a
//     timer class (no timers are set); a non-200 status has the class
//     prober.ClassForStatus gives, a non-SSE content type is
//     invalid_response;
//   - the Record is coherent: one ITL gap per token event after the
//     first, 0 <= TTFT <= E2E, a success has a token event and [DONE];
//   - the error message is short (<= 256 bytes), has no control
//     characters and never holds the API key, even when the body does.
//
// Seeds: testdata/fuzz/FuzzStream.
func FuzzStream(f *testing.F) {
	f.Fuzz(func(t *testing.T, status uint16, ct, ce string, body []byte, chunk uint8) {
		if len(body) > 1<<20 {
			return
		}
		code := int(status%600) + 1
		if code < 100 {
			code = 200
		}
		tr := &bodyTransport{status: code, ct: ct, ce: ce, body: body, chunk: int(chunk) + 1}
		c, err := New(Options{BaseURL: "http://fuzz.invalid", APIKey: testKey, MaxBodyBytes: 64 << 10,
			HTTPClient: &http.Client{Transport: tr}})
		if err != nil {
			t.Fatal(err)
		}
		rec := prober.Record{Target: "t", Probe: "p"}
		c.Do(context.Background(), Request{ID: "r", Prompt: "hello", MaxTokens: 4}, &rec)
		checkRecord(t, &rec, tr)
	})
}

func checkRecord(t *testing.T, rec *prober.Record, tr *bodyTransport) {
	t.Helper()
	if strings.HasPrefix(rec.ErrorMessage, "internal error") {
		t.Fatalf("Do panicked: %s", rec.ErrorMessage)
	}
	if rec.Error != prober.ClassNone && !slices.Contains(prober.ErrorClasses, rec.Error) {
		t.Fatalf("class %q is not in prober.ErrorClasses", rec.Error)
	}
	switch rec.Error {
	case prober.ClassTimeout, prober.ClassTTFTTimeout, prober.ClassStall, prober.ClassCanceled:
		t.Fatalf("class %q without timers or cancellation (%s)", rec.Error, rec.ErrorMessage)
	}
	switch {
	case tr.status != http.StatusOK:
		if want := prober.ClassForStatus(tr.status); rec.Error != want {
			t.Fatalf("status %d: class %q, want %q", tr.status, rec.Error, want)
		}
	case !isEventStream(tr.ct):
		if rec.Error != prober.ClassInvalidResponse {
			t.Fatalf("content type %q: class %q, want invalid_response", tr.ct, rec.Error)
		}
	}
	if rec.Events < 0 || len(rec.ITL) != max(rec.Events-1, 0) {
		t.Fatalf("%d token events but %d ITL gaps", rec.Events, len(rec.ITL))
	}
	if rec.TTFT < 0 || rec.E2E < rec.TTFT {
		t.Fatalf("TTFT %v, E2E %v", rec.TTFT, rec.E2E)
	}
	if rec.OK() && (rec.Events == 0 || rec.Done <= 0 || !bytes.Contains(tr.body, []byte("[DONE]"))) {
		t.Fatalf("success with %d token events, done at %v", rec.Events, rec.Done)
	}
	if len(rec.ErrorMessage) > maxErrorMessage {
		t.Fatalf("error message of %d bytes", len(rec.ErrorMessage))
	}
	for _, r := range rec.ErrorMessage {
		if r < 0x20 || r == 0x7f {
			t.Fatalf("control character %q in message %q", r, rec.ErrorMessage)
		}
	}
	if strings.Contains(rec.ErrorMessage, testKey) {
		t.Fatalf("API key in message %q", rec.ErrorMessage)
	}
}

// FuzzResponsesStream fuzzes the Responses API's event stream through
// Client.Do (api responses, with a tool offered so that the tool-call
// assembly runs too): no panic, a class of prober.ErrorClasses, a coherent
// Record (one ITL gap per token event after the first, 0 <= TTFT <= E2E,
// TTFR and the first tool call within E2E), and a success only with a
// token event and response.completed.
func FuzzResponsesStream(f *testing.F) {
	for _, s := range []string{
		"event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"status\":\"in_progress\"}}\n\n" +
			"data: {\"type\":\"response.reasoning_text.delta\",\"delta\":\"hm\"}\n\n" +
			"data: {\"type\":\"response.output_text.delta\",\"delta\":\"Hi\"}\n\n" +
			"data: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\",\"usage\":{\"input_tokens\":3,\"output_tokens\":2,\"output_tokens_details\":{\"reasoning_tokens\":1}}}}\n\n",
		"data: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"type\":\"function_call\",\"name\":\"f\"}}\n\n" +
			"data: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":0,\"delta\":\"{\\\"a\\\"\"}\n\n" +
			"data: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":0,\"delta\":\":1}\"}\n\n" +
			"data: {\"type\":\"response.completed\",\"response\":{\"status\":\"incomplete\",\"incomplete_details\":{\"reason\":\"max_output_tokens\"}}}\n\n",
		"data: {\"type\":\"response.output_text.delta\",\"delta\":\"a\"}\n\nevent: error\ndata: {\"type\":\"error\",\"message\":\"boom\"}\n\n",
		"data: {\"type\":\"response.failed\",\"response\":{\"error\":{\"message\":\"m\"}}}\n\n",
	} {
		f.Add([]byte(s), uint8(7))
	}
	f.Fuzz(func(t *testing.T, body []byte, chunk uint8) {
		if len(body) > 1<<20 {
			return
		}
		tr := &bodyTransport{status: 200, ct: "text/event-stream", body: body, chunk: int(chunk) + 1}
		c, err := New(Options{BaseURL: "http://fuzz.invalid", API: APIResponses, MaxBodyBytes: 64 << 10,
			HTTPClient: &http.Client{Transport: tr}})
		if err != nil {
			t.Fatal(err)
		}
		rec := prober.Record{Target: "t", Probe: "p"}
		c.Do(context.Background(), Request{ID: "r", Prompt: "hello", MaxTokens: 4,
			Tools: []Tool{{Name: "f"}}}, &rec)
		if strings.HasPrefix(rec.ErrorMessage, "internal error") {
			t.Fatalf("Do panicked: %s", rec.ErrorMessage)
		}
		if rec.Error != prober.ClassNone && !slices.Contains(prober.ErrorClasses, rec.Error) {
			t.Fatalf("class %q is not in prober.ErrorClasses", rec.Error)
		}
		if rec.Events < 0 || len(rec.ITL) != max(rec.Events-1, 0) || rec.TTFT < 0 || rec.E2E < rec.TTFT {
			t.Fatalf("events %d, ITL %d, TTFT %v, E2E %v", rec.Events, len(rec.ITL), rec.TTFT, rec.E2E)
		}
		if rec.TTFR > rec.E2E || rec.FirstToolCall > rec.E2E || rec.ThinkingTime < 0 {
			t.Fatalf("TTFR %v, first tool call %v, thinking %v, E2E %v", rec.TTFR, rec.FirstToolCall, rec.ThinkingTime, rec.E2E)
		}
		if rec.OK() && (rec.Events == 0 || !bytes.Contains(body, []byte("response."))) {
			t.Fatalf("success with %d token events", rec.Events)
		}
		if len(rec.ErrorMessage) > maxErrorMessage {
			t.Fatalf("error message of %d bytes", len(rec.ErrorMessage))
		}
	})
}
