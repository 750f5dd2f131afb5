//go:build linux

package sweep

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// readHostCPU reads hostCPU now; ok is false where /proc/stat is unreadable.
func readHostCPU() hostCPU {
	c := hostCPU{at: time.Now()}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return c
	}
	c.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return c
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return c
	}
	var busy int64
	for i, x := range f[1:] {
		if i == 3 || i == 4 || i >= 8 { // idle, iowait; guest time is already in user
			continue
		}
		n, err := strconv.ParseInt(x, 10, 64)
		if err != nil {
			return c
		}
		busy += n
	}
	c.busy = time.Duration(busy) * (time.Second / 100) // USER_HZ is 100 on Linux
	c.ok = true
	return c
}
