//go:build !unix

package testutil

import "time"

// ProcessCPU returns 0: getrusage is unavailable here.
func ProcessCPU() time.Duration { return 0 }
