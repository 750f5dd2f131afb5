package sweep

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober/answer"
	"github.com/llmprobe/llmprobe/prober/client"
)

// sentIDs fronts the server at upstream and keeps the request id
// (X-Request-Id) of every POST it passes on; onCheck, when set, is called
// before the first answer check (a request id with "-check-") is passed
// on.
type sentIDs struct {
	mu      sync.Mutex
	ids     []string
	onCheck func()
}

func (s *sentIDs) front(t *testing.T, upstream string) string {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	proxy := simtest.Proxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get("X-Request-Id"); r.Method == http.MethodPost && id != "" {
			s.mu.Lock()
			s.ids = append(s.ids, id)
			hook := s.onCheck
			if strings.Contains(id, "-check-") {
				s.onCheck = nil
			} else {
				hook = nil
			}
			s.mu.Unlock()
			if hook != nil {
				hook()
			}
		}
		// simtest.Proxy reads the body whole before passing it on.
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// checks returns the answer checks' request ids, in the order sent.
func (s *sentIDs) checks() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, id := range s.ids {
		if strings.Contains(id, "-check-") {
			out = append(out, id)
		}
	}
	return out
}

// contentKinds are the expectations a wrong answer breaks; stop and length
// judge how a reply ends, not what it says (prober/answer's simulator
// tests).
var contentKinds = map[answer.Kind]bool{answer.KindExact: true, answer.KindContains: true, answer.KindRegex: true,
	answer.KindNumber: true, answer.KindJSONSchema: true}

// answerSweep runs a one-step sweep with the builtin check set over api
// against a simulator whose answers are wrong with probability wrong,
// through a sentIDs front.
func answerSweep(t *testing.T, api string, wrong float64) (*Result, *memSink, *sentIDs) {
	t.Helper()
	sc := simtest.Fast()
	sc.Faults.WrongAnswers = wrong
	upstream, _ := simtest.Start(t, sc)
	sent := &sentIDs{}
	cfg := testConfig(t, sent.front(t, upstream))
	cfg.API = api
	cfg.Rates, cfg.RatesText, cfg.NumPrompts = []float64{40}, "40", 10
	cfg.AnswerChecks = answer.Builtin()
	sink := &memSink{}
	res := runSweep(t, cfg, sink)
	if !res.Complete || len(res.Steps) != 1 {
		t.Fatalf("complete %v (%s), %d steps", res.Complete, res.InterruptedReason, len(res.Steps))
	}
	return res, sink, sent
}

