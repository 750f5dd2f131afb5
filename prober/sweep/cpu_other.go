//go:build !unix

package sweep

import "time"

// processCPU is not available on this platform: the CPU check is
// not-recorded.
func processCPU() (time.Duration, bool) { return 0, false }
