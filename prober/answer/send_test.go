package answer

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/client"
)

// fakeDoer answers each check with its prompt lowercased, or fails it: a
// request asking for logprobs when refuseLogprobs is set, every one from
// the failAt-th on (0: none). It keeps what it was sent.
type fakeDoer struct {
	refuseLogprobs bool
	failAt         int
	ids            []string
	logprobs       []bool
	cancel         context.CancelFunc // called on the cancelAt-th request
	cancelAt       int
}

func (d *fakeDoer) Do(_ context.Context, req client.Request, rec *prober.Record) {
	d.ids = append(d.ids, req.ID)
	d.logprobs = append(d.logprobs, req.Logprobs)
	rec.RequestID = req.ID
	if len(d.ids) == d.cancelAt {
		d.cancel()
	}
	if (d.refuseLogprobs && req.Logprobs) || (d.failAt > 0 && len(d.ids) >= d.failAt) {
		rec.Error, rec.ErrorMessage = prober.ClassHTTP4xx, "400: logprobs are not enabled"
		return
	}
	req.Collect.WriteString(strings.ToLower(req.Prompt))
	rec.FinishReason = "stop"
}

func sendSet(t *testing.T) *Set {
	t.Helper()
	s, err := Parse("s.jsonl", strings.NewReader(`{"id":"a","prompt":"A","exact":"a"}`+"\n"+`{"id":"b","prompt":"B","exact":"c"}`+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSend: every item in order, the set repeated, ids numbered from 1,
// each reply judged; a server that refuses logprobs gets every send
// without them once the first one failed with them; a server that fails
// without logprobs too keeps them asked; ctx ending stops the sends.
func TestSend(t *testing.T) {
	outcomes := func(rs []Result) string {
		var parts []string
		for _, r := range rs {
			parts = append(parts, r.Check+"="+string(r.Outcome))
		}
		return strings.Join(parts, " ")
	}
	t.Run("repeats", func(t *testing.T) {
		d := &fakeDoer{}
		rs, refused, err := Send(context.Background(), d, sendSet(t), SendOptions{API: client.APICompletions, IDPrefix: "x-check-", Repeats: 2})
		if err != nil || refused {
			t.Fatal(err, refused)
		}
		if got := outcomes(rs); got != "a=pass b=fail a=pass b=fail" {
			t.Errorf("outcomes %s", got)
		}
		for i, r := range rs {
			if want := fmt.Sprintf("x-check-%d", i+1); r.RequestID != want || d.ids[i] != want || d.logprobs[i] {
				t.Errorf("send %d: id %q (sent %q, logprobs %v), want %q without logprobs", i, r.RequestID, d.ids[i], d.logprobs[i], want)
			}
		}
	})
	t.Run("logprobs refused", func(t *testing.T) {
		d := &fakeDoer{refuseLogprobs: true}
		rs, refused, err := Send(context.Background(), d, sendSet(t), SendOptions{API: client.APICompletions, IDPrefix: "c-", TopLogprobs: 2})
		if err != nil || !refused {
			t.Fatal(err, refused)
		}
		if got := outcomes(rs); got != "a=pass b=fail" {
			t.Errorf("outcomes %s", got)
		}
		// The first check twice (with, then without), then without.
		if fmt.Sprint(d.ids, d.logprobs) != "[c-1 c-1 c-2] [true false false]" {
			t.Errorf("sent %v logprobs %v", d.ids, d.logprobs)
		}
	})
	t.Run("every send fails", func(t *testing.T) {
		d := &fakeDoer{failAt: 1}
		rs, refused, err := Send(context.Background(), d, sendSet(t), SendOptions{API: client.APICompletions, IDPrefix: "c-", TopLogprobs: 2})
		if err != nil || refused {
			t.Fatal(err, refused)
		}
		if got := outcomes(rs); got != "a=error b=error" || fmt.Sprint(d.logprobs) != "[true false true]" {
			t.Errorf("outcomes %s, logprobs %v", got, d.logprobs)
		}
		if tl := Count(rs); tl != (Tally{Error: 2}) {
			t.Errorf("tally %+v", tl)
		} else if _, ok := tl.PassRatio(); ok {
			t.Error("a pass ratio without a judged check")
		}
	})
	t.Run("canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		d := &fakeDoer{cancel: cancel, cancelAt: 1}
		rs, _, err := Send(ctx, d, sendSet(t), SendOptions{API: client.APICompletions, Repeats: 3})
		if err != context.Canceled || rs != nil || len(d.ids) != 1 {
			t.Errorf("results %v, err %v after %d sends: want none, canceled, 1", rs, err, len(d.ids))
		}
	})
	if tl := (Tally{Pass: 3, Fail: 1, Error: 5}); func() float64 { r, _ := tl.PassRatio(); return r }() != 0.75 {
		t.Errorf("pass ratio of %+v", tl)
	}
}
