package bench

// The accuracy and capacity sections: one `llmprobe sweep` child per
// level, its records compared with the simulator's trace.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/llmprobe/llmprobe/internal/simulator"
)

// sweepRun runs one `llmprobe sweep` child with the common flags plus
// extra, and reads its run directory; server is the simulator's stats
// delta over the child's life.
func (b *bench) sweepRun(ctx context.Context, name string, extra ...string) (*run, simulator.LightStats, error) {
	b.runs++
	out := filepath.Join(b.o.Dir, "runs", fmt.Sprintf("%02d-%s", b.runs, name))
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, simulator.LightStats{}, err
	}
	args := append([]string{"sweep", "--target=" + b.base, "--input-len=" + strconv.Itoa(b.o.InputTokens),
		"--output-len=" + strconv.Itoa(b.o.Tokens), "--warmups=2", "--idle-timeout=10s", "--timeout=60s",
		"--out=" + out, "--name=" + name, "--no-progress", "--log.level=warn"}, extra...)
	before, err := b.lightStats()
	if err != nil {
		return nil, simulator.LightStats{}, err
	}
	c, err := start("sweep "+name, b.rep.Placement.argv(b.rep.Placement.ProberCPU, b.o.Exe, args...), out+".log", b.rep.Placement.env(b.o.Env))
	if err != nil {
		return nil, simulator.LightStats{}, err
	}
	err = c.wait(ctx)
	if cpu, ok := c.cpuTime(); ok {
		b.own += cpu
	}
	if err != nil {
		return nil, simulator.LightStats{}, err
	}
	after, err := b.lightStats()
	if err != nil {
		return nil, simulator.LightStats{}, err
	}
	r, err := readRun(out)
	if err != nil {
		return nil, simulator.LightStats{}, err
	}
	if err := b.trace.match(r.records); err != nil {
		b.note("%s: %v", name, err)
	}
	delta := simulator.LightStats{CPUNS: after.CPUNS - before.CPUNS, Requests: after.Requests - before.Requests,
		Events: after.Events - before.Events, Tokens: after.Tokens - before.Tokens}
	if before.CPUNS < 0 || after.CPUNS < 0 {
		delta.CPUNS = -1
	}
	return r, delta, nil
}

func (b *bench) accuracy(ctx context.Context) error {
	for _, c := range b.o.Concurrency {
		r, _, err := b.sweepRun(ctx, "accuracy-c"+strconv.Itoa(c), "--concurrency="+strconv.Itoa(c),
			"--duration="+b.o.StepDuration.String())
		if err != nil {
			return err
		}
		st := r.step.Stats
		a := Accuracy{Concurrency: c, Requests: st.Requests, Failed: st.Failed, TokensPerS: st.OutputThroughput,
			Delay: b.trace.readDelays(r.records), ClientCPU: r.step.Validity.ClientCPU}
		b.rep.Accuracy = append(b.rep.Accuracy, a)
		b.progress("accuracy c=%d: %d requests, %.0f tokens/s, read delay p50 %.3f p99 %.3f max %.3f ms",
			c, a.Requests, a.TokensPerS, a.Delay.P50, a.Delay.P99, a.Delay.Max)
	}
	return nil
}

func (b *bench) capacity(ctx context.Context) error {
	fails, reached := 0, false
	for _, rate := range b.o.Rates {
		r, srv, err := b.sweepRun(ctx, "capacity-r"+strconv.FormatFloat(rate, 'f', -1, 64),
			"--rates="+strconv.FormatFloat(rate, 'f', -1, 64), "--duration="+b.o.StepDuration.String())
		if err != nil {
			return err
		}
		st := r.step.Stats
		cp := Capacity{Rate: rate, Achieved: st.AchievedRate, Requests: st.Requests, Failed: st.Failed,
			TokensPerS: st.OutputThroughput, SendLagP99: st.SendLag.P99, Delay: b.trace.readDelays(r.records),
			ClientCores: r.step.Validity.ClientCPU, ClientCPUPer1k: -1, ServerCPUPer1k: -1}
		if tok := float64(st.TotalOutputTokens); tok > 0 && cp.ClientCores >= 0 {
			cp.ClientCPUPer1k = cp.ClientCores * st.Duration / tok * 1000
		}
		if srv.Tokens > 0 && srv.CPUNS >= 0 {
			cp.ServerCPUPer1k = float64(srv.CPUNS) / 1e9 / float64(srv.Tokens) * 1000
		}
		cp.OK = cp.Failed == 0 && cp.SendLagP99 <= TargetSendLagP99 && cp.Delay.Events > 0 && cp.Delay.P99 <= TargetReadDelayP99
		b.rep.Capacity = append(b.rep.Capacity, cp)
		b.progress("capacity %g req/s: %.0f tokens/s, send lag p99 %.3f ms, read delay p99 %.3f ms, llmprobe %.1f µs/token, server %.1f µs/token, ok %v",
			rate, cp.TokensPerS, cp.SendLagP99, cp.Delay.P99, cp.ClientCPUPer1k*1000, cp.ServerCPUPer1k*1000, cp.OK)
		// Stop after two failing rates in a row, once a rate has streamed
		// the tokens/s the CPU-per-token figure is judged at.
		if cp.OK {
			fails = 0
		} else {
			fails++
		}
		if cp.TokensPerS >= TargetTokensPerSecond {
			reached = true
		}
		if fails >= 2 && reached {
			break
		}
	}
	return nil
}
