package rundir

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a sweep leaves a goroutine behind
// (the sweep's schedulers, recorders, request goroutines, idle connections).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
