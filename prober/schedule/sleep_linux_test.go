//go:build linux

package schedule

import (
	"context"
	"testing"
	"time"
)

// TestFDWaiter checks the timerfd waiter: never early on the monotonic
// clock, at once for a past time, and interrupted by its context.
func TestFDWaiter(t *testing.T) {
	w, err := newFDWaiter()
	if err != nil {
		t.Skipf("no timerfd here: %v", err)
	}
	defer w.close()
	ctx := context.Background()
	for i := range 20 {
		at := time.Now().Add(time.Duration(i%5) * 300 * time.Microsecond)
		if !w.until(ctx, at) {
			t.Fatal("until reported a canceled context")
		}
		if now := time.Now(); now.Before(at) {
			t.Fatalf("woke %v early", at.Sub(now))
		}
	}
	if !w.until(ctx, time.Now().Add(-time.Second)) {
		t.Fatal("a past time: until reported a canceled context")
	}

	cctx, cancel := context.WithCancel(ctx)
	done := make(chan bool)
	go func() { done <- w.until(cctx, time.Now().Add(time.Hour)) }()
	cancel()
	if <-done {
		t.Fatal("until reported true for a canceled wait")
	}
	// A canceled context is seen before waiting, too.
	if w.until(cctx, time.Now().Add(time.Hour)) {
		t.Fatal("until reported true for an already canceled context")
	}
}

// TestNewWaiterFallback: without the timerfd the scheduler waits with the
// Go timer (and the clock_nanosleep tail).
func TestNewWaiterFallback(t *testing.T) {
	defer func(v bool) { timerfdSupported = v }(timerfdSupported)
	timerfdSupported = false
	w := newWaiter()
	defer w.close()
	if _, ok := w.(*timerWaiter); !ok {
		t.Fatalf("newWaiter without timerfd = %T, want *timerWaiter", w)
	}
	at := time.Now().Add(2 * time.Millisecond)
	if !w.until(context.Background(), at) || time.Now().Before(at) {
		t.Fatal("the fallback woke early or reported a canceled context")
	}
}