// TestSweepAnswerChecks: a complete sweep with the builtin set sends each
// check once, in order, after its last step, over HTTP; against a correct
// simulator every check passes. No step and no record counts them, and
// result.json holds them (DecodeResult reads them back).
func TestSweepAnswerChecks(t *testing.T) {
	for _, api := range []string{client.APICompletions, client.APIChat} {
		t.Run(api, func(t *testing.T) {
			res, sink, sent := answerSweep(t, api, 0)
			items := answer.Builtin().Items
			a := res.Answers
			if a == nil {
				t.Fatal("no answers in the result")
			}
			if a.Set != answer.BuiltinName || a.Checks != len(items) || a.Pass != len(items) || a.Fail != 0 || a.Error != 0 ||
				a.PassRatio == nil || *a.PassRatio != 1 || len(a.Results) != len(items) {
				t.Fatalf("answers %+v", a)
			}
			ids := sent.checks()
			if len(ids) != len(items) {
				t.Fatalf("the server got %d checks, want %d: %v", len(ids), len(items), ids)
			}
			for i, r := range a.Results {
				if r.Check != items[i].ID || r.Kind != items[i].Kind || r.Outcome != answer.Pass || r.Reply == "" {
					t.Errorf("result %d: %+v, want check %s passing", i, r, items[i].ID)
				}
				want := fmt.Sprintf("-check-%d", i+1)
				if r.RequestID != ids[i] || !strings.HasPrefix(r.RequestID, "llmprobe-") || !strings.HasSuffix(r.RequestID, want) {
					t.Errorf("result %d: request id %q, the server got %q (want ...%s)", i, r.RequestID, ids[i], want)
				}
			}
			// The checks are no step's requests.
			if st := res.Steps[0]; st.Stats.Requests != 10 || len(sink.recs) != 10 {
				t.Errorf("the step counts %d requests, the sink got %d records; want 10 each", st.Stats.Requests, len(sink.recs))
			}
			for _, r := range sink.recs {
				if strings.Contains(r.Record.RequestID, "-check-") {
					t.Errorf("the sink got the check %s", r.Record.RequestID)
				}
			}
			// result.json round-trips them.
			back := roundTrip(t, res)
			want, _ := json.Marshal(res.Answers)
			got, _ := json.Marshal(back.Answers)
			if !bytes.Equal(got, want) {
				t.Errorf("answers read back\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestSweepAnswerChecksWrongAnswers: against a simulator that answers every
// check wrongly (--fault.wrong-answers 1) the content checks fail, each
// with its reply and reason; the stop and length checks still pass.
func TestSweepAnswerChecksWrongAnswers(t *testing.T) {
	res, _, _ := answerSweep(t, client.APIChat, 1)
	a := res.Answers
	fails := 0
	for _, r := range a.Results {
		want := answer.Pass
		if contentKinds[r.Kind] {
			want, fails = answer.Fail, fails+1
		}
		if r.Outcome != want {
			t.Errorf("%s (%s): %s, want %s: %s (reply %q)", r.Check, r.Kind, r.Outcome, want, r.Reason, r.Reply)
		}
		if r.Outcome == answer.Fail && (r.Reason == "" || r.Reply == "") {
			t.Errorf("%s failed without a reason or reply: %+v", r.Check, r)
		}
	}
	if fails == 0 || a.Fail != fails || a.Pass != a.Checks-fails || a.Error != 0 || len(a.Failing()) != fails {
		t.Fatalf("answers: pass %d fail %d error %d of %d, want %d fails", a.Pass, a.Fail, a.Error, a.Checks, fails)
	}
	if want := float64(a.Pass) / float64(a.Checks); a.PassRatio == nil || *a.PassRatio != want {
		t.Errorf("pass ratio %v, want %v", a.PassRatio, want)
	}
}

// cancelAt is an observer that cancels the sweep when its step is done.
type cancelAt struct {
	NopObserver
	cancel context.CancelFunc
}

func (c cancelAt) StepDone(*Step) { c.cancel() }

// TestSweepAnswerChecksNotAfterInterrupted: a sweep interrupted at the end
// of its last step sends no check; one interrupted during its checks is
// incomplete and records none.
func TestSweepAnswerChecksNotAfterInterrupted(t *testing.T) {
	run := func(t *testing.T, cancelOnStep bool) (*Result, *sentIDs) {
		t.Helper()
		upstream, _ := simtest.Start(t, simtest.Fast())
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		sent := &sentIDs{}
		var obs Observer
		if cancelOnStep {
			obs = cancelAt{cancel: cancel}
		} else {
			sent.onCheck = cancel
		}
		cfg := testConfig(t, sent.front(t, upstream))
		cfg.Rates, cfg.RatesText, cfg.NumPrompts = []float64{40}, "40", 10
		cfg.AnswerChecks = answer.Builtin()
		p, err := Prepare(context.Background(), cfg, Options{Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		res, err := p.Run(ctx, nil, obs)
		if err != nil {
			t.Fatal(err)
		}
		if res.Complete || res.Answers != nil {
			t.Fatalf("complete %v, answers %+v: want an incomplete sweep without answers", res.Complete, res.Answers)
		}
		return res, sent
	}
	t.Run("during the last step", func(t *testing.T) {
		res, sent := run(t, true)
		if ids := sent.checks(); len(ids) != 0 {
			t.Errorf("checks sent after an interrupted sweep: %v", ids)
		}
		if !strings.HasPrefix(res.InterruptedReason, "interrupted during step") {
			t.Errorf("interrupted reason %q", res.InterruptedReason)
		}
	})
	t.Run("during the checks", func(t *testing.T) {
		res, sent := run(t, false)
		if ids := sent.checks(); len(ids) != 1 {
			t.Errorf("the server got checks %v after the cancel: want the first only", ids)
		}
		if res.InterruptedReason != "interrupted during the answer checks" {
			t.Errorf("interrupted reason %q", res.InterruptedReason)
		}
	})
}

// TestConfigAnswerChecks: Validate refuses a check set the sweep's API
// cannot send, naming the setting.
func TestConfigAnswerChecks(t *testing.T) {
	msgs, err := answer.Parse("set.jsonl", strings.NewReader(`{"id":"greet","messages":[{"role":"user","content":"Say hi"}],"contains":"hi"}`+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	f := func(api string, set *answer.Set, want string) {
		t.Helper()
		c := testConfig(t, "http://127.0.0.1:1")
		c.API, c.AnswerChecks = api, set
		err := c.Validate()
		if want == "" {
			if err != nil {
				t.Errorf("%s: %v", api, err)
			}
			return
		}
		if got := cliText(err); got != want {
			t.Errorf("%s: %q, want %q", api, got, want)
		}
	}
	f(client.APICompletions, answer.Builtin(), "")
	f(client.APIChat, msgs, "")
	f(client.APIResponses, answer.Builtin(), "")
	f(client.APICompletions, msgs, "AnswerChecks: check greet: messages need a chat target (api: chat or messages), this one is completions")
	f(client.APIEmbeddings, answer.Builtin(), "AnswerChecks: answer checks judge a generated reply: they need --api completions, chat, responses or messages, not embeddings")
	f(client.APIChat, &answer.Set{Name: "empty"}, "AnswerChecks: the set empty has no checks")
}
