package bench

import (
	"os/exec"
	"runtime"
	"slices"
)

// realtimePriority is the SCHED_FIFO priority --realtime gives the
// benchmark's processes (the lowest real-time one: above every normal
// process, below the kernel's own real-time threads).
const realtimePriority = "1"

// realtime decides whether the children run under `chrt -f 1`; the note
// says why not when it was asked for and is not possible. It needs the
// children pinned: a SCHED_FIFO thread is not time-sliced against threads
// of its priority, so real-time processes free to take every CPU could
// starve the machine.
func realtime(want bool, p Placement) (ok bool, note string) {
	switch {
	case !want:
		return false, ""
	case runtime.GOOS != "linux":
		return false, "--realtime needs Linux"
	case !p.Pinned:
		return false, "--realtime needs the processes pinned"
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

// env is the children's environment: env, plus GOMAXPROCS=1 when they run
// real-time. Go already picks 1 on one pinned CPU, but a GOMAXPROCS of 2
// set outside would have two SCHED_FIFO threads of one process on one CPU,
// one spinning for work the other cannot run to give it (seen once: a
// sweep spinning at 95 % of its core for minutes).
func (p Placement) env(env []string) []string {
	if !p.Realtime {
		return env
	}
	return append(slices.Clip(env), "GOMAXPROCS=1")
}
