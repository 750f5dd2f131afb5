package sweep

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// multiTurnConfig is testConfig with 3-turn chat sessions.
func multiTurnConfig(t *testing.T, target string) Config {
	cfg := testConfig(t, target)
	cfg.API = "chat"
	cfg.Workload.MultiTurn = &workload.MultiTurn{Turns: workload.TurnsSpec{LengthSpec: workload.Fixed(3)}}
	cfg.Rates, cfg.RatesText, cfg.NumPrompts = []float64{20}, "20", 6
	return cfg
}

// TestSweepMultiTurnSessions: a step's arrivals start 3-turn sessions; every
// turn is a record of the step with its session id and turn, turn k sends
// 2k-1 messages, the step's multi_turn stats count sessions and turns, the
// server's prefix cache hits the resent context without flagging the step,
// and result.json carries it all back.
func TestSweepMultiTurnSessions(t *testing.T) {
	base, _ := simtest.Start(t, simtest.Fast())
	rec := simtest.Record(t, base)
	cfg := multiTurnConfig(t, rec.URL)
	sink := &memSink{}
	res := runSweep(t, cfg, sink)
	st := res.Steps[0]
	if st.Stats.Requests != 18 || len(sink.recs) != 18 || st.Stats.Failed != 0 {
		t.Fatalf("%d requests (%d records, %d failed), want 6 sessions x 3 turns", st.Stats.Requests, len(sink.recs), st.Stats.Failed)
	}
	turns := map[string][]int{}
	index := map[int64]bool{}
	for _, r := range sink.recs {
		if r.Record.SessionID == "" || index[r.Index] || r.Index >= 18 {
			t.Fatalf("record %+v: no session id, or index repeated or out of [0, 18)", r)
		}
		index[r.Index] = true
		turns[r.Record.SessionID] = append(turns[r.Record.SessionID], r.Record.Turn)
	}
	if len(turns) != 6 {
		t.Fatalf("%d sessions in the records, want 6", len(turns))
	}
	for id, ks := range turns {
		if len(ks) != 3 || ks[0] != 1 || ks[1] != 2 || ks[2] != 3 {
			t.Fatalf("session %s delivered turns %v, want [1 2 3] in order", id, ks)
		}
	}
	byLen := map[int]int{}
	for _, x := range rec.Exchanges() {
		if x.Path == "/v1/chat/completions" {
			byLen[len(x.Messages())]++
		}
	}
	// Warmups are single requests: one message each.
	if byLen[1] != 6+cfg.Warmups || byLen[3] != 6 || byLen[5] != 6 || len(byLen) != 3 {
		t.Fatalf("chat requests by number of messages %v, want 6 (+%d warmups) of 1, 6 of 3, 6 of 5", byLen, cfg.Warmups)
	}
	mt := st.MultiTurn
	if mt == nil || mt.Sessions != 6 || mt.Requests != 18 || mt.MeanTurns != 3 || mt.OfferedRequestRate != 60 ||
		mt.EndReasons[workload.SessionComplete] != 6 || len(mt.ByTurn) != 3 || mt.FirstTurn.Requests != 6 ||
		mt.LaterTurns.Requests != 12 || mt.LaterTurns.Completed != 12 || mt.ContextTokensResent <= 0 {
		t.Fatalf("multi_turn %+v", mt)
	}
	if !(mt.ByTurn[2].MeanPromptTokens > mt.ByTurn[1].MeanPromptTokens && mt.ByTurn[1].MeanPromptTokens > mt.ByTurn[0].MeanPromptTokens) {
		t.Errorf("mean prompt tokens by turn %v, %v, %v: want growing", mt.ByTurn[0].MeanPromptTokens, mt.ByTurn[1].MeanPromptTokens, mt.ByTurn[2].MeanPromptTokens)
	}
	if h := st.Server.PrefixCacheHits; !h.Known || h.Value <= 0 {
		t.Errorf("prefix-cache hits %+v, want the resent context hit", h)
	}
	// The resent context must not be flagged (unintended-prefix-cache);
	// client-saturated depends on the load beside the test.
	if flags := slices.DeleteFunc(slices.Clone(st.Validity.Flags), func(f string) bool { return f == FlagClientSaturated }); len(flags) > 0 {
		t.Errorf("step invalid: %v %v", st.Validity.Flags, st.Validity.Reasons)
	}
	back := roundTrip(t, res)
	if got := back.Steps[0].MultiTurn; got == nil || got.Sessions != 6 || len(got.ByTurn) != 3 || got.LaterTurns.TTFTP99MS != mt.LaterTurns.TTFTP99MS {
		t.Fatalf("result.json's multi_turn read back as %+v", got)
	}
}

func TestSweepMultiTurnValidation(t *testing.T) {
	f := func(edit func(*Config), field, msg string) {
		t.Helper()
		cfg := multiTurnConfig(t, "http://127.0.0.1:1")
		edit(&cfg)
		var fe *FieldError
		if err := cfg.Validate(); !errors.As(err, &fe) || fe.Field != field || !bytes.Contains([]byte(fe.Reason(FlagSpelling)), []byte(msg)) {
			t.Fatalf("Validate = %v, want %s: ...%s...", err, field, msg)
		}
	}
	f(func(c *Config) { c.API = "completions" }, "API", "multi_turn sessions need --api chat")
	f(func(c *Config) { c.NumPrompts = MaxStepRequests / 2 }, "NumPrompts", "sessions of up to 3 turns may send more than")
	f(func(c *Config) { c.Workload.MultiTurn.Turns.Value = 0 }, "Workload", "multi_turn.turns: value must be >= 1")
}
