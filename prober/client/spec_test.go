package client

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober"
)

// TestSpecDecodingOverSimulator reads llama-server's per-request
// speculative decoding figures (timings.draft_n, draft_n_accepted) from the
// simulator's llamacpp persona with --spec-draft-tokens, streamed and not,
// chat and completions, and holds them to what the simulator's trace file
// says it sent; without the option the record has none.
func TestSpecDecodingOverSimulator(t *testing.T) {
	const maxTokens = 24
	for _, tt := range []struct {
		name     string
		api      string
		noStream bool
		draft    int
	}{
		{name: "chat streamed", api: APIChat, draft: 4},
		{name: "chat not streamed", api: APIChat, noStream: true, draft: 4},
		{name: "completions streamed", api: APICompletions, draft: 3},
		{name: "completions not streamed", api: APICompletions, noStream: true, draft: 3},
		{name: "chat streamed without speculative decoding", api: APIChat},
		{name: "chat not streamed without speculative decoding", api: APIChat, noStream: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := simtest.Fast()
			cfg.Engine, cfg.SpecDraftTokens, cfg.SpecAcceptance = simulator.EngineLlamaCpp, tt.draft, 0.7
			cfg.TraceFile = filepath.Join(t.TempDir(), "trace.jsonl")
			url, _ := simtest.Start(t, cfg)
			c := newClient(t, Options{BaseURL: url, API: tt.api})
			req := Request{ID: "spec-1", MaxTokens: maxTokens, IgnoreEOS: true, NoStream: tt.noStream}
			setInput(&req, tt.api, "tell me a story")
			rec := do(t, context.Background(), c, req)
			if !rec.OK() || rec.CompletionTokens != maxTokens {
				t.Fatalf("class %q (%s), completion tokens %d", rec.Error, rec.ErrorMessage, rec.CompletionTokens)
			}
			sent := simTrace(t, cfg.TraceFile, 1)["spec-1"]
			if tt.draft == 0 {
				if rec.DraftReported || rec.DraftTokens != 0 || rec.DraftAccepted != 0 || sent.DraftTokens != 0 {
					t.Errorf("without speculative decoding: record %v %d/%d, simulator sent %d", rec.DraftReported, rec.DraftAccepted, rec.DraftTokens, sent.DraftTokens)
				}
				return
			}
			if sent.DraftTokens == 0 || sent.DraftTokens%tt.draft != 0 || sent.DraftAccepted > sent.DraftTokens || sent.DraftAccepted >= maxTokens {
				t.Fatalf("simulator sent draft_n %d, draft_n_accepted %d for %d tokens with K=%d", sent.DraftTokens, sent.DraftAccepted, maxTokens, tt.draft)
			}
			if !rec.DraftReported || rec.DraftTokens != sent.DraftTokens || rec.DraftAccepted != sent.DraftAccepted {
				t.Errorf("record: reported %v, drafted %d, accepted %d; simulator sent %d, %d",
					rec.DraftReported, rec.DraftTokens, rec.DraftAccepted, sent.DraftTokens, sent.DraftAccepted)
			}
		})
	}
}

// TestDraftFiguresNonStreamed holds the non-streamed reader to the
// streamed decoder's rule: both figures non-negative integers in a timings
// object, anything else ignored without an error.
func TestDraftFiguresNonStreamed(t *testing.T) {
	for raw, want := range map[string]bool{
		`{"draft_n":8,"draft_n_accepted":5,"prompt_ms":1.5}`: true,
		`{"draft_n":"8","draft_n_accepted":5}`:               false,
		`{"draft_n":8.5,"draft_n_accepted":5}`:               false,
		`{"draft_n":8,"draft_n_accepted":-1}`:                false,
		`{"draft_n":{"n":8},"draft_n_accepted":5}`:           false,
		`{"draft_n":8,"draft_n_accepted":null}`:              false,
		`{"draft_n":8}`:                                      false,
		`[{"draft_n":8,"draft_n_accepted":5}]`:               false,
		`null`:                                               false,
		``:                                                   false,
	} {
		var rec prober.Record
		draftFigures(json.RawMessage(raw), &rec)
		if rec.DraftReported != want || (want && (rec.DraftTokens != 8 || rec.DraftAccepted != 5)) || (!want && (rec.DraftTokens != 0 || rec.DraftAccepted != 0)) {
			t.Errorf("%s: reported %v, %d/%d", raw, rec.DraftReported, rec.DraftAccepted, rec.DraftTokens)
		}
	}
}

// TestDecodeChunkTimingsAllocs: reading llama-server's timings keeps the
// per-event decoder free of allocations.
func TestDecodeChunkTimingsAllocs(t *testing.T) {
	data := []byte(`{"choices":[{"finish_reason":"stop","index":0,"delta":{}}],"usage":{"completion_tokens":64,"prompt_tokens":32},` +
		`"timings":{"cache_n":0,"prompt_n":32,"prompt_ms":3.5,"predicted_n":64,"predicted_ms":80.25,"draft_n":68,"draft_n_accepted":47}}`)
	c := decodeChunkNoAllocs(t, data)
	if !c.hasDraft || c.draftTokens != 68 || !c.hasDraftAccepted || c.draftAccepted != 47 {
		t.Errorf("draft figures %v %d, %v %d", c.hasDraft, c.draftTokens, c.hasDraftAccepted, c.draftAccepted)
	}
}
