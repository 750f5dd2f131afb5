package report

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// ProgressInterval is the longest a plain (non-terminal) progress reporter
// stays silent while requests complete.
const ProgressInterval = 5 * time.Second

// Progress reports how far a step has come: a progress bar
// (schollz/progressbar) when its writer is a terminal, else plain lines at
// every 10 % and at least every ProgressInterval while work completes, and a
// last line on Finish. It is safe for concurrent use.
type Progress struct {
	mu       sync.Mutex
	w        io.Writer
	bar      *progressbar.ProgressBar
	total    int
	desc     string
	done     int
	start    time.Time
	last     time.Time
	decile   int
	now      func() time.Time
	finished bool
	// pending counts units not yet handed to the bar, which is redrawn at
	// most every barInterval.
	pending int
}

// barInterval is the shortest time between two redraws of a terminal bar.
const barInterval = 100 * time.Millisecond

// NewProgress returns a progress reporter for total units (requests) of
// work described by desc. total <= 0 means unknown (a duration-bound step):
// a spinner on a terminal, counts without a percentage otherwise. w is a
// terminal when it has an Fd method (an *os.File) whose descriptor
// golang.org/x/term says is one.
func NewProgress(w io.Writer, total int, desc string) *Progress {
	return newProgress(w, total, desc, isTerminal(w), time.Now)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}

func newProgress(w io.Writer, total int, desc string, tty bool, now func() time.Time) *Progress {
	p := &Progress{w: w, total: total, desc: desc, now: now, start: now()}
	p.last = p.start
	if tty {
		limit := int64(total)
		if total <= 0 {
			limit = -1
		}
		p.bar = progressbar.NewOptions64(limit,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(desc),
			progressbar.OptionShowCount(),
			progressbar.OptionSetWidth(30),
			// Redraws are throttled here (barInterval), not in the bar, so
			// that Finish can draw the final count of an interrupted step.
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionSetPredictTime(total > 0),
			progressbar.OptionSpinnerType(14),
			// No spinner goroutine: the bar redraws on Add only, so nothing
			// outlives Finish.
			progressbar.OptionSetSpinnerChangeInterval(0),
			progressbar.OptionSetRenderBlankState(true),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
		)
	}
	return p
}

// Add records n more units done.
func (p *Progress) Add(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished || n <= 0 {
		return
	}
	p.done += n
	now := p.now()
	if p.bar != nil {
		p.pending += n
		if now.Sub(p.last) >= barInterval || (p.total > 0 && p.done >= p.total) {
			p.flushBar(now)
		}
		return
	}
	emit := now.Sub(p.last) >= ProgressInterval
	if p.total > 0 {
		d := min(p.done*10/p.total, 10)
		if d > p.decile {
			p.decile = d
			emit = emit || d < 10 // the 100 % line comes from Finish
		}
	}
	if emit {
		p.last = now
		p.line(now, "")
	}
}

// flushBar hands pending units to the bar, which redraws.
func (p *Progress) flushBar(now time.Time) {
	if p.pending > 0 {
		_ = p.bar.Add(p.pending)
		p.pending = 0
	}
	p.last = now
}

// line writes one plain progress line.
func (p *Progress) line(now time.Time, suffix string) {
	el := now.Sub(p.start).Round(100 * time.Millisecond)
	if p.total > 0 {
		fmt.Fprintf(p.w, "%s: %d/%d (%d%%) %s elapsed%s\n", p.desc, p.done, p.total, p.done*100/p.total, el, suffix)
		return
	}
	fmt.Fprintf(p.w, "%s: %d done, %s elapsed%s\n", p.desc, p.done, el, suffix)
}

// Finish ends the report: the bar is completed (or left where it stopped,
// for an interrupted step) and a newline written; in plain mode a last line
// is written. Later calls and Adds do nothing.
func (p *Progress) Finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return
	}
	p.finished = true
	if p.bar != nil {
		// A bar that reached its total has already completed (and written
		// its newline); Exit leaves any other where it stopped and writes
		// the newline through OnCompletion.
		p.flushBar(p.now())
		if !p.bar.IsFinished() {
			_ = p.bar.Exit()
		}
		return
	}
	p.line(p.now(), ", finished")
}
