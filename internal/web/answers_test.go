package web

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmprobe/llmprobe/prober/answer"
	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/manager"
)

// TestLandingAnswers: the landing page shows the last result of each
// answer check of a target, with its reply (escaped, cut at maxShownReply)
// and why it failed; a removed probe's checks go away.
func TestLandingAnswers(t *testing.T) {
	w := NewWindow()
	now := time.Now()
	w.AnswerChecked("sim", "answers", answer.Result{Check: "capital", Kind: answer.KindContains, Outcome: answer.Pass,
		Reply: "Paris", Time: now.Add(-10 * time.Minute)})
	w.AnswerChecked("sim", "answers", answer.Result{Check: "capital", Kind: answer.KindContains, Outcome: answer.Fail,
		Reply: "<|im_start|>siraP", Reason: `reply "siraP" does not contain "Paris"`, Time: now.Add(-time.Minute),
		Logprobs: []client.TokenLogprob{{Token: "x"}}})
	w.AnswerChecked("sim", "answers", answer.Result{Check: "long", Kind: answer.KindExact, Outcome: answer.Pass,
		Reply: strings.Repeat("é", 300), Time: now})
	w.AnswerChecked("sim", "other", answer.Result{Check: "x", Outcome: answer.Error, Reason: "connect: refused", Time: now})
	ts := fixedStatus{{Name: "sim", BaseURL: "http://sim", API: "chat", Probes: []manager.ProbeStatus{{Name: "answers"}}}}
	h := NewHandler(Options{Gatherer: prometheus.NewRegistry(), Status: ts, Window: w})
	code, body := do(t, h, "GET", "/")
	if code != 200 {
		t.Fatalf("GET /: %d", code)
	}
	for _, want := range []string{
		`<tr class="answer" data-check="capital" data-result="fail">`,
		`&lt;|im_start|&gt;siraP`,
		`does not contain &#34;Paris&#34;`,
		`data-check="long" data-result="pass"`,
		`data-check="x" data-result="error"`, `connect: refused`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("landing page lacks %q", want)
		}
	}
	rows := w.Answers("sim")
	if len(rows) != 3 || rows[0].Check != "capital" || rows[1].Check != "long" || rows[2].Probe != "other" {
		t.Fatalf("rows %+v", rows)
	}
	if !rows[1].Cut || len(rows[1].Reply) > maxShownReply {
		t.Errorf("long reply not cut: %d bytes", len(rows[1].Reply))
	}
	w.DeleteProbe("sim", "other")
	if rows := w.Answers("sim"); len(rows) != 2 {
		t.Errorf("after DeleteProbe: %+v", rows)
	}
	w.DeleteTarget("sim")
	if rows := w.Answers("sim"); len(rows) != 0 {
		t.Errorf("after DeleteTarget: %+v", rows)
	}
}
