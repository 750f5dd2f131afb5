//go:build !unix

package bench

import "time"

// selfCPU is not available without getrusage.
func selfCPU() (time.Duration, bool) { return 0, false }
