package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Machine describes the host a benchmark ran on.
type Machine struct {
	CPUModel string `json:"cpu_model"`
	Cores    int    `json:"cores"`
	OS       string `json:"os"`
	Arch     string `json:"arch"`
	Go       string `json:"go"`
	// LoadStart and LoadEnd are the 1-minute load averages when the
	// benchmark started and ended (-1 when unknown).
	LoadStart float64 `json:"load_start"`
	LoadEnd   float64 `json:"load_end"`
	// BusyPct is the share of the machine's CPU time (all cores) that was
	// busy during the benchmark, OthersPct the part of it used by
	// processes other than the benchmark's own (-1 when unknown: no
	// /proc/stat).
	BusyPct   float64 `json:"busy_pct"`
	OthersPct float64 `json:"others_pct"`
}

func machine() Machine {
	m := Machine{CPUModel: "unknown", Cores: runtime.NumCPU(), OS: runtime.GOOS, Arch: runtime.GOARCH,
		Go: runtime.Version(), LoadStart: loadAverage(), LoadEnd: -1}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

// cpuTicks returns the busy and total CPU time of the whole machine from
// /proc/stat (Linux), in clock ticks.
func cpuTicks() (busy, total int64, ok bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0, false
	}
	for i, v := range f[1:] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		if i >= 8 { // guest and guest_nice are already in user and nice
			break
		}
		total += n
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return busy, total, true
}

// loadAverage is the 1-minute load average, -1 when unknown.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}

// Placement says how the benchmark's processes were placed on CPUs.
type Placement struct {
	// Pinned is true when the processes ran under taskset.
	Pinned bool `json:"pinned"`
	// ProberCPU and ServerCPU are the CPU lists given to taskset -c
	// ("" when not pinned).
	ProberCPU string `json:"prober_cpu,omitempty"`
	ServerCPU string `json:"server_cpu,omitempty"`
	// Note says why the processes were not pinned.
	Note string `json:"note,omitempty"`
	// Realtime is true when the processes ran under `chrt -f 1`
	// (SCHED_FIFO, --realtime): other processes on the machine then wait
	// for them, not they for the others; RealtimeNote says why it was
	// asked for and not done.
	Realtime     bool   `json:"realtime,omitempty"`
	RealtimeNote string `json:"realtime_note,omitempty"`
}

func (p Placement) String() string {
	s := fmt.Sprintf("taskset -c %s: llmprobe (sweep, serve); taskset -c %s: simulator", p.ProberCPU, p.ServerCPU)
	if !p.Pinned {
		s = "not pinned (" + p.Note + "): the scheduler placed llmprobe and the simulator"
	}
	switch {
	case p.Realtime:
		s += "; both under chrt -f " + realtimePriority + " (SCHED_FIFO, --realtime)"
	case p.RealtimeNote != "":
		s += "; not real-time (" + p.RealtimeNote + ")"
	}
	return s
}

func placement(pin bool, cores int) Placement {
	switch {
	case !pin:
		return Placement{Note: "--no-pin"}
	case runtime.GOOS != "linux":
		return Placement{Note: "taskset needs Linux"}
	case cores < 2:
		return Placement{Note: "one CPU only"}
	}
	if _, err := exec.LookPath("taskset"); err != nil {
		return Placement{Note: "taskset not found"}
	}
	return Placement{Pinned: true, ProberCPU: "0", ServerCPU: strconv.Itoa(cores - 1)}
}

// child is a process the benchmark started.
type child struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

// start runs argv (Placement.argv), stdout and stderr to logPath.
func start(name string, argv []string, logPath string, env []string) (*child, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		f.Close()
		close(c.done)
	}()
	return c, nil
}

// pid is the process id (taskset and chrt exec the command: same process).
func (c *child) pid() int { return c.cmd.Process.Pid }

// wait waits for the process to end or ctx; on ctx it stops the process.
func (c *child) wait(ctx context.Context) error {
	select {
	case <-c.done:
	case <-ctx.Done():
		c.stop(5 * time.Second)
		return ctx.Err()
	}
	if c.err != nil {
		return fmt.Errorf("%s: %w (see %s)%s", c.name, c.err, c.log, tailOf(c.log))
	}
	return nil
}

// stop sends SIGTERM, then SIGKILL after grace, and waits for the end.
func (c *child) stop(grace time.Duration) {
	select {
	case <-c.done:
		return
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(grace):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

// cpuTime is the process's user + system CPU time so far, from its
// rusage once it ended, else from /proc/<pid>/stat (Linux).
func (c *child) cpuTime() (time.Duration, bool) {
	select {
	case <-c.done:
		if ps := c.cmd.ProcessState; ps != nil {
			return ps.UserTime() + ps.SystemTime(), true
		}
		return 0, false
	default:
	}
	return procCPU(c.pid())
}

// clockTick is USER_HZ, the unit of /proc/<pid>/stat's times (100 on every
// Linux architecture llmprobe builds for).
const clockTick = 100

// procCPU reads utime + stime of pid from /proc (10 ms resolution).
func procCPU(pid int) (time.Duration, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command name is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	// Fields after the name start at field 3 (state); utime is field 14.
	if len(f) < 13 {
		return 0, false
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(ut+st) * time.Second / clockTick, true
}

// procMemory returns VmRSS and VmHWM (peak RSS) of pid in bytes (Linux).
func procMemory(pid int) (rss, peak int64, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, found := strings.Cut(sc.Text(), ":")
		if !found {
			continue
		}
		f := strings.Fields(v)
		if len(f) < 1 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "VmRSS":
			rss = n << 10
		case "VmHWM":
			peak = n << 10
		}
	}
	return rss, peak, rss > 0
}

// tailOf returns the last lines of a log file for an error message.
func tailOf(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return ":\n  " + strings.Join(lines, "\n  ")
}

// freeAddr returns a loopback address with a free port.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	addr := l.Addr().String()
	return addr, l.Close()
}

// waitHTTP polls url until it answers 200, the child ends, or timeout.
func waitHTTP(ctx context.Context, c *child, url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	hc := &http.Client{Timeout: time.Second}
	defer hc.CloseIdleConnections()
	for {
		resp, err := hc.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-c.done:
			return fmt.Errorf("%s exited before serving %s: %v%s", c.name, url, c.err, tailOf(c.log))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return errors.New(c.name + " did not serve " + url + " within " + timeout.String() + tailOf(c.log))
		}
	}
}
