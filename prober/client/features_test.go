package client

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// orderSchema is the json_schema of the feature tests.
var orderSchema = map[string]any{
	"type":     "object",
	"required": []any{"id", "item", "qty", "tags"},
	"properties": map[string]any{
		"id":   map[string]any{"type": "string", "minLength": 3},
		"item": map[string]any{"enum": []any{"tea", "coffee"}},
		"qty":  map[string]any{"type": "integer", "minimum": 1},
		"tags": map[string]any{"type": "array", "minItems": 2, "items": map[string]any{"type": "boolean"}},
	},
	"additionalProperties": false,
}

// drawAll is the draw of a plan whose every feature has share 1.
func drawAll(t *testing.T, r *workload.Request) workload.RequestDraw {
	t.Helper()
	p, err := workload.NewRequestPlan(r)
	if err != nil {
		t.Fatal(err)
	}
	return p.Draw(1, 0)
}

// TestFeaturesSimulator sends each request feature to the simulator over
// loopback HTTP, for both APIs, streamed and not.
func TestFeaturesSimulator(t *testing.T) {
	cfg := simtest.Fast()
	cfg.LoRAModules = "sql-lora=/adapters/sql"
	url, _ := simtest.Start(t, cfg)
	tests := []struct {
		name      string
		req       workload.Request
		stream    bool
		wantClass prober.ErrorClass
		check     func(t *testing.T, rec prober.Record)
	}{
		{
			name: "no_stream", req: workload.Request{Features: []workload.RequestFeature{{Kind: workload.FeatureNoStream, Share: 1}}},
			check: func(t *testing.T, rec prober.Record) {
				if !rec.NoStream || rec.TTFT != 0 || rec.TTFTText != 0 || len(rec.ITL) != 0 || rec.Events != 0 {
					t.Errorf("streamed figures on a non-streamed record: %+v", rec)
				}
				if rec.E2E <= 0 || rec.E2E < rec.HeadersTime || rec.CompletionTokens != 8 || rec.PromptTokens <= 0 || rec.TokensCounted {
					t.Errorf("E2E %v headers %v tokens %d/%d counted %v", rec.E2E, rec.HeadersTime, rec.PromptTokens, rec.CompletionTokens, rec.TokensCounted)
				}
				if _, ok := rec.TPOT(); ok || rec.FinishReason != "length" || rec.HTTPStatus != 200 {
					t.Errorf("TPOT reported or finish %q status %d", rec.FinishReason, rec.HTTPStatus)
				}
				if len(rec.Features) != 1 || rec.Features[0] != "no_stream" {
					t.Errorf("features %v", rec.Features)
				}
			},
		},
		{
			name: "logprobs", stream: true,
			req: workload.Request{Features: []workload.RequestFeature{{Kind: workload.FeatureLogprobs, Share: 1, TopLogprobs: 3}}},
			check: func(t *testing.T, rec prober.Record) {
				if !rec.Logprobs || rec.Events < 1 || rec.CompletionTokens != 8 {
					t.Errorf("logprobs %v events %d tokens %d", rec.Logprobs, rec.Events, rec.CompletionTokens)
				}
			},
		},
		{
			name: "logprobs no_stream",
			req: workload.Request{Features: []workload.RequestFeature{{Kind: workload.FeatureLogprobs, Share: 1},
				{Kind: workload.FeatureNoStream, Share: 1}}},
			check: func(t *testing.T, rec prober.Record) {
				if !rec.Logprobs || !rec.NoStream {
					t.Errorf("logprobs %v no_stream %v", rec.Logprobs, rec.NoStream)
				}
			},
		},
		{
			name: "without logprobs none come back", stream: true,
			check: func(t *testing.T, rec prober.Record) {
				if rec.Logprobs || rec.Features != nil {
					t.Errorf("logprobs %v features %v", rec.Logprobs, rec.Features)
				}
			},
		},
		{
			name: "json_schema", stream: true,
			req: workload.Request{Features: []workload.RequestFeature{{Kind: workload.FeatureJSONSchema, Share: 1, Schema: orderSchema}}},
		},
		{
			name: "json_schema no_stream",
			req: workload.Request{Features: []workload.RequestFeature{{Kind: workload.FeatureJSONSchema, Share: 1, Schema: orderSchema},
				{Kind: workload.FeatureNoStream, Share: 1}}},
		},
		{
			name: "lora", stream: true,
			req: workload.Request{Features: []workload.RequestFeature{{Kind: workload.FeatureLoRA, Share: 1, Model: "sql-lora"}}},
			check: func(t *testing.T, rec prober.Record) {
				if rec.Model != "sql-lora" {
					t.Errorf("model %q", rec.Model)
				}
			},
		},
		{
			name: "unknown adapter is the server's 404", stream: true, wantClass: prober.ClassHTTP4xx,
			req: workload.Request{Features: []workload.RequestFeature{{Kind: workload.FeatureLoRA, Share: 1, Model: "no-such-lora"}}},
			check: func(t *testing.T, rec prober.Record) {
				if rec.HTTPStatus != http.StatusNotFound || !strings.Contains(rec.ErrorMessage, "does not exist") {
					t.Errorf("status %d message %q", rec.HTTPStatus, rec.ErrorMessage)
				}
			},
		},
		{
			name: "sampling parameters and extra_body", stream: true,
			req: workload.Request{Temperature: new(0.7), TopP: new(0.9), Seed: new(int64(7)), Stop: []string{"\n\n"}, MinTokens: 2,
				ExtraBody: map[string]any{"repetition_penalty": 1.1}},
		},
	}
	for _, api := range []string{APICompletions, APIChat} {
		for _, tt := range tests {
			t.Run(api+"/"+tt.name, func(t *testing.T) {
				c := newClient(t, Options{BaseURL: url, API: api})
				req := Request{ID: "feat-1", MaxTokens: 8, IgnoreEOS: true}
				setInput(&req, api, "hello there, simulator")
				d := drawAll(t, &tt.req)
				req.NoStream, req.Logprobs, req.TopLogprobs, req.Body, req.Features = d.NoStream, d.Logprobs, d.TopLogprobs, d.Body, d.Names
				if d.Model != "" {
					req.Model = d.Model
				}
				if d.Schema != nil {
					req.Check = d.Schema.Check
				}
				rec := do(t, context.Background(), c, req)
				if rec.Error != tt.wantClass {
					t.Fatalf("class %q (%s), want %q", rec.Error, rec.ErrorMessage, tt.wantClass)
				}
				if tt.check != nil {
					tt.check(t, rec)
				}
			})
		}
	}
}

