package simulator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/llmprobe/llmprobe/prober/proccpu"
)

// Light configures the light streaming mode (`--light`): generation requests
// bypass the engine model and are answered with pre-encoded events at a
// fixed schedule, so the simulator can feed far more tokens per second than
// a prober consumes and its own cost stays small and known. It exists to
// measure clients (llmprobe bench), not servers: there is no batching, no KV
// cache, no capacity and no fault injection, and the vLLM metrics on
// /metrics do not move. The API, /tokenize, /v1/models and the trace file
// (--trace-file) stay as they are.
type Light struct {
	// Enabled turns the mode on (`--light`).
	Enabled bool
	// TTFT is the time from the request to its first token event
	// (`--light.ttft`). Default 20ms.
	TTFT time.Duration
	// Gap is the time between two token events (`--light.gap`); events are
	// due at TTFT + k·Gap from the request, whatever the writes cost.
	// Default 5ms.
	Gap time.Duration
	// Tokens is the number of token events of a response whose request
	// sets no max_tokens (`--light.tokens`); one event carries one token.
	// Default 64.
	Tokens int
}

// Defaults of Light.
const (
	DefaultLightTTFT   = 20 * time.Millisecond
	DefaultLightGap    = 5 * time.Millisecond
	DefaultLightTokens = 64
	// maxLightTokens bounds the events of one light response.
	maxLightTokens = 1 << 20
)

// DefaultLight returns the light-mode defaults (disabled).
func DefaultLight() Light {
	return Light{TTFT: DefaultLightTTFT, Gap: DefaultLightGap, Tokens: DefaultLightTokens}
}

// Validate reports the first invalid light-mode parameter; the error names
// its flag.
func (l Light) Validate() error {
	switch {
	case l.TTFT < 0:
		return fmt.Errorf("--light.ttft must be >= 0, got %s", l.TTFT)
	case l.Gap < 0:
		return fmt.Errorf("--light.gap must be >= 0, got %s", l.Gap)
	case l.Tokens < 1 || l.Tokens > maxLightTokens:
		return fmt.Errorf("--light.tokens must be in [1, %d], got %d", maxLightTokens, l.Tokens)
	}
	return nil
}

// addLightFlags registers the --light flags on cmd.
func addLightFlags(cmd *kingpin.CmdClause, l *Light) {
	cmd.Flag("light", "Light streaming mode for measuring clients: answer generation requests with pre-encoded events "+
		"at a fixed schedule (--light.ttft, --light.gap, --light.tokens) instead of the engine model; no capacity, "+
		"no faults, static metrics; serves GET /light/stats (the simulator's own CPU and counts).").
		Default("false").BoolVar(&l.Enabled)
	cmd.Flag("light.ttft", "Light mode: time from the request to the first token event.").
		Default(l.TTFT.String()).DurationVar(&l.TTFT)
	cmd.Flag("light.gap", "Light mode: time between token events.").
		Default(l.Gap.String()).DurationVar(&l.Gap)
	cmd.Flag("light.tokens", "Light mode: token events of a response whose request sets no max_tokens.").
		Default(strconv.Itoa(l.Tokens)).IntVar(&l.Tokens)
}

// LightStats is what GET /light/stats answers: the simulator process's own
// CPU time and what light mode has streamed since the start.
type LightStats struct {
	// CPUNS is the process's user + system CPU time in nanoseconds (-1
	// where getrusage is not available).
	CPUNS int64 `json:"cpu_ns"`
	// Requests, Events and Tokens count the light responses started, the
	// token events written and the tokens they carried.
	Requests int64 `json:"requests"`
	Events   int64 `json:"events"`
	Tokens   int64 `json:"tokens"`
	// Active is the number of light responses in progress.
	Active int64 `json:"active"`
}

// lightState is light mode's pre-encoded events and counters.
type lightState struct {
	// Pre-encoded "data: ...\n\n" events: a token, the last token (with
	// its finish_reason), and chat's role event, per API kind.
	token, last, role [2][]byte
	requests, events  atomic.Int64
	active            atomic.Int64
}

func newLightState(model string, created int64) *lightState {
	ls := &lightState{}
	enc := func(v any) []byte {
		b, _ := json.Marshal(v)
		return append(append([]byte("data: "), b...), "\n\n"...)
	}
	length := finishLength
	for _, kind := range []apiKind{kindCompletion, kindChat} {
		if kind == kindChat {
			ch := func(d chatDelta, finish *string) chatChunk {
				c := chatChunk{ID: "chatcmpl-light", Object: "chat.completion.chunk", Created: created, Model: model}
				c.Choices = []chatChunkChoice{{Delta: d, FinishReason: finish}}
				return c
			}
			ls.role[kind] = enc(ch(chatDelta{Role: "assistant"}, nil))
			ls.token[kind] = enc(ch(chatDelta{Content: " light"}, nil))
			ls.last[kind] = enc(ch(chatDelta{Content: " light"}, &length))
			continue
		}
		ch := func(finish *string) completionChunk {
			return completionChunk{ID: "cmpl-light", Object: "text_completion", Created: created, Model: model,
				Choices: []completionStreamChoice{{Text: " light", FinishReason: finish}}}
		}
		ls.token[kind] = enc(ch(nil))
		ls.last[kind] = enc(ch(&length))
	}
	return ls
}

