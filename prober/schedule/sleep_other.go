//go:build !linux

package schedule

import "time"

// preciseSleepSupported is false off Linux: the Go timer does all the
// waiting.
var preciseSleepSupported = false

func preciseSleep(time.Time) {}

// timerfdSupported is false off Linux.
var timerfdSupported = false

// newWaiter returns the Go timer.
func newWaiter() waiter { return newTimerWaiter(false) }
