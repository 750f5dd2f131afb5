package workload

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func TestMultiTurnYAML(t *testing.T) {
	f := func(src string, want MultiTurn, wantErr string) {
		t.Helper()
		var s Spec
		dec := yaml.NewDecoder(strings.NewReader(src))
		dec.KnownFields(true)
		err := dec.Decode(&s)
		if err == nil {
			err = s.Validate()
		}
		if wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), wantErr) {
				t.Fatalf("%s: err = %v, want %q", src, err, wantErr)
			}
			return
		}
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		got := *s.MultiTurn
		if got.Turns.Dist != want.Turns.Dist || got.Turns.Value != want.Turns.Value || got.Turns.Min != want.Turns.Min ||
			got.Turns.Max != want.Turns.Max || got.ThinkTime != want.ThinkTime || got.MaxContextTokens != want.MaxContextTokens {
			t.Fatalf("%s: got %+v, want %+v", src, got, want)
		}
	}
	base := "input_tokens: {dist: fixed, value: 8}\noutput_tokens: {dist: fixed, value: 4}\n"
	f(base+"multi_turn: {turns: 3}", MultiTurn{Turns: TurnsSpec{Fixed(3)}}, "")
	f(base+"multi_turn: {turns: {dist: uniform, min: 2, max: 5}, think_time: 250ms, max_context_tokens: 4096}",
		MultiTurn{Turns: TurnsSpec{LengthSpec{Dist: DistUniform, Min: 2, Max: 5}}, ThinkTime: 250 * time.Millisecond, MaxContextTokens: 4096}, "")
	f(base+"multi_turn: {turns: 0}", MultiTurn{}, "multi_turn.turns: value must be >= 1")
	f(base+"multi_turn: {turns: 65}", MultiTurn{}, "multi_turn.turns: can draw 65 turns, more than the 64 a session may have")
	f(base+"multi_turn: {turns: {dist: uniform, min: 2, max: 100}}", MultiTurn{}, "can draw 100 turns")
	f(base+"multi_turn: {think_time: 1s}", MultiTurn{}, "multi_turn.turns: required")
	f(base+"multi_turn: {turns: 2, think_time: -1s}", MultiTurn{}, "multi_turn.think_time: must be between 0s and 10m0s, got -1s")
	f(base+"multi_turn: {turns: 2, think_time: 11m}", MultiTurn{}, "multi_turn.think_time")
	f(base+"multi_turn: {turns: 2, max_context_tokens: -5}", MultiTurn{}, "multi_turn.max_context_tokens: must be between 0")
	f(base+"multi_turn: {turns: 2, thinktime: 1s}", MultiTurn{}, "field thinktime not found")
	f(base+"multi_turn: {turns: {dist: fixed, value: 2, sigma: 1}}", MultiTurn{}, "multi_turn.turns: sigma does not apply")
	f(base+"multi_turn: {turns: {dist: fixed, valu: 2}}", MultiTurn{}, "field valu not found")
}

func TestMultiTurnContextLimit(t *testing.T) {
	f := func(cap, maxModelLen, want int) {
		t.Helper()
		if got := (MultiTurn{MaxContextTokens: cap}).ContextLimit(maxModelLen); got != want {
			t.Errorf("ContextLimit(cap %d, max_model_len %d) = %d, want %d", cap, maxModelLen, got, want)
		}
	}
	f(0, 0, 0)
	f(0, 2048, 2048)
	f(1000, 0, 1000)
	f(1000, 2048, 1000)
	f(4096, 2048, 2048)
}