// lightRequest is the part of a generation request light mode reads.
type lightRequest struct {
	Prompt              json.RawMessage `json:"prompt"`
	Messages            []chatMessage   `json:"messages"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Stream              bool            `json:"stream"`
	StreamOptions       *streamOptions  `json:"stream_options"`
}

// generateLight serves a generation request in light mode.
func (s *Simulator) generateLight(w http.ResponseWriter, r *http.Request, kind apiKind) {
	start := time.Now()
	c, _, _ := s.startCall(w, r)
	defer c.record()
	var body lightRequest
	if e := readJSON(w, r, &body); e != nil {
		c.fail(e)
		return
	}
	prompt, e := lightPromptTokens(kind, &body)
	if e != nil {
		c.fail(e)
		return
	}
	n := s.cfg.Light.Tokens
	if mt := body.MaxTokens; kind == kindChat && body.MaxCompletionTokens != nil {
		n = *body.MaxCompletionTokens
	} else if mt != nil {
		n = *mt
	}
	if n < 1 || n > maxLightTokens {
		c.fail(badRequest("max_tokens", "max_tokens must be in [1, %d] in light mode, got %d", maxLightTokens, n))
		return
	}
	c.tr.Stream = body.Stream
	c.tr.PromptTokens = prompt
	ls := s.light
	ls.requests.Add(1)
	ls.active.Add(1)
	defer ls.active.Add(-1)
	if !body.Stream {
		s.completeLight(c, kind, start, prompt, n)
		return
	}
	if !c.openStream(false) {
		return
	}
	c.tr.EventsNS = make([]int64, 0, n+1)
	if !s.streamLight(c, kind, start, n) {
		return
	}
	c.tr.FinishReason = finishLength
	tail := make([]byte, 0, 256)
	if body.StreamOptions != nil && body.StreamOptions.IncludeUsage {
		tail = append(tail, "data: "...)
		tail = append(tail, lightUsage(kind, s.cfg.Model, s.created, prompt, n)...)
		tail = append(tail, "\n\n"...)
	}
	tail = append(tail, "data: [DONE]\n\n"...)
	if err := c.write(tail); err != nil {
		return
	}
	c.tr.DoneNS = time.Now().UnixNano()
}

// lightPromptTokens counts the prompt tokens of a light request with the
// simulator's tokenizer (one token per word).
func lightPromptTokens(kind apiKind, body *lightRequest) (int, *apiError) {
	if kind == kindChat {
		if len(body.Messages) == 0 {
			return 0, badRequest("messages", "messages must be a non-empty list")
		}
		text, err := renderChat(body.Messages, true)
		if err != nil {
			return 0, badRequest("messages", "%v", err)
		}
		return countWords(text), nil
	}
	var text string
	if err := json.Unmarshal(body.Prompt, &text); err != nil {
		ids, e := parsePrompt(body.Prompt)
		if e != nil {
			return 0, e
		}
		return len(ids), nil
	}
	return countWords(text), nil
}

// countWords is len(tokenize(text)) without building the ids.
func countWords(text string) int {
	n, in := 0, false
	for i := 0; i < len(text); i++ {
		space := text[i] == ' ' || text[i] == '\n' || text[i] == '\t' || text[i] == '\r' || text[i] == '\v' || text[i] == '\f'
		if !space && !in {
			n++
		}
		in = !space
	}
	return n
}

// lightUsage is the usage chunk's JSON.
func lightUsage(kind apiKind, model string, created int64, prompt, completion int) []byte {
	use := &usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
	var b []byte
	if kind == kindChat {
		b, _ = json.Marshal(chatChunk{ID: "chatcmpl-light", Object: "chat.completion.chunk", Created: created, Model: model,
			Choices: []chatChunkChoice{}, Usage: use})
	} else {
		b, _ = json.Marshal(completionChunk{ID: "cmpl-light", Object: "text_completion", Created: created, Model: model,
			Choices: []completionStreamChoice{}, Usage: use})
	}
	return b
}

// completeLight answers a non-streaming light request once its last token
// would have been streamed.
func (s *Simulator) completeLight(c *call, kind apiKind, start time.Time, prompt, n int) {
	d := time.Until(start.Add(s.cfg.Light.TTFT + time.Duration(n-1)*s.cfg.Light.Gap))
	if d > 0 && !c.sleep(d) {
		return
	}
	text := make([]byte, 0, 6*n)
	for range n {
		text = append(text, " light"...)
	}
	use := usage{PromptTokens: prompt, CompletionTokens: n, TotalTokens: prompt + n, PromptTokensDetails: jsonNull}
	reason := finishLength
	var resp any
	if kind == kindChat {
		resp = chatResponse{ID: "chatcmpl-light", Object: "chat.completion", Created: time.Now().Unix(), Model: s.cfg.Model,
			Choices: []chatChoice{{Message: chatMessageOut{Role: "assistant", Content: string(text), ToolCalls: []any{}}, FinishReason: reason}},
			Usage:   use}
	} else {
		resp = completionResponse{ID: "cmpl-light", Object: "text_completion", Created: time.Now().Unix(), Model: s.cfg.Model,
			Choices: []completionChoice{{Text: string(text), FinishReason: &reason}}, Usage: use}
	}
	b, _ := json.Marshal(resp)
	c.w.Header().Set("Content-Type", "application/json")
	c.w.WriteHeader(http.StatusOK)
	c.tr.Status = http.StatusOK
	c.tr.CompletionTokens = n
	c.tr.FinishReason = reason
	c.write(b)
	c.tr.HeadersNS = time.Now().UnixNano()
	s.light.events.Add(int64(n))
}

// LightStats returns light mode's counters and the process's CPU time.
func (s *Simulator) LightStats() LightStats {
	st := LightStats{CPUNS: -1}
	if cpu, ok := proccpu.Used(); ok {
		st.CPUNS = cpu.Nanoseconds()
	}
	if ls := s.light; ls != nil {
		st.Requests = ls.requests.Load()
		st.Events = ls.events.Load()
		st.Tokens = st.Events
		st.Active = ls.active.Load()
	}
	return st
}

func (s *Simulator) handleLightStats(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.LightStats())
}
