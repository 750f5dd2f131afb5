package client

import (
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober"
)

// TestSimulator runs the client against the built-in simulator: a clean
// request of each API, then each error class through the simulator's fault
// flags (every fault at probability 1).
func TestSimulator(t *testing.T) {
	const stall = 5 * time.Second // simulator stall length; the client gives up far earlier
	tests := []struct {
		name      string
		faults    simulator.Faults
		opts      Options
		model     string
		maxTokens int
		noStream  bool
		cancelIn  time.Duration
		wantClass prober.ErrorClass
		wantMsg   string
		check     func(t *testing.T, rec prober.Record)
	}{
		{
			name:      "completions success",
			wantClass: prober.ClassNone,
			check: func(t *testing.T, rec prober.Record) {
				if rec.CompletionTokens != 8 || rec.TokensCounted || rec.PromptTokens <= 0 {
					t.Errorf("tokens %d/%d counted=%v", rec.PromptTokens, rec.CompletionTokens, rec.TokensCounted)
				}
				if rec.Events < 1 || len(rec.ITL) != rec.Events-1 || rec.E2E != rec.TTFT+sum(rec.ITL) || rec.Done < rec.E2E {
					t.Errorf("events %d ITL %v TTFT %v E2E %v Done %v", rec.Events, rec.ITL, rec.TTFT, rec.E2E, rec.Done)
				}
				if rec.FinishReason != "length" {
					t.Errorf("finish reason %q", rec.FinishReason)
				}
			},
		},
		{
			name:      "chat success",
			opts:      Options{API: APIChat},
			wantClass: prober.ClassNone,
			check: func(t *testing.T, rec prober.Record) {
				if rec.CompletionTokens != 8 || rec.TTFTText < rec.TTFT {
					t.Errorf("tokens %d TTFT %v TTFTText %v", rec.CompletionTokens, rec.TTFT, rec.TTFTText)
				}
			},
		},
		{
			name:      "slow drip is still measured",
			faults:    simulator.Faults{SlowDrip: 1, SlowDripInterval: 10 * time.Microsecond},
			maxTokens: 3,
			wantClass: prober.ClassNone,
		},
		{
			name:      "unknown model is http_4xx",
			model:     "no-such-model",
			wantClass: prober.ClassHTTP4xx, wantMsg: "does not exist",
		},
		{name: "http_429", faults: simulator.Faults{HTTP429: 1}, wantClass: prober.ClassHTTP429, wantMsg: "HTTP 429"},
		{name: "http_5xx 500", faults: simulator.Faults{HTTP500: 1}, wantClass: prober.ClassHTTP5xx, wantMsg: "HTTP 500"},
		{name: "http_5xx 503", faults: simulator.Faults{HTTP503: 1}, wantClass: prober.ClassHTTP5xx, wantMsg: "HTTP 503"},
		{name: "connect on reset", faults: simulator.Faults{ConnectionReset: 1}, wantClass: prober.ClassConnect},
		{
			name:      "ttft_timeout on stall before first token",
			faults:    simulator.Faults{StallBeforeFirstToken: 1, StallDuration: stall},
			opts:      Options{TTFTTimeout: 100 * time.Millisecond},
			wantClass: prober.ClassTTFTTimeout,
		},
		{
			name:      "ttft_timeout on hang",
			faults:    simulator.Faults{Hang: 1},
			opts:      Options{TTFTTimeout: 100 * time.Millisecond, Timeout: time.Minute},
			wantClass: prober.ClassTTFTTimeout,
		},
		{
			name:      "timeout on hang",
			faults:    simulator.Faults{Hang: 1},
			opts:      Options{Timeout: 100 * time.Millisecond},
			wantClass: prober.ClassTimeout,
		},
		{
			name:      "stall mid-stream",
			faults:    simulator.Faults{StallMidStream: 1, StallDuration: stall},
			opts:      Options{StallTimeout: 150 * time.Millisecond},
			wantClass: prober.ClassStall,
			check: func(t *testing.T, rec prober.Record) {
				if rec.Events == 0 {
					t.Error("no token event before the stall")
				}
			},
		},
		{name: "stream cut", faults: simulator.Faults{CutStream: 1}, wantClass: prober.ClassStream, wantMsg: "before [DONE]"},
		{name: "malformed event", faults: simulator.Faults{MalformedEvent: 1}, wantClass: prober.ClassStream, wantMsg: "malformed event"},
		{
			name:   "empty chat answer is invalid_response",
			faults: simulator.Faults{EmptyAnswer: 1},
			opts:   Options{API: APIChat}, wantClass: prober.ClassInvalidResponse, wantMsg: EmptyAnswer,
			check: func(t *testing.T, rec prober.Record) {
				// The role chunk is a token event (TTFT) that carries no token.
				if rec.Events != 1 || rec.CompletionTokens != 0 || rec.TTFT <= 0 || rec.TTFTText != 0 {
					t.Errorf("events %d, tokens %d, TTFT %v, content TTFT %v", rec.Events, rec.CompletionTokens, rec.TTFT, rec.TTFTText)
				}
			},
		},
		{
			name:   "empty non-streamed chat answer is invalid_response",
			faults: simulator.Faults{EmptyAnswer: 1},
			opts:   Options{API: APIChat}, noStream: true, wantClass: prober.ClassInvalidResponse, wantMsg: EmptyAnswer,
		},
		{
			name:   "empty non-streamed completion is invalid_response",
			faults: simulator.Faults{EmptyAnswer: 1}, noStream: true, wantClass: prober.ClassInvalidResponse, wantMsg: EmptyAnswer,
		},
		{
			name:   "empty completions stream is invalid_response",
			faults: simulator.Faults{EmptyAnswer: 1}, wantClass: prober.ClassInvalidResponse, wantMsg: "without a token event",
		},
		{
			name:      "canceled during a hang",
			faults:    simulator.Faults{Hang: 1},
			cancelIn:  50 * time.Millisecond,
			wantClass: prober.ClassCanceled,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := simulator.DefaultConfig()
			cfg.Faults = tt.faults
			if cfg.Faults.StallDuration == 0 {
				cfg.Faults.StallDuration = stall
			}
			if cfg.Faults.SlowDripInterval == 0 {
				cfg.Faults.SlowDripInterval = time.Millisecond
			}
			url, _ := simtest.Start(t, cfg)
			maxTokens := tt.maxTokens
			if maxTokens == 0 {
				maxTokens = 8
			}
			req := Request{ID: "sim-1", Model: tt.model, MaxTokens: maxTokens, IgnoreEOS: true, NoStream: tt.noStream}
			setInput(&req, tt.opts.API, "hello there, simulator")
			// Within stall: detected before the simulator's stall ended.
			rec := checkOutcome(t, url, tt.opts, tt.cancelIn, req, tt.wantClass, tt.wantMsg, stall)
			if tt.check != nil {
				tt.check(t, rec)
			}
		})
	}
}

// setInput gives req its input for api: text as the user's one message for
// chat, else as the prompt.
func setInput(req *Request, api, text string) {
	if api == APIChat {
		req.Messages = []Message{{Role: "user", Content: text}}
	} else {
		req.Prompt = text
	}
}
