package endpoint

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind
// (the builder of a session's next turn, test servers, idle connections).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
