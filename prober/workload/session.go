package workload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Bounds of a multi-turn workload.
const (
	// MaxTurns is the most turns one session may draw: 64, the context of
	// every turn is resent, so a session's prompt tokens grow with the
	// square of its turns.
	MaxTurns = 64
	// MaxThinkTime bounds MultiTurn.ThinkTime: 10 minutes.
	MaxThinkTime = 10 * time.Minute
)

// Session end reasons (SessionEnd.Reason), a closed set: they are counted
// per step in result.json's multi_turn.end_reasons.
const (
	// SessionComplete: every drawn turn was sent and succeeded.
	SessionComplete = "complete"
	// SessionContextLimit: the next turn's context (the conversation so
	// far, its new message and its output tokens) would have exceeded the
	// model's max_model_len or the workload's max_context_tokens, so the
	// session stopped before sending it. Not an error.
	SessionContextLimit = "context_limit"
	// SessionFailed: a turn failed; the session's later turns were not
	// sent.
	SessionFailed = "failed"
	// SessionCanceled: the step or probe ended (its context was canceled)
	// before the session's turns were all sent.
	SessionCanceled = "canceled"
)

// SessionEndReasons lists the end reasons in a stable order.
var SessionEndReasons = []string{SessionComplete, SessionContextLimit, SessionFailed, SessionCanceled}

// MultiTurn makes a workload's requests multi-turn chat sessions (the
// prefix-cache case of vLLM's benchmarks/multi_turn): a session of Turns
// turns whose turn k sends the conversation so far — [u1, a1, ..., uk],
// a_i being the server's actual reply to turn i — and waits ThinkTime after
// turn k's reply before sending turn k+1. Every user message u_k draws its
// length from the workload's input_tokens (turn 1 carries the shared
// prefix, later turns do not) and its max_tokens from output_tokens. Chat
// API only.
//
// In YAML:
//
//	multi_turn: {turns: 3, think_time: 500ms, max_context_tokens: 8192}
//	multi_turn: {turns: {dist: uniform, min: 2, max: 6}}
type MultiTurn struct {
	// Turns is the number of turns of a session, drawn per session: an
	// integer or a LengthSpec, at most MaxTurns.
	Turns TurnsSpec `yaml:"turns" json:"turns"`
	// ThinkTime is the pause between a turn's reply and the next turn's
	// send (0: none), at most MaxThinkTime.
	ThinkTime time.Duration `yaml:"think_time,omitempty" json:"think_time_ns,omitempty"`
	// MaxContextTokens caps a session's context (0: only the model's
	// max_model_len does): a session ends, with SessionContextLimit, before
	// a turn whose prompt plus output tokens would exceed it.
	MaxContextTokens int `yaml:"max_context_tokens,omitempty" json:"max_context_tokens,omitempty"`
	// SessionHeader names the request header that carries the session's
	// id on every turn, so that a KV-cache-aware router keeps the
	// conversation on the replica holding its prefix (vllm-bench's and
	// llm-d's X-Session-ID): nil (left out) is DefaultSessionHeader, ""
	// sends none. An HTTP header name of at most 64 bytes, none of those
	// the client sets itself (SessionHeaderName).
	SessionHeader *string `yaml:"session_header,omitempty" json:"session_header,omitempty"`
}

// DefaultSessionHeader is MultiTurn.SessionHeader's default.
const DefaultSessionHeader = "X-Session-ID"

// SessionHeaderName returns the header that carries the session id: the
// configured one, DefaultSessionHeader when left out, "" when turned off.
func (m MultiTurn) SessionHeaderName() string {
	if m.SessionHeader == nil {
		return DefaultSessionHeader
	}
	return *m.SessionHeader
}

// ownHeaders are the request headers the client sets itself (lower case):
// a session header may not name one.
var ownHeaders = []string{"accept", "authorization", "content-length", "content-type", "host", "traceparent",
	"tracestate", "transfer-encoding", "user-agent", "x-request-id"}

// validSessionHeader checks a session_header value ("" is off).
func validSessionHeader(h string) error {
	if h == "" {
		return nil
	}
	if len(h) > 64 {
		return fmt.Errorf("want a header name of at most 64 bytes, got %d", len(h))
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return fmt.Errorf("%q is not a header name (character %q)", h, c)
	}
	if slices.Contains(ownHeaders, strings.ToLower(h)) {
		return fmt.Errorf("%q is a header llmprobe sets itself", h)
	}
	return nil
}

// TurnsSpec is MultiTurn.Turns: a LengthSpec that YAML may also give as a
// plain integer (turns: 3 is {dist: fixed, value: 3}).
type TurnsSpec struct{ LengthSpec }

// UnmarshalYAML decodes an integer as a fixed spec, anything else as a
// LengthSpec (strictly).
func (t *TurnsSpec) UnmarshalYAML(unmarshal func(any) error) error {
	var n int
	if err := unmarshal(&n); err == nil {
		t.LengthSpec = Fixed(n)
		return nil
	}
	return unmarshal(&t.LengthSpec)
}

// UnmarshalJSON decodes an integer as a fixed spec, an object as a
// LengthSpec (the sweep API's JSON body).
func (t *TurnsSpec) UnmarshalJSON(b []byte) error {
	var n int
	if err := json.Unmarshal(b, &n); err == nil {
		t.LengthSpec = Fixed(n)
		return nil
	}
	return json.Unmarshal(b, &t.LengthSpec)
}

