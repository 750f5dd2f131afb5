//go:build !unix

package proccpu

import "time"

// Used returns false: getrusage is unavailable on this platform.
func Used() (time.Duration, bool) { return 0, false }
