package client

import (
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/sse"
)

func TestLogprobsAdd(t *testing.T) {
	f := func(name string, max int, raws []string, wantTokens int, wantFirst TokenLogprob, wantErr string) {
		t.Helper()
		l := &Logprobs{Max: max}
		for _, r := range raws {
			l.add([]byte(r))
		}
		if len(l.Tokens) != wantTokens || !strings.Contains(l.Err, wantErr) || wantErr == "" && l.Err != "" {
			t.Fatalf("%s: %d tokens, err %q", name, len(l.Tokens), l.Err)
		}
		if wantTokens == 0 {
			return
		}
		got := l.Tokens[0]
		if got.Token != wantFirst.Token || got.Logprob != wantFirst.Logprob || len(got.Top) != len(wantFirst.Top) {
			t.Fatalf("%s: first %+v, want %+v", name, got, wantFirst)
		}
		for i := range got.Top {
			if got.Top[i] != wantFirst.Top[i] {
				t.Fatalf("%s: top %+v, want %+v", name, got.Top, wantFirst.Top)
			}
		}
	}
	// Completions: several tokens per event, top_logprobs maps (unordered:
	// sorted most likely first, two kept).
	f("completions", 0, []string{
		`{"text_offset":[0,2],"token_logprobs":[-0.1,-0.5],"tokens":[" a"," b"],"top_logprobs":[{" a":-0.1," c":-3," d":-1.5},{" b":-0.5," e":-0.6}]}`,
	}, 2, TokenLogprob{Token: " a", Logprob: -0.1, Top: []TopLogprob{{" a", -0.1}, {" d", -1.5}}}, "")
	// Chat: content entries with top_logprobs lists.
	f("chat", 0, []string{
		`{"content":[{"token":"4","logprob":-0.01,"bytes":[52],"top_logprobs":[{"token":"5","logprob":-4.5},{"token":"4","logprob":-0.01}]}]}`,
		`{"content":[{"token":"2","logprob":-0.2,"top_logprobs":[]}]}`,
	}, 2, TokenLogprob{Token: "4", Logprob: -0.01, Top: []TopLogprob{{"4", -0.01}, {"5", -4.5}}}, "")
	// Max bounds the tokens kept.
	f("max", 1, []string{`{"content":[{"token":"a","logprob":-1},{"token":"b","logprob":-1}]}`},
		1, TokenLogprob{Token: "a", Logprob: -1}, "")
	// A malformed value stops collecting and says why.
	f("malformed", 0, []string{`{"content":[{"token":"a","logprob":-1}]}`, `{"tokens":[" a"],"token_logprobs":[]}`, `{"content":[{"token":"b"}]}`},
		1, TokenLogprob{Token: "a", Logprob: -1}, "1 tokens with 0 token_logprobs")
	f("not json", 0, []string{`[1]`}, 0, TokenLogprob{}, "logprobs: json: cannot unmarshal")
}

// TestMeasureCollectsLogprobs: the measurer hands each token event's
// logprobs to Request.CollectLogprobs, and only when it is set.
func TestMeasureCollectsLogprobs(t *testing.T) {
	const tokens = 40
	for _, collect := range []bool{false, true} {
		evs := benchStream(tokens, true) // eventReader consumes it
		p := sse.NewParser(nil, sse.Options{MaxBodyBytes: DefaultMaxBodyBytes})
		p.Reset(&eventReader{evs: evs})
		var rec prober.Record
		m := measurer{rec: &rec, api: &apis[0], t0: time.Now(), maxTokens: tokens}
		var lps *Logprobs
		if collect {
			lps = &Logprobs{Max: 32}
			m.lps = lps
		}
		if class, msg, _ := m.run(p); class != prober.ClassNone || !rec.Logprobs {
			t.Fatalf("%s: %s (logprobs %v)", class, msg, rec.Logprobs)
		}
		if !collect {
			continue
		}
		if len(lps.Tokens) != 32 || lps.Err != "" || lps.Tokens[31].Token != " token31" || len(lps.Tokens[0].Top) != 2 ||
			lps.Tokens[0].Top[1] != (TopLogprob{" alt1", -1.2345678}) {
			t.Errorf("collected %d tokens, err %q, first %+v", len(lps.Tokens), lps.Err, lps.Tokens[0])
		}
	}
}
