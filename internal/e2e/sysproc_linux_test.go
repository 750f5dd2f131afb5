//go:build e2e && linux

package e2e

import "syscall"

// sysProcAttr puts a started process in its own process group (so stop and
// .ci/e2e.sh can signal the whole group) and has the kernel SIGKILL it
// when the thread that started it dies, which covers the test binary dying
// on a -timeout panic or a kill. (Pdeathsig follows the starting OS thread,
// not the process: Go only retires threads of goroutines that exit locked to
// them, which this test does not do.)
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
