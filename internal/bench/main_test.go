package bench

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind
// (the waiter of a started server or bench process, test servers).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
