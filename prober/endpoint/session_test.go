package endpoint

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// sessionRun runs one session of mt (64 input, 8 output tokens per turn)
// against the simulator behind rec and returns its records and end.
func sessionRun(t *testing.T, rec *simtest.Recorder, mt workload.MultiTurn, maxModelLen int) ([]*prober.Record, SessionEnd) {
	t.Helper()
	e, err := New(Options{BaseURL: rec.URL, API: client.APIChat, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.CloseIdleConnections)
	ctx := context.Background()
	sz, err := e.PromptSizing(ctx, "llmprobe-sim")
	if err != nil {
		t.Fatal(err)
	}
	c, _ := e.Client("llmprobe-sim")
	spec := workload.Spec{InputTokens: workload.Fixed(64), OutputTokens: workload.Fixed(8), PrefixTokens: 16, MultiTurn: &mt}
	gen, _ := workload.NewGenerator(spec, 3)
	sessions, err := workload.NewSessions(spec, 3)
	if err != nil {
		t.Fatal(err)
	}
	first, err := gen.At(ctx, sz.Tokenizer, 0)
	if err != nil {
		t.Fatal(err)
	}
	var recs []*prober.Record
	s := Session{
		ID: "sess-1", Client: c, Sessions: sessions, Index: first.Index, Tokenizer: sz.Tokenizer, First: first,
		Scheduled: time.Now(), IgnoreEOS: true, MaxModelLen: maxModelLen,
		NewRecord: func(turn int) *prober.Record { return &prober.Record{RequestID: "req-" + string(rune('0'+turn))} },
		Done:      func(r *prober.Record, _ string) { recs = append(recs, r) },
	}
	end := s.Run(ctx)
	return recs, end
}

// chatExchanges returns the recorder's chat requests by their number of
// messages (turn k sends 2k-1).
func chatExchanges(rec *simtest.Recorder) map[int]simtest.Exchange {
	out := map[int]simtest.Exchange{}
	for _, x := range rec.Exchanges() {
		if x.Path == "/v1/chat/completions" {
			out[len(x.Messages())] = x
		}
	}
	return out
}

func TestSessionSendsGrowingContextWithServerReplies(t *testing.T) {
	base, _ := simtest.Start(t, fastSim())
	rec := simtest.Record(t, base)
	think := 30 * time.Millisecond
	recs, end := sessionRun(t, rec, workload.MultiTurn{Turns: workload.TurnsSpec{LengthSpec: workload.Fixed(3)}, ThinkTime: think}, 0)
	if end != (SessionEnd{3, workload.SessionComplete}) || len(recs) != 3 {
		t.Fatalf("end %+v with %d records, want 3 turns complete", end, len(recs))
	}
	ex := chatExchanges(rec)
	for k, r := range recs {
		turn := k + 1
		if r.SessionID != "sess-1" || r.Turn != turn || !r.OK() || r.CompletionTokens != 8 {
			t.Fatalf("turn %d record: session %q turn %d error %q tokens %d", turn, r.SessionID, r.Turn, r.ErrorMessage, r.CompletionTokens)
		}
		x, ok := ex[2*turn-1]
		if !ok {
			t.Fatalf("no request with %d messages (turn %d); have %d chat requests", 2*turn-1, turn, len(ex))
		}
		msgs := x.Messages()
		for i, m := range msgs {
			want := "user"
			if i%2 == 1 {
				want = "assistant"
				// The reply the server streamed for turn (i+1)/2.
				if reply := ex[i].Reply(); m.Content != reply || reply == "" {
					t.Fatalf("turn %d message %d = %q, want the server's reply to turn %d %q", turn, i, m.Content, (i+1)/2, reply)
				}
			}
			if m.Role != want {
				t.Fatalf("turn %d message %d role %q, want %s", turn, i, m.Role, want)
			}
		}
		if turn > 1 {
			prev := recs[k-1]
			if gap := r.Scheduled.Sub(prev.Sent); gap < prev.E2E+think {
				t.Errorf("turn %d scheduled %v after turn %d's send, before its completion (%v) + think time", turn, gap, turn-1, prev.E2E)
			}
			if r.SendLag < 0 || r.QueueWait != 0 {
				t.Errorf("turn %d send lag %v queue wait %v", turn, r.SendLag, r.QueueWait)
			}
			// The context grows by the previous reply and the new message.
			if r.PromptTokens <= prev.PromptTokens+prev.CompletionTokens || r.InputTokens < prev.PromptTokens+prev.CompletionTokens+64 {
				t.Errorf("turn %d prompt %d (intended %d) after turn %d's %d + %d", turn, r.PromptTokens, r.InputTokens, turn-1, prev.PromptTokens, prev.CompletionTokens)
			}
		}
	}
	if recs[0].InputTokens != 16+64 {
		t.Errorf("turn 1 intended %d tokens, want prefix 16 + input 64", recs[0].InputTokens)
	}
}

func TestSessionFailedTurnEndsIt(t *testing.T) {
	base, _ := simtest.Start(t, fastSim())
	rec := simtest.Record(t, base)
	rec.Fail = func(_ int, body []byte) int {
		if len((simtest.Exchange{Request: body}).Messages()) == 3 { // turn 2
			return http.StatusInternalServerError
		}
		return 0
	}
	recs, end := sessionRun(t, rec, workload.MultiTurn{Turns: workload.TurnsSpec{LengthSpec: workload.Fixed(4)}}, 0)
	if end != (SessionEnd{2, workload.SessionFailed}) || len(recs) != 2 {
		t.Fatalf("end %+v with %d records, want failed after 2 turns", end, len(recs))
	}
	if !recs[0].OK() || recs[1].Error != prober.ClassHTTP5xx || recs[1].Turn != 2 {
		t.Fatalf("turn 1 error %q, turn 2 (turn %d) error %q", recs[0].Error, recs[1].Turn, recs[1].Error)
	}
	if ex := chatExchanges(rec); len(ex) != 2 {
		t.Fatalf("%d chat requests, want 2: the session's later turns are not sent", len(ex))
	}
}

func TestSessionStopsAtContextLimit(t *testing.T) {
	f := func(name string, mt workload.MultiTurn, maxModelLen, wantTurns int) {
		t.Run(name, func(t *testing.T) {
			base, _ := simtest.Start(t, fastSim())
			rec := simtest.Record(t, base)
			recs, end := sessionRun(t, rec, mt, maxModelLen)
			if end != (SessionEnd{wantTurns, workload.SessionContextLimit}) || len(recs) != wantTurns {
				t.Fatalf("end %+v with %d records, want %d turns then context_limit", end, len(recs), wantTurns)
			}
			for _, r := range recs {
				if !r.OK() {
					t.Fatalf("turn %d failed: %s", r.Turn, r.ErrorMessage)
				}
			}
			if n := len(chatExchanges(rec)); n != wantTurns {
				t.Fatalf("%d chat requests, want %d", n, wantTurns)
			}
		})
	}
	// Each turn adds about 64 + 8 tokens to the 80 of turn 1: turn 2 needs
	// ~160 + 8, turn 3 ~232 + 8.
	five := workload.TurnsSpec{LengthSpec: workload.Fixed(5)}
	f("workload cap", workload.MultiTurn{Turns: five, MaxContextTokens: 200}, 0, 2)
	f("max_model_len", workload.MultiTurn{Turns: five}, 200, 2)
	f("the smaller of both", workload.MultiTurn{Turns: five, MaxContextTokens: 1000}, 120, 1)
}

func TestSessionCanceledInThinkTime(t *testing.T) {
	base, _ := simtest.Start(t, fastSim())
	e, _ := New(Options{BaseURL: base, API: client.APIChat})
	defer e.CloseIdleConnections()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sz, err := e.PromptSizing(ctx, "llmprobe-sim")
	if err != nil {
		t.Fatal(err)
	}
	c, _ := e.Client("llmprobe-sim")
	spec := workload.Spec{InputTokens: workload.Fixed(16), OutputTokens: workload.Fixed(2),
		MultiTurn: &workload.MultiTurn{Turns: workload.TurnsSpec{LengthSpec: workload.Fixed(3)}, ThinkTime: 5 * time.Minute}}
	gen, _ := workload.NewGenerator(spec, 1)
	sessions, _ := workload.NewSessions(spec, 1)
	first, _ := gen.At(ctx, sz.Tokenizer, 0)
	var turns []int
	s := Session{ID: "s", Client: c, Sessions: sessions, Tokenizer: sz.Tokenizer, First: first, Scheduled: time.Now(),
		NewRecord: func(int) *prober.Record { return &prober.Record{} },
		Done: func(r *prober.Record, _ string) {
			turns = append(turns, r.Turn)
			cancel() // during the five minutes of think time that follows
		}}
	if end := s.Run(ctx); end != (SessionEnd{1, workload.SessionCanceled}) || !slices.Equal(turns, []int{1}) {
		t.Fatalf("end %+v, turns %v; want canceled after turn 1", end, turns)
	}
}
