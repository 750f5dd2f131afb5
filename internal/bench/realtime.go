package bench

import (
	"os/exec"
	"runtime"
)

// realtimePriority is the SCHED_FIFO priority --realtime gives the
// benchmark's processes (the lowest real-time one: above every normal
// process, below the kernel's own real-time threads).
const realtimePriority = "1"

// realtime decides whether the children run under `chrt -f 1`; the note
// says why not when it was asked for and is not possible.
func realtime(want bool) (ok bool, note string) {
	switch {
	case !want:
		return false, ""
	case runtime.GOOS != "linux":
		return false, "--realtime needs Linux"
	}
	if _, err := exec.LookPath("chrt"); err != nil {
		return false, "--realtime: chrt not found"
	}
	return true, ""
}

// argv is the command line of a child: exe and args, under taskset -c cpu
// when cpu is not empty, under chrt -f when the placement is real-time.
func (p Placement) argv(cpu, exe string, args ...string) []string {
	argv := append([]string{exe}, args...)
	if cpu != "" {
		argv = append([]string{"taskset", "-c", cpu}, argv...)
	}
	if p.Realtime {
		argv = append([]string{"chrt", "-f", realtimePriority}, argv...)
	}
	return argv
}
