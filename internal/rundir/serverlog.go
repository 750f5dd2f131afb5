package rundir

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/llmprobe/llmprobe/prober/capfile"
	"github.com/llmprobe/llmprobe/prober/redact"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// ServerLogFile is the run directory's copy of the server's log lines
// written during each step (Options.ServerLog).
const ServerLogFile = "server.log"

// MaxServerLogBytes caps server.log; the lines of later steps are then left
// out and the file says so.
const MaxServerLogBytes = 64 << 20

// serverLog follows a sweep (wrapping the caller's observer) and copies the
// bytes the server appended to its log file while each step's measured load
// ran: the file's size is read when a step starts and again when it is
// done. A log that shrank (rotated) is read from its start.
type serverLog struct {
	sweep.Observer
	path string
	red  *redact.Redactor // the sweep's secrets, removed from the copy

	mu    sync.Mutex
	start int64
	buf   bytes.Buffer
	full  bool
}

func newServerLog(path string, inner sweep.Observer, red *redact.Redactor) *serverLog {
	if inner == nil {
		inner = sweep.NopObserver{}
	}
	return &serverLog{Observer: inner, path: path, red: red}
}

// StepStarted implements sweep.Observer.
func (l *serverLog) StepStarted(st *sweep.Step, planned int) {
	l.mu.Lock()
	l.start = -1
	if fi, err := os.Stat(l.path); err == nil {
		l.start = fi.Size()
	} else {
		fmt.Fprintf(&l.buf, "### step %d %s: %s not readable at the start: %v\n", st.Index, st.Label, l.path, err)
	}
	l.mu.Unlock()
	l.Observer.StepStarted(st, planned)
}

// RequestDone implements sweep.Observer.
func (l *serverLog) RequestDone(st *sweep.Step, r *prober.Record) { l.Observer.RequestDone(st, r) }

// StepDone implements sweep.Observer: the step's lines are copied.
func (l *serverLog) StepDone(st *sweep.Step) {
	l.mu.Lock()
	l.copyStep(st)
	l.mu.Unlock()
	l.Observer.StepDone(st)
}

func (l *serverLog) copyStep(st *sweep.Step) {
	if l.start < 0 || l.full {
		return
	}
	f, err := capfile.OpenRegular(l.path) // a FIFO would block the step
	if err != nil {
		fmt.Fprintf(&l.buf, "### step %d %s: %v\n", st.Index, st.Label, err)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return
	}
	from, to := l.start, fi.Size()
	if to < from {
		from = 0 // rotated or truncated during the step
	}
	fmt.Fprintf(&l.buf, "### step %d %s: bytes %d to %d of %s\n", st.Index, st.Label, from, to, l.path)
	n := to - from
	if left := int64(MaxServerLogBytes - l.buf.Len()); n > left {
		n, l.full = max(left, 0), true
	}
	if _, err := io.Copy(&l.buf, io.NewSectionReader(f, from, n)); err != nil {
		fmt.Fprintf(&l.buf, "\n### read error: %v\n", err)
	}
	if l.buf.Len() > 0 && l.buf.Bytes()[l.buf.Len()-1] != '\n' {
		l.buf.WriteByte('\n')
	}
	if l.full {
		fmt.Fprintf(&l.buf, "### server.log reached %d bytes: later lines left out\n", MaxServerLogBytes)
	}
}

// write writes server.log into run, without the sweep's secrets (a server
// that logs request headers must not put them into the run directory).
func (l *serverLog) write(run *artifacts.Run) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return run.WriteFile(ServerLogFile, l.red.RedactBytes(l.buf.Bytes()))
}
