package schedule

import (
	"context"
	"time"
)

// SleepUntil waits until at on the monotonic clock, as the open loop waits
// for an arrival (a timerfd in the network poller on Linux, else a Go
// timer), and reports false when ctx ended first. It is for callers that
// schedule a send of their own at an absolute time, such as a multi-turn
// session's next turn after its think time.
func SleepUntil(ctx context.Context, at time.Time) bool {
	if time.Until(at) <= 0 {
		return ctx.Err() == nil
	}
	w := newWaiter()
	defer w.close()
	return w.until(ctx, at)
}
