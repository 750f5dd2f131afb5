package report

import (
	"fmt"
	"io"
	"sync"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// StepProgress is a sweep.Observer that draws a Progress per step on W
// (nil: none), described by Label (nil: the step's label). The sweep
// command's SweepObserver embeds it; compare uses it per round. It is safe
// for concurrent use.
type StepProgress struct {
	sweep.NopObserver
	W     io.Writer
	Label func(*sweep.Step) string

	mu   sync.Mutex
	prog *Progress
}

// StepStarted implements sweep.Observer.
func (o *StepProgress) StepStarted(st *sweep.Step, planned int) {
	if o.W == nil {
		return
	}
	desc := st.Label
	if o.Label != nil {
		desc = o.Label(st)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.prog = NewProgress(o.W, planned, desc)
}

// RequestDone implements sweep.Observer.
func (o *StepProgress) RequestDone(*sweep.Step, *prober.Record) {
	o.mu.Lock()
	p := o.prog
	o.mu.Unlock()
	if p != nil {
		p.Add(1)
	}
}

// StepDone implements sweep.Observer.
func (o *StepProgress) StepDone(*sweep.Step) {
	o.mu.Lock()
	p := o.prog
	o.prog = nil
	o.mu.Unlock()
	if p != nil {
		p.Finish()
	}
}

// SweepObserver is `llmprobe sweep`'s observer: a progress bar per step
// on W (nil: none) and, when the sweep is done, the final table
// (WriteTable) on Table after a blank line; a table that cannot be written
// is logged on Logger.
type SweepObserver struct {
	StepProgress
	Table  io.Writer
	Logger log.Logger
}

// SweepDone implements sweep.Observer: the final table.
func (o *SweepObserver) SweepDone(res *sweep.Result) {
	fmt.Fprintln(o.Table)
	if err := WriteTable(o.Table, res); err != nil {
		level.Error(o.Logger).Log("msg", "cannot print the result table", "err", err)
	}
}
