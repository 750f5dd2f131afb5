//go:build linux

package bench

// BenchmarkReadLoop measures what reading one token event costs the
// reading process with Go's poller (a goroutine per connection, as
// net/http's client reads a stream) against an epoll loop of its own (one
// thread, level-triggered, one read(2) per ready connection): the evidence
// for or against building the streaming client on its own event loop
// (docs/performance.md). No HTTP: both read raw bytes from the same
// writer, a child process (this test binary re-run) that sends one
// 160-byte event per connection every 5 ms with a write(2) each, so that
// the reading process's getrusage holds only the reader.
//
//	taskset -c 0 go test -run '^$' -bench ReadLoop -benchtime 1x ./internal/bench/

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/llmprobe/llmprobe/internal/testutil"
)

const (
	readLoopConns  = 256
	readLoopGap    = 5 * time.Millisecond
	readLoopFor    = 4 * time.Second
	readLoopEvent  = 160
	readLoopWriter = "LLMPROBE_READLOOP_WRITER"
)

func init() {
	if addr := os.Getenv(readLoopWriter); addr != "" {
		readLoopWrite(addr)
		os.Exit(0)
	}
}

// readLoopWrite is the child: it dials readLoopConns connections to addr
// and writes an event on each every readLoopGap, staggered, for
// readLoopFor, then closes them.
func readLoopWrite(addr string) {
	ev := []byte("data: " + strings.Repeat("x", readLoopEvent-8) + "\n\n")
	var wg sync.WaitGroup
	start := time.Now().Add(200 * time.Millisecond)
	for i := range readLoopConns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			next := start.Add(time.Duration(i) * readLoopGap / readLoopConns)
			for time.Since(start) < readLoopFor {
				time.Sleep(time.Until(next))
				if _, err := c.Write(ev); err != nil {
					return
				}
				next = next.Add(readLoopGap)
			}
		}()
	}
	wg.Wait()
}

func BenchmarkReadLoop(b *testing.B) {
	b.Run("goroutine_per_conn", func(b *testing.B) { benchReadLoop(b, readGoroutines) })
	b.Run("epoll_loop", func(b *testing.B) { benchReadLoop(b, readEpoll) })
}

// benchReadLoop starts the writer, accepts its connections and hands them
// to read, which returns the events and reads it made.
func benchReadLoop(b *testing.B, read func(b *testing.B, conns []*net.TCPConn) (bytes int64)) {
	for b.Loop() {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), readLoopWriter+"="+ln.Addr().String())
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		// The writer gets a CPU of its own where there are two.
		if runtime.NumCPU() >= 2 {
			var set unix.CPUSet
			set.Set(runtime.NumCPU() - 1)
			_ = unix.SchedSetaffinity(cmd.Process.Pid, &set)
		}
		conns := make([]*net.TCPConn, 0, readLoopConns)
		for range readLoopConns {
			c, err := ln.Accept()
			if err != nil {
				b.Fatal(err)
			}
			conns = append(conns, c.(*net.TCPConn))
		}
		ln.Close()
		cpu, sys0 := testutil.ProcessCPU(), readSyscalls()
		t0 := time.Now()
		events := read(b, conns) / readLoopEvent
		wall := time.Since(t0)
		cpuUsed, reads := testutil.ProcessCPU()-cpu, readSyscalls()-sys0
		if err := cmd.Wait(); err != nil {
			b.Fatal(err)
		}
		want := int64(readLoopConns) * int64(readLoopFor/readLoopGap)
		if events < want*9/10 {
			b.Fatalf("%d events, want about %d", events, want)
		}
		b.ReportMetric(float64(cpuUsed.Nanoseconds())/float64(events), "cpu-ns/event")
		b.ReportMetric(float64(reads)/float64(events), "reads/event")
		b.ReportMetric(float64(events)/wall.Seconds(), "events/s")
	}
}

// readGoroutines reads each connection in its own goroutine, as net/http
// reads a response body: Go's poller parks a reader whose read(2) found
// EAGAIN and wakes it on the socket's epoll event.
func readGoroutines(b *testing.B, conns []*net.TCPConn) int64 {
	var total atomic.Int64
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			buf := make([]byte, 4096)
			var n int64
			for {
				k, err := c.Read(buf)
				if k > 0 {
					_ = time.Now() // the event's timestamp
					n += int64(k)
				}
				if err != nil {
					break
				}
			}
			total.Add(n)
		}()
	}
	wg.Wait()
	return total.Load()
}

// readEpoll reads every connection from one locked thread with its own
// level-triggered epoll set: epoll_wait, then one read(2) per ready
// descriptor, stamped when it returns.
func readEpoll(b *testing.B, conns []*net.TCPConn) int64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(epfd)
	fds := make(map[int32]*os.File, len(conns))
	for _, c := range conns {
		f, err := c.File() // a dup, in blocking mode: set it back
		if err != nil {
			b.Fatal(err)
		}
		c.Close()
		fd := int(f.Fd())
		if err := unix.SetNonblock(fd, true); err != nil {
			b.Fatal(err)
		}
		ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(fd)}
		if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
			b.Fatal(err)
		}
		fds[int32(fd)] = f
	}
	var total int64
	evs := make([]unix.EpollEvent, 128)
	buf := make([]byte, 4096)
	for len(fds) > 0 {
		n, err := unix.EpollWait(epfd, evs, -1)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range evs[:n] {
			k, err := unix.Read(int(e.Fd), buf)
			if k > 0 {
				_ = time.Now() // the event's timestamp
				total += int64(k)
				continue
			}
			if err == unix.EAGAIN {
				continue
			}
			_ = unix.EpollCtl(epfd, unix.EPOLL_CTL_DEL, int(e.Fd), nil)
			fds[e.Fd].Close()
			delete(fds, e.Fd)
		}
	}
	return total
}

// readSyscalls is the process's count of read system calls so far
// (/proc/self/io syscr), 0 where it cannot be read.
func readSyscalls() int64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "syscr: "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}
