//go:build e2e && unix && !linux

package e2e

import "syscall"

// sysProcAttr puts a started process in its own process group. Without
// Linux's Pdeathsig, processes left by a -timeout panic are killed by
// .ci/e2e.sh from the PID file only.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
