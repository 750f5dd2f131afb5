//go:build unix

// Package proccpu reads the CPU time (user + system) this process has used
// so far: a sweep step's and throughput probe's client CPU, the light
// simulator's stats and the benchmarks' cpu-ns/op. It imports nothing of
// llmprobe.
package proccpu

import (
	"syscall"
	"time"
)

// Used returns the CPU time (user + system) this process has used so far,
// and true; false when getrusage fails.
func Used() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
