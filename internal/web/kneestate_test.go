package web

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmprobe/llmprobe/collector/probemetrics"
	"github.com/llmprobe/llmprobe/internal/sweepd"
	"github.com/llmprobe/llmprobe/prober/capacity"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// TestKneeVocabulary holds the knee's state words equal on every surface
// (issue 39: one sweep read "undecided" in the recent sweeps, "below the
// lowest level" in the summary and decided 0 in /metrics). Each state is
// decided by sweep.LadderKnee from step outcomes, then read from
// result.json's knee.state, the sweep API's knee_state, the state label
// of llmprobe_sweep_knee_state that is 1 (and llmprobe_sweep_knee_decided),
// and the landing page's summary and recent-sweeps cells; each must say
// the same word, and the words are capacity.States.
func TestKneeVocabulary(t *testing.T) {
	ok := func(l float64) sweep.StepOutcome {
		return sweep.StepOutcome{Level: l, Offered: l, Goodput: l, Throughput: l, SLOHeld: true, Valid: true}
	}
	fail := func(l float64) sweep.StepOutcome { o := ok(l); o.SLOHeld = false; return o }
	invalid := func(l float64) sweep.StepOutcome {
		o := ok(l)
		o.Valid, o.Invalid = false, []string{"client-saturated: the client fell behind"}
		return o
	}
	if strings.Join(sweep.KneeStates, ",") != strings.Join(capacity.States, ",") {
		t.Fatalf("sweep.KneeStates %v, capacity.States %v", sweep.KneeStates, capacity.States)
	}
	for _, tc := range []struct {
		name, want  string
		decided     float64
		in          []sweep.StepOutcome
		wantUnknown string // the undecided reason, when undecided
	}{
		{"bracketed", capacity.StateDecided, 1, []sweep.StepOutcome{ok(2), ok(4), fail(8)}, ""},
		{"a knee of 0: the lowest level failed validly", capacity.StateDecided, 1, []sweep.StepOutcome{fail(2), fail(4)}, ""},
		{"a lower bound", capacity.StateBound, 1, []sweep.StepOutcome{ok(2), ok(4), invalid(8)}, ""},
		{"failing above invalid levels (issue 39)", capacity.StateUndecided, 0,
			[]sweep.StepOutcome{invalid(2), invalid(4), invalid(6), invalid(8), fail(10), fail(12)}, sweep.UndecidedNoEvidenceBelow},
		{"no valid level", capacity.StateUndecided, 0, []sweep.StepOutcome{invalid(2), invalid(4)}, sweep.UndecidedNoValidLevel},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := &sweep.Result{Knee: sweep.LadderKnee(tc.in, sweep.DefaultGoodputRatio), KneeUnit: "req/s", Complete: true}
			res.Fingerprint.End = time.Unix(1700000000, 0)

			// result.json
			b, err := json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			var rj struct {
				Knee struct {
					State     string `json:"state"`
					Undecided string `json:"undecided"`
				} `json:"knee"`
			}
			if err := json.Unmarshal(b, &rj); err != nil {
				t.Fatal(err)
			}
			// The sweep API.
			sum := sweepd.Summarize(res)
			// /metrics
			reg := prometheus.NewPedanticRegistry()
			sw := probemetrics.NewSweeps(reg)
			l := sweepd.LastOf(res)
			sw.SweepFinished("t", "s", capacity.ResultSuccess, time.Minute, &l)
			metricState, decided, reason := "", -1.0, ""
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			for _, mf := range mfs {
				for _, m := range mf.GetMetric() {
					labels := map[string]string{}
					for _, lp := range m.GetLabel() {
						labels[lp.GetName()] = lp.GetValue()
					}
					switch mf.GetName() {
					case probemetrics.NameSweepKneeState:
						if m.GetGauge().GetValue() == 1 {
							metricState = labels["state"]
						}
					case probemetrics.NameSweepKneeDecided:
						decided = m.GetGauge().GetValue()
					case probemetrics.NameSweepKneeUndecidedInfo:
						reason = labels["reason"]
					}
				}
			}
			// The landing page: the summary's knee and the recent sweep's.
			summary := lastKnee(l)
			row := sweepRowOf(sweepd.Status{ID: "x", Target: "t", Name: "s", Status: sweepd.StatusDone, Result: sum}).Knee

			for surface, got := range map[string]string{
				"result.json knee.state": rj.Knee.State, "sweep API knee_state": sum.KneeState,
				"llmprobe_sweep_knee_state": metricState,
				"landing summary":           firstWord(summary), "landing recent sweeps": firstWord(row),
			} {
				if got != tc.want {
					t.Errorf("%s says %q, want %q (reason %q)", surface, got, tc.want, res.Knee.Reason)
				}
			}
			if decided != tc.decided {
				t.Errorf("llmprobe_sweep_knee_decided %v, want %v", decided, tc.decided)
			}
			if rj.Knee.Undecided != tc.wantUnknown || sum.KneeUndecided != tc.wantUnknown || reason != tc.wantUnknown {
				t.Errorf("undecided reason: result.json %q, API %q, /metrics %q; want %q", rj.Knee.Undecided, sum.KneeUndecided, reason, tc.wantUnknown)
			}
			if tc.want == capacity.StateUndecided && (strings.Contains(summary, "0 req/s") || strings.Contains(row, "0 req/s")) {
				t.Errorf("an undecided knee shown as a figure: %q, %q", summary, row)
			}
		})
	}
}

// firstWord is a knee cell's state word: "decided: 4 req/s" → "decided".
func firstWord(s string) string {
	w, _, _ := strings.Cut(s, ":")
	return w
}

// TestKneeVocabularyDocs: the docs name every knee state and every reason
// of an undecided knee in the same words (docs/sweep-api.md for the API and
// /metrics, docs/metrics.md, docs/sweep.md for result.json).
func TestKneeVocabularyDocs(t *testing.T) {
	words := append(append([]string{}, capacity.States...), sweep.UndecidedReasons...)
	for _, doc := range []string{"sweep-api.md", "metrics.md", "sweep.md"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "docs", doc))
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range words {
			if !strings.Contains(string(b), "`"+w+"`") {
				t.Errorf("docs/%s does not name the knee word `%s`", doc, w)
			}
		}
	}
}
