//go:build unix

package testutil

import (
	"syscall"
	"time"
)

// ProcessCPU returns the CPU time (user + system) the test process has used
// so far (0 where getrusage is unavailable). Benchmarks on a shared machine
// report CPU per operation from it: steadier than wall time when other
// processes compete for the cores.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
