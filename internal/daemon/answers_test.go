package daemon

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/prober/answer"
)

// answerCounts reads llmprobe_answer_checks_total of the probe "answers"
// from url's /metrics: count by check and result (nil while the daemon
// does not answer yet).
func answerCounts(t *testing.T, url string) map[string]map[answer.Outcome]float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		return nil // not listening yet
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[answer.Outcome]float64{}
	if f := fams["llmprobe_answer_checks_total"]; f != nil {
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if l["probe"] != "answers" {
				continue
			}
			if out[l["check"]] == nil {
				out[l["check"]] = map[answer.Outcome]float64{}
			}
			out[l["check"]][answer.Outcome(l["result"])] = m.GetCounter().GetValue()
		}
	}
	return out
}

// serveAnswers runs `serve --target <simulator with faults> --api chat
// --answer-checks builtin` and waits until every builtin check was judged
// once; it returns the daemon's URL and the counts.
func serveAnswers(t *testing.T, faults simulator.Faults) (string, map[string]map[answer.Outcome]float64) {
	t.Helper()
	cfg := simtest.Fast()
	cfg.Faults = faults
	base, _ := simtest.Start(t, cfg)
	o, url, _ := options(t)
	fixedConfig(t, &o, base, Target{Name: "sim", API: "chat", AnswerChecks: "builtin"})
	start(t, o)
	items := answer.Builtin().Items
	var counts map[string]map[answer.Outcome]float64
	testutil.Eventually(t, "every builtin check judged once", func() bool {
		counts = answerCounts(t, url)
		judged := 0
		for _, it := range items {
			n := 0.0
			for _, v := range counts[it.ID] {
				n += v
			}
			if n >= 1 {
				judged++
			}
		}
		return judged == len(items)
	})
	return url, counts
}

// TestServeAnswerChecks is the first "done when": against a good
// simulator only result="pass" counts; against one with
// --fault.wrong-answers 1 the fail count rises on every check whose answer
// it breaks (every check of the reply's content; stop and length judge how
// a reply ends) and the landing page shows a failing reply.
func TestServeAnswerChecks(t *testing.T) {
	t.Run("good", func(t *testing.T) {
		_, counts := serveAnswers(t, simulator.Faults{})
		for id, c := range counts {
			if c[answer.Pass] < 1 || c[answer.Fail] != 0 || c[answer.Error] != 0 {
				t.Errorf("%s: %v", id, c)
			}
		}
	})
	t.Run("wrong answers", func(t *testing.T) {
		url, counts := serveAnswers(t, simulator.Faults{WrongAnswers: 1})
		for _, it := range answer.Builtin().Items {
			c := counts[it.ID]
			broken := it.Kind != answer.KindStop && it.Kind != answer.KindLength
			if broken && (c[answer.Fail] < 1 || c[answer.Pass] != 0) || !broken && (c[answer.Pass] < 1 || c[answer.Fail] != 0) {
				t.Errorf("%s (%s): %v", it.ID, it.Kind, c)
			}
			if c[answer.Error] != 0 {
				t.Errorf("%s: errors %v", it.ID, c)
			}
		}
		page := get(t, url+"/", `data-check="capital" data-result="fail"`, &testutil.SyncBuffer{})
		if !strings.Contains(page, `&#34;siraP&#34;`) || !strings.Contains(page, `does not contain &#34;Paris&#34;`) {
			t.Errorf("landing page lacks the failing reply:\n%s", page[strings.Index(page, `class="answers"`):])
		}
	})
	for _, tc := range []struct {
		name   string
		faults simulator.Faults
	}{
		{"template broken", simulator.Faults{TemplateBroken: true}},
		{"truncate", simulator.Faults{Truncate: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, counts := serveAnswers(t, tc.faults)
			fails := 0
			for _, c := range counts {
				if c[answer.Fail] > 0 {
					fails++
				}
			}
			if fails < len(counts)/2 {
				t.Errorf("%d of %d checks failed: %v", fails, len(counts), counts)
			}
		})
	}
}
