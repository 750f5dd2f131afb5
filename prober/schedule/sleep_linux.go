//go:build linux

package schedule

import (
	"context"
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// preciseSleepSupported reports whether preciseSleep beats a Go timer here;
// a variable so that the benchmark can compare both.
var preciseSleepSupported = true

// preciseSleep blocks the thread until at with clock_nanosleep on
// CLOCK_MONOTONIC (absolute deadline, restarted on EINTR), the clock Go's
// monotonic readings come from. It is meant for the last couple of
// milliseconds before an arrival: Go's timers wake up to about 1 ms late on
// Linux (the runtime's epoll wait takes a timeout in whole milliseconds),
// clock_nanosleep within the thread's timer slack (50 µs by default).
func preciseSleep(at time.Time) {
	d := time.Until(at)
	if d <= 0 {
		return
	}
	deadline, err := monotonicIn(d)
	if err != nil {
		time.Sleep(d)
		return
	}
	for {
		err := unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &deadline, nil)
		if !errors.Is(err, unix.EINTR) {
			return
		}
	}
}

// monotonicIn is the CLOCK_MONOTONIC reading d from now, an absolute
// deadline for clock_nanosleep and timerfd_settime.
func monotonicIn(d time.Duration) (unix.Timespec, error) {
	var now unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &now); err != nil {
		return now, err
	}
	return unix.NsecToTimespec(now.Nano() + int64(d)), nil
}

// timerfdSupported reports whether newWaiter uses a timerfd; a variable so
// that the benchmark can compare the ways of waiting.
var timerfdSupported = true

// fdWaiter waits for an arrival on a timerfd (CLOCK_MONOTONIC, absolute
// deadline) registered with Go's network poller. The goroutine parks like
// one reading a socket, and the expiry is an epoll event, seen by whichever
// thread polls: at once when the process is idle (epoll_wait returns on the
// event, with no rounding of its timeout to whole milliseconds), and as soon
// as the run queue drains when it is busy — the same promptness as a
// token event. clock_nanosleep instead parks a thread of its own, which
// must then be scheduled by the kernel beside the thread running Go code;
// on a single CPU (taskset, a 1-CPU container) that took up to 5 ms, the
// running thread keeping its slice (measured with perf sched, EEVDF on
// Linux 6.18).
type fdWaiter struct {
	f   *os.File
	fd  int
	buf [8]byte
}

// newFDWaiter opens the timerfd; an error means the caller falls back to
// the Go timer.
func newFDWaiter() (*fdWaiter, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	// A non-blocking descriptor: os.NewFile registers it with the poller.
	return &fdWaiter{f: os.NewFile(uintptr(fd), "timerfd"), fd: fd}, nil
}

func (w *fdWaiter) until(ctx context.Context, at time.Time) bool {
	d := time.Until(at)
	if d <= 0 {
		return ctx.Err() == nil
	}
	deadline, err := monotonicIn(d)
	if err != nil {
		return goTimerUntil(ctx, at)
	}
	spec := unix.ItimerSpec{Value: deadline}
	if err := unix.TimerfdSettime(w.fd, unix.TFD_TIMER_ABSTIME, &spec, nil); err != nil {
		return goTimerUntil(ctx, at)
	}
	// A canceled ctx interrupts the read through a past deadline.
	stop := context.AfterFunc(ctx, func() { _ = w.f.SetReadDeadline(time.Unix(1, 0)) })
	for {
		_, err := w.f.Read(w.buf[:])
		if err == nil || ctx.Err() != nil {
			break
		}
		if !errors.Is(err, unix.EINTR) && !errors.Is(err, unix.EAGAIN) {
			// Not expected of a timerfd; wait the rest with a Go timer.
			stop()
			return goTimerUntil(ctx, at)
		}
	}
	stop()
	return ctx.Err() == nil
}

func (w *fdWaiter) close() { _ = w.f.Close() }

// newWaiter returns the scheduler's way of waiting for arrivals: the
// timerfd where it can be opened (and timerfdSupported), else a Go timer
// with the clock_nanosleep tail.
func newWaiter() waiter {
	if timerfdSupported {
		if w, err := newFDWaiter(); err == nil {
			return w
		}
	}
	return newTimerWaiter(preciseSleepSupported)
}
