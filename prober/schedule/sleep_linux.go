//go:build linux

package schedule

import (
	"errors"
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
	var now unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &now); err != nil {
		time.Sleep(d)
		return
	}
	deadline := unix.NsecToTimespec(now.Nano() + int64(d))
	for {
		err := unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &deadline, nil)
		if !errors.Is(err, unix.EINTR) {
			return
		}
	}
}
