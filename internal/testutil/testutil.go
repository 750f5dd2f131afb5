// Package testutil holds the helpers that tests of several packages share:
// a free loopback address, a buffer safe for concurrent writers and readers,
// and waiting on observable state (never on a fixed sleep). It is imported
// only by _test.go files.
package testutil

import (
	"bytes"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/prober/proccpu"
)

// DefaultWait is how long Eventually waits before failing the test: long
// enough for a loaded 2-core machine, short enough to fail a broken test.
const DefaultWait = 20 * time.Second

// FreeAddr returns a loopback "127.0.0.1:port" that was free a moment ago.
// Prefer passing a listener to the code under test where it accepts one;
// use this only for programs that must bind the address themselves.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l := Listen(t)
	defer l.Close() // at once: the program under test binds the port
	return l.Addr().String()
}

// Listen opens a loopback listener on a free port, closed when the test
// ends. Hand it to the server under test instead of a FreeAddr, so no other
// process can take the port in between.
func Listen(t testing.TB) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// SyncBuffer is a bytes.Buffer that is safe to write from one goroutine (a
// logger, a subprocess) while another reads it. The zero value is ready.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns a copy of everything written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Len returns the number of bytes written so far.
func (s *SyncBuffer) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Len()
}

// Eventually polls cond every 5 ms until it is true, failing the test with
// "timed out waiting for <what>" after DefaultWait.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	EventuallyWithin(t, DefaultWait, what, cond)
}

// EventuallyWithin is Eventually with its own limit.
func EventuallyWithin(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ProcessCPU returns the CPU time (user + system) the test process has used
// so far (0 where getrusage is unavailable). Benchmarks on a shared machine
// report CPU per operation from it: steadier than wall time when other
// processes compete for the cores.
func ProcessCPU() time.Duration {
	cpu, _ := proccpu.Used()
	return cpu
}

// Slow skips t unless the tests are built with -tags slow. It marks the
// few tests that take ten seconds or more each (a sweep to its knee, a
// Monte Carlo error rate, runs in a row on one server), so that the
// README's `go test ./...` stays within minutes on a 2-core host; `make
// test-slow` (.ci/slow.sh) runs them, and .ci/run runs them twice: in
// that script and in the race step (-tags slow). Call it first in the
// test.
func Slow(t testing.TB) {
	t.Helper()
	if !SlowEnabled {
		t.Skip("a slow test: run it with -tags slow (make test-slow)")
	}
}