// Validate checks every field; each error starts with the field's YAML name
// (turns, think_time, max_context_tokens, session_header).
func (m MultiTurn) Validate() error {
	if m.Turns.Dist == "" {
		return errors.New("turns: required (an integer >= 1 or a length distribution such as {dist: uniform, min: 2, max: 6})")
	}
	s, err := NewLengthSampler(m.Turns.LengthSpec)
	if err != nil {
		return fmt.Errorf("turns: %w", err)
	}
	if _, hi := s.Range(); hi > MaxTurns {
		return fmt.Errorf("turns: can draw %d turns, more than the %d a session may have", hi, MaxTurns)
	}
	if m.ThinkTime < 0 || m.ThinkTime > MaxThinkTime {
		return fmt.Errorf("think_time: must be between 0s and %s, got %s", MaxThinkTime, m.ThinkTime)
	}
	if m.MaxContextTokens < 0 || m.MaxContextTokens > MaxLength {
		return fmt.Errorf("max_context_tokens: must be between 0 (no cap) and %d, got %d", MaxLength, m.MaxContextTokens)
	}
	if err := validSessionHeader(m.SessionHeaderName()); err != nil {
		return fmt.Errorf("session_header: %w", err)
	}
	return nil
}

// ContextLimit is the context cap of a session: the smaller of
// MaxContextTokens and maxModelLen, ignoring either when it is <= 0 (0: no
// cap).
func (m MultiTurn) ContextLimit(maxModelLen int) int {
	switch {
	case m.MaxContextTokens <= 0:
		return max(maxModelLen, 0)
	case maxModelLen <= 0:
		return m.MaxContextTokens
	}
	return min(m.MaxContextTokens, maxModelLen)
}

// Sessions draws what a multi-turn workload needs beyond a session's first
// turn, which its caller takes from the workload's own Generator (so turn 1
// carries the shared prefix and is built ahead like any single-turn
// request): the number of turns of each session and the user messages of
// its later turns, drawn from the workload's input and output lengths
// without the shared prefix, each with a nonce of its own. Session i's
// values are a function of the seed and i only. Safe for concurrent use.
type Sessions struct {
	mt    MultiTurn
	turns *LengthSampler
	later *Generator
	seed  uint64
}

// NewSessions returns the sessions of spec (which must have MultiTurn set),
// seeded by seed (the workload generator's). It sends nothing.
func NewSessions(spec Spec, seed uint64) (*Sessions, error) {
	if spec.MultiTurn == nil {
		return nil, errors.New("workload: no multi_turn")
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	turns, err := NewLengthSampler(spec.MultiTurn.Turns.LengthSpec)
	if err != nil {
		return nil, fmt.Errorf("multi_turn.turns: %w", err)
	}
	ls := spec
	ls.PrefixTokens, ls.MultiTurn = 0, nil
	later, err := NewGenerator(ls, derive(seed, tagFollowUp))
	if err != nil {
		return nil, err
	}
	return &Sessions{mt: *spec.MultiTurn, turns: turns, later: later, seed: seed}, nil
}

// SetPromptNonce mixes a run's prompt nonce into the later turns' texts
// (Generator.SetPromptNonce); the number of turns and the lengths stay a
// function of the seed.
func (s *Sessions) SetPromptNonce(n uint64) { s.later.SetPromptNonce(n) }

// MultiTurn returns the multi-turn settings.
func (s *Sessions) MultiTurn() MultiTurn { return s.mt }

// Turns returns the number of turns of session i, in [1, MaxTurns].
func (s *Sessions) Turns(i int64) int {
	return s.turns.Draw(newRand(derive(s.seed, tagTurns, uint64(i))))
}

// FollowUp returns the user message of session i's turn (2 <= turn <=
// MaxTurns) as an Item without the shared prefix (PrefixTokens 0), built
// with tok like Generator.At.
func (s *Sessions) FollowUp(ctx context.Context, tok Tokenizer, i int64, turn int) (Item, error) {
	if turn < 2 || turn > MaxTurns {
		return Item{}, fmt.Errorf("workload: follow-up turn %d out of [2, %d]", turn, MaxTurns)
	}
	return s.later.At(ctx, tok, i*MaxTurns+int64(turn-1))
}

// Info returns the follow-up generator's Info (its distinct prompts are the
// later turns' user messages).
func (s *Sessions) Info() Info { return s.later.Info() }

// Conversation is the context of one session: the messages sent so far and
// the server's replies, with its length in tokens as the server counted it
// (the last prompt and reply). It is used by one goroutine.
type Conversation struct {
	msgs   []Message
	tokens int
}

// Ask appends it.Prompt as the next user message and returns it with
// Messages set to the whole conversation, and the request's intended
// prompt length: the conversation's tokens so far plus the new message's
// drawn length (PrefixTokens + InputTokens).
func (c *Conversation) Ask(it Item) (Item, int) {
	c.msgs = append(c.msgs, Message{Role: "user", Content: it.Prompt})
	it.Messages = c.msgs[:len(c.msgs):len(c.msgs)]
	return it, c.tokens + it.PrefixTokens + it.InputTokens
}

// Reply appends the server's reply to the last user message, with the
// request's prompt and completion tokens (the server's usage, or what the
// caller knows): the conversation's length is then promptTokens +
// completionTokens.
func (c *Conversation) Reply(text string, promptTokens, completionTokens int) {
	c.msgs = append(c.msgs, Message{Role: "assistant", Content: text})
	c.tokens = promptTokens + completionTokens
}

// Tokens is the conversation's length in tokens after the last Reply.
func (c *Conversation) Tokens() int { return c.tokens }

// Len is the number of messages so far.
func (c *Conversation) Len() int { return len(c.msgs) }