// hostile answers every request with body (stream or JSON per ct).
func hostile(t *testing.T, ct, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ct)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestFeaturesHostile holds the non-streamed path and the schema check to
// their error classes against servers that answer wrongly.
func TestFeaturesHostile(t *testing.T) {
	secret := "the prompt is a secret recipe"
	sch, err := workload.CompileSchema([]byte(`{"type":"object","required":["qty"],"properties":{"qty":{"type":"integer"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	chunk := func(text string) string {
		return fmt.Sprintf("data: {\"choices\":[{\"index\":0,\"text\":%q,\"finish_reason\":null}]}\n\n", text)
	}
	tests := []struct {
		name, ct, body string
		noStream       bool
		check          bool
		maxBody        int64
		wantClass      prober.ErrorClass
		wantMsg        string
	}{
		{name: "schema violated in a stream", ct: "text/event-stream", check: true,
			body:      chunk(`{"qty": `) + chunk(`"many", "note": "`+secret+`"}`) + "data: [DONE]\n\n",
			wantClass: prober.ClassInvalidResponse, wantMsg: "response_format: does not match the schema: validating /properties/qty: type:"},
		{name: "not JSON in a stream", ct: "text/event-stream", check: true,
			body:      chunk(`Sure! Here is your JSON: {"qty": 1}`) + "data: [DONE]\n\n",
			wantClass: prober.ClassInvalidResponse, wantMsg: "response_format: not JSON"},
		{name: "schema held in a stream", ct: "text/event-stream", check: true,
			body: chunk(`{"qty"`) + chunk(`: 3}`) + "data: [DONE]\n\n", wantClass: prober.ClassNone},
		{name: "schema violated without stream", ct: "application/json", check: true, noStream: true,
			body:      `{"choices":[{"text":"{\"qty\": 1.5}","finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":4}}`,
			wantClass: prober.ClassInvalidResponse, wantMsg: "validating /properties/qty: type: 1.5 has type \"number\", want \"integer\""},
		{name: "bad JSON", ct: "application/json", noStream: true, body: `{"choices":[`,
			wantClass: prober.ClassInvalidResponse, wantMsg: "response body"},
		{name: "no choices", ct: "application/json", noStream: true, body: `{"choices":[],"usage":{"completion_tokens":1}}`,
			wantClass: prober.ClassInvalidResponse, wantMsg: "without choices"},
		{name: "error object in a 200", ct: "application/json", noStream: true, body: `{"error":{"message":"engine dead"}}`,
			wantClass: prober.ClassInvalidResponse, wantMsg: "engine dead"},
		{name: "wrong content type", ct: "text/event-stream", noStream: true, body: chunk("x"),
			wantClass: prober.ClassInvalidResponse, wantMsg: "want application/json"},
		{name: "body over the cap", ct: "application/json", noStream: true, maxBody: 64,
			body:      `{"choices":[{"text":"` + strings.Repeat("x", 100) + `"}]}`,
			wantClass: prober.ClassInvalidResponse, wantMsg: "(Content-Length), more than the 64 allowed; not read"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, Options{BaseURL: hostile(t, tt.ct, tt.body), MaxBodyBytes: tt.maxBody})
			req := Request{ID: "h-1", Prompt: secret, MaxTokens: 4, NoStream: tt.noStream}
			if tt.check {
				req.Check = sch.Check
			}
			rec := do(t, context.Background(), c, req)
			if rec.Error != tt.wantClass || !strings.Contains(rec.ErrorMessage, tt.wantMsg) {
				t.Fatalf("class %q message %q, want %q with %q", rec.Error, rec.ErrorMessage, tt.wantClass, tt.wantMsg)
			}
			if strings.Contains(rec.ErrorMessage, secret) || len(rec.ErrorMessage) > maxErrorMessage {
				t.Errorf("message %q echoes the prompt or is too long", rec.ErrorMessage)
			}
		})
	}
}

// TestBodyRefusedOnContentLength (issue 34's risk): a non-streamed reply
// announcing 100 MiB is refused on its Content-Length before its body is
// read (it was read up to the 64 MiB cap before), as invalid_response
// naming the announced size and the cap; the server's body is never taken.
func TestBodyRefusedOnContentLength(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "104857600")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, `{"choices":[`)
		w.(http.Flusher).Flush()
		select { // the body's rest never comes: a reader waiting for it would hang
		case <-hold:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	c := newClient(t, Options{BaseURL: srv.URL})
	rec := do(t, context.Background(), c, Request{ID: "cl-1", Prompt: "x", MaxTokens: 4, NoStream: true})
	want := fmt.Sprintf("response body announced 104857600 bytes (Content-Length), more than the %d allowed; not read", DefaultMaxBodyBytes)
	if rec.Error != prober.ClassInvalidResponse || rec.ErrorMessage != want {
		t.Errorf("class %q message %q, want %q with %q", rec.Error, rec.ErrorMessage, prober.ClassInvalidResponse, want)
	}
}
