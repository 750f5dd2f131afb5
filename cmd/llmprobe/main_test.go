package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"go.uber.org/goleak"
)

// asMainEnv makes the test binary act as the llmprobe command (for tests
// that start llmprobe child processes, such as bench's).
const asMainEnv = "LLMPROBE_TEST_AS_MAIN=1"

// TestMain checks that no command leaves goroutines behind after it returned
// (graceful shutdown of serve, sweep and simulate). With asMainEnv set, the
// binary runs the command of its arguments instead of the tests.
func TestMain(m *testing.M) {
	if os.Getenv("LLMPROBE_TEST_AS_MAIN") == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
		code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	goleak.VerifyTestMain(m)
}
