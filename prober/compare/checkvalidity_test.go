package compare

import (
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/prober/slo"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// TestCheckSLOInvalidStep: an invalid step is named, and neither its
// passing nor its failing SLO line decides the outcome; the valid steps
// do; no valid step is inconclusive.
func TestCheckSLOInvalidStep(t *testing.T) {
	s := slo.SLO{TTFT: 100 * time.Millisecond}
	step := func(label string, p99 float64, valid bool) Step {
		v := &sweep.Validity{Valid: true}
		if !valid {
			v = &sweep.Validity{Flags: []string{sweep.FlagClientSaturated}, Reasons: []string{"send lag p99 40 ms above 10 ms"}}
		}
		return Step{Label: label, Round: 1, Completed: 200, Validity: v,
			Percentiles: map[string]map[float64]float64{MetricTTFT: {99: p99}}}
	}
	f := func(name, want string, steps ...Step) {
		t.Helper()
		c := CheckSLO(&Evidence{Name: name, Steps: steps}, s)
		if c.Outcome != want {
			t.Errorf("%s: outcome %s, want %s (%s)", name, c.Outcome, want, c.OutcomeReason)
		}
		for i, st := range c.Steps {
			if (len(st.Invalid) > 0) == steps[i].Validity.Valid {
				t.Errorf("%s: step %s invalid %q, valid %v", name, st.Label, st.Invalid, steps[i].Validity.Valid)
			}
		}
		if want == OutcomeInconclusive && !strings.HasPrefix(c.OutcomeReason, "no valid step: ") {
			t.Errorf("%s: reason %q", name, c.OutcomeReason)
		}
	}
	f("only step invalid, passing", OutcomeInconclusive, step("rate=283", 50, false))
	f("every step invalid", OutcomeInconclusive, step("rate=238", 50, false), step("rate=337", 500, false))
	f("valid pass, invalid fail", OutcomePass, step("rate=50", 50, true), step("rate=337", 500, false))
	f("valid fail, invalid pass", OutcomeFail, step("rate=50", 500, true), step("rate=100", 50, false))
}
