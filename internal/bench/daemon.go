package bench

// The daemon-footprint section: `llmprobe serve` with slow probes.

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/llmprobe/llmprobe/prober/schedule"
)

// daemon measures `llmprobe serve` with DaemonTargets targets of one slow
// probe each against the simulator.
func (b *bench) daemon(ctx context.Context) error {
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "targets:\n")
	for i := range b.o.DaemonTargets {
		fmt.Fprintf(&cfg, `  - name: t%d
    base_url: %s
    probes:
      - name: p
        rate: %g
        arrival: poisson
        workload:
          input_tokens: {dist: fixed, value: %d}
          output_tokens: {dist: fixed, value: %d}
`, i, b.base, b.o.DaemonRate, b.o.InputTokens, b.o.Tokens)
	}
	path := filepath.Join(b.o.Dir, "daemon.yml")
	if err := os.WriteFile(path, []byte(cfg.String()), 0o644); err != nil {
		return err
	}
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	c, err := start("serve", b.rep.Placement.argv(b.rep.Placement.ProberCPU, b.o.Exe,
		"serve", "--config.file="+path, "--web.listen-address="+addr, "--log.level=warn"), filepath.Join(b.o.Dir, "serve.log"), b.rep.Placement.env(b.o.Env))
	if err != nil {
		return err
	}
	defer func() {
		c.stop(15 * time.Second)
		if cpu, ok := c.cpuTime(); ok {
			b.own += cpu
		}
	}()
	if err := waitHTTP(ctx, c, "http://"+addr+"/metrics", 30*time.Second); err != nil {
		return err
	}
	b.progress("daemon: %d targets x 1 probe at %g req/s; warm-up %s, then %s", b.o.DaemonTargets, b.o.DaemonRate,
		b.o.DaemonWarmup, b.o.DaemonDuration)
	if !schedule.SleepUntil(ctx, time.Now().Add(b.o.DaemonWarmup)) {
		return ctx.Err()
	}
	d := &Daemon{Targets: b.o.DaemonTargets, Rate: b.o.DaemonRate}
	req0 := b.daemonRequests(addr)
	cpu0, ok0 := c.cpuTime()
	t0 := time.Now()
	if !schedule.SleepUntil(ctx, time.Now().Add(b.o.DaemonDuration)) {
		return ctx.Err()
	}
	cpu1, ok1 := c.cpuTime()
	d.Seconds = time.Since(t0).Seconds()
	rss, peak, okm := procMemory(c.pid())
	d.Requests = b.daemonRequests(addr) - req0
	if ok0 && ok1 && okm {
		d.Measured = true
		d.CPUPct = 100 * (cpu1 - cpu0).Seconds() / d.Seconds
		d.RSSMB, d.PeakMB = float64(rss)/1e6, float64(peak)/1e6
	} else {
		b.note("daemon: RSS and CPU need /proc (Linux); not measured")
	}
	b.rep.Daemon = d
	b.progress("daemon: RSS %.1f MB (peak %.1f), CPU %.2f%% of a core, %.0f requests in %.0fs", d.RSSMB, d.PeakMB, d.CPUPct,
		d.Requests, d.Seconds)
	return nil
}

// daemonRequests sums llmprobe_requests_total on the daemon's /metrics.
func (b *bench) daemonRequests(addr string) float64 {
	resp, err := b.hc.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0
	}
	var sum float64
	for line := range strings.SplitSeq(string(body), "\n") {
		if !strings.HasPrefix(line, "llmprobe_requests_total{") {
			continue
		}
		if i := strings.LastIndexByte(line, ' '); i > 0 {
			if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
				sum += v
			}
		}
	}
	return sum
}