func TestSessionsDeterministicWithoutPrefix(t *testing.T) {
	spec := Spec{InputTokens: Fixed(12), OutputTokens: Fixed(3), PrefixTokens: 20,
		MultiTurn: &MultiTurn{Turns: TurnsSpec{LengthSpec{Dist: DistUniform, Min: 2, Max: 6}}}}
	a, err := NewSessions(spec, 7)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewSessions(spec, 7)
	tok := &funcTok{count: wordCount}
	ctx := context.Background()
	seen := map[int]bool{}
	prompts := map[string]bool{}
	for i := range int64(50) {
		n := a.Turns(i)
		if n < 2 || n > 6 || n != b.Turns(i) {
			t.Fatalf("session %d: %d turns (other generator %d), want the same in [2, 6]", i, n, b.Turns(i))
		}
		seen[n] = true
		for k := 2; k <= n; k++ {
			x, err := a.FollowUp(ctx, tok, i, k)
			if err != nil {
				t.Fatal(err)
			}
			y, _ := b.FollowUp(ctx, tok, i, k)
			if x.Prompt != y.Prompt || x.PrefixTokens != 0 || x.InputTokens != 12 || x.OutputTokens != 3 || !x.Exact() {
				t.Fatalf("session %d turn %d: %+v vs %+v", i, k, x, y)
			}
			if prompts[x.Prompt] {
				t.Fatalf("session %d turn %d repeats an earlier message", i, k)
			}
			prompts[x.Prompt] = true
		}
	}
	if len(seen) < 4 {
		t.Errorf("50 sessions drew only the turn counts %v", seen)
	}
	if _, err := a.FollowUp(ctx, tok, 0, 1); err == nil {
		t.Error("FollowUp(turn 1) did not fail")
	}
	if _, err := NewSessions(Spec{InputTokens: Fixed(1), OutputTokens: Fixed(1)}, 1); err == nil {
		t.Error("NewSessions without multi_turn did not fail")
	}
}

func TestConversation(t *testing.T) {
	var c Conversation
	it, n := c.Ask(Item{Prompt: "u1", PrefixTokens: 4, InputTokens: 6})
	if n != 10 || len(it.Messages) != 1 || it.Messages[0] != (Message{"user", "u1"}) {
		t.Fatalf("turn 1: %d tokens, %+v", n, it.Messages)
	}
	c.Reply("a1", 11, 5)
	it2, n := c.Ask(Item{Prompt: "u2", InputTokens: 7})
	want := []Message{{"user", "u1"}, {"assistant", "a1"}, {"user", "u2"}}
	if n != 23 || len(it2.Messages) != 3 {
		t.Fatalf("turn 2: %d tokens, %+v", n, it2.Messages)
	}
	for i := range want {
		if it2.Messages[i] != want[i] {
			t.Fatalf("turn 2 messages %+v, want %+v", it2.Messages, want)
		}
	}
	c.Reply("a2", 30, 2)
	if len(it.Messages) != 1 || len(it2.Messages) != 3 || c.Len() != 4 || c.Tokens() != 32 {
		t.Fatalf("earlier turns changed: %+v %+v (len %d, tokens %d)", it.Messages, it2.Messages, c.Len(), c.Tokens())
	}
	if got := it2.ChatMessages(); len(got) != 3 {
		t.Fatalf("ChatMessages = %+v", got)
	}
}

func TestTurnsSpecJSON(t *testing.T) {
	var m MultiTurn
	if err := json.Unmarshal([]byte(`{"turns": 3, "think_time_ns": 1000000}`), &m); err != nil || m.Turns.LengthSpec.Dist != DistFixed || m.Turns.Value != 3 || m.ThinkTime != time.Millisecond {
		t.Fatalf("int form: %+v, %v", m, err)
	}
	if err := json.Unmarshal([]byte(`{"turns": {"dist": "uniform", "min": 2, "max": 4}}`), &m); err != nil || m.Turns.Min != 2 || m.Turns.Max != 4 {
		t.Fatalf("object form: %+v, %v", m, err)
	}
	b, _ := json.Marshal(MultiTurn{Turns: TurnsSpec{Fixed(2)}})
	if string(b) != `{"turns":{"dist":"fixed","value":2}}` {
		t.Fatalf("marshal: %s", b)
	}
}
