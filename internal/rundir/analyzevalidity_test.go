package rundir

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/report"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober/compare"
	"github.com/llmprobe/llmprobe/prober/slo"
)

// TestAnalyzeHonoursRecordedValidity sweeps a simulator that answers half
// of the requests with 500: every step records valid false (errors), and
// analyze of the run directory, whose SLO every successful request meets,
// is inconclusive (exit 3) naming each invalid step, never pass.
func TestAnalyzeHonoursRecordedValidity(t *testing.T) {
	sc := simtest.Fast()
	sc.Faults.HTTP500 = 0.5
	url, _ := simtest.Start(t, sc)
	cfg := testConfig(t, url)
	cfg.SLO = slo.SLO{TTFT: 30 * time.Second}
	out := mustRun(t, cfg, testOptions(t))
	for _, st := range out.Result.Steps {
		if st.Validity.Valid {
			t.Fatalf("step %d valid with %d of %d failed: the test needs invalid steps", st.Index, st.Stats.Failed, st.Stats.Requests)
		}
	}
	a, err := Analyze([]string{out.Dir}, AnalyzeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := a.Inputs[0]
	if c.Outcome != compare.OutcomeInconclusive || a.ExitCode() != compare.ExitInconclusive {
		t.Fatalf("outcome %s (exit %d), want inconclusive (3): %+v", c.Outcome, a.ExitCode(), c)
	}
	for _, st := range c.Steps {
		// Other flags may join on a busy host (client-saturated); the
		// errors flag is always there.
		if !slices.ContainsFunc(st.Invalid, func(x string) bool { return strings.HasPrefix(x, "errors: ") }) {
			t.Errorf("step %s: invalid %q, want the errors flag named", st.Label, st.Invalid)
		}
		for _, r := range st.SLO {
			if r.Status != compare.StatusOK {
				t.Errorf("step %s: %s %s: the test needs SLO lines that pass", st.Label, r.Metric, r.Status)
			}
		}
	}
	var text bytes.Buffer
	if err := report.WriteAnalyze(&text, "text", a); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"invalid        errors: ", "(decides nothing)", "outcome: inconclusive (no valid step: rate=20, rate=40 did not pass"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
}
