package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/go-kit/log"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// TestSweepObserver drives the sweep command's observer through a step:
// the progress lines name the step (or the Label's text) and count its
// requests, the final table follows a blank line, and without W there is
// no progress at all.
func TestSweepObserver(t *testing.T) {
	run := func(o *SweepObserver) {
		t.Helper()
		st := &sweep.Step{Label: "4 req/s"}
		o.StepStarted(st, 2)
		o.RequestDone(st, &prober.Record{})
		o.RequestDone(st, &prober.Record{})
		o.StepDone(st)
		o.RequestDone(st, &prober.Record{}) // after the step: no bar to count on
		o.SweepDone(ladder())
	}
	var progress, table bytes.Buffer
	run(&SweepObserver{StepProgress: StepProgress{W: &progress}, Table: &table, Logger: log.NewNopLogger()})
	if got := progress.String(); !strings.Contains(got, "4 req/s") || !strings.Contains(got, "2/2") {
		t.Errorf("progress %q: want the step's label and 2/2", got)
	}
	if got := table.String(); !strings.HasPrefix(got, "\n") || !strings.Contains(got, "knee: 8 req/s") {
		t.Errorf("table %q: want a blank line, then the table", got)
	}

	progress.Reset()
	table.Reset()
	labelled := &SweepObserver{StepProgress: StepProgress{W: &progress, Label: func(st *sweep.Step) string { return "round 1/2 baseline " + st.Label }},
		Table: &table, Logger: log.NewNopLogger()}
	run(labelled)
	if got := progress.String(); !strings.Contains(got, "round 1/2 baseline 4 req/s") {
		t.Errorf("labelled progress %q: want the Label's text", got)
	}

	progress.Reset()
	table.Reset()
	run(&SweepObserver{Table: &table, Logger: log.NewNopLogger()})
	if progress.Len() != 0 || table.Len() == 0 {
		t.Errorf("without W: progress %q (want none), table %d bytes", progress.String(), table.Len())
	}
}
