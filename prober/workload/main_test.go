package workload

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind
// (the dataset sampler's measuring workers, test servers, idle connections).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
