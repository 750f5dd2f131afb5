package web

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind
// (test servers, idle connections).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
