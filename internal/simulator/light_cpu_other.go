//go:build !unix

package simulator

import "time"

// processCPU is not available without getrusage.
func processCPU() (time.Duration, bool) { return 0, false }
