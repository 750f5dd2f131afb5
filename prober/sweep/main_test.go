package sweep

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a sweep leaves a goroutine behind
// (schedulers, recorders, request goroutines, idle connections).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
