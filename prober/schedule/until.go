package schedule

import (
	"context"
	"time"
)

// SleepUntil waits until at on the monotonic clock, as the open loop waits
// for an arrival (a Go timer, then clock_nanosleep for the last 2 ms on
// Linux), and reports false when ctx ended first. It is for callers that
// schedule a send of their own at an absolute time, such as a multi-turn
// session's next turn after its think time.
func SleepUntil(ctx context.Context, at time.Time) bool {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return sleepUntil(ctx, t, at, preciseSleepSupported)
}
