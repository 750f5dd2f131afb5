package main

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no command leaves goroutines behind after it returned
// (graceful shutdown of serve, sweep and simulate).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
