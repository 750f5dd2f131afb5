package simulator

import (
	"context"
	"net"
	"time"

	"github.com/go-kit/log"

	"github.com/llmprobe/llmprobe/prober/workload"
)

// StartEmbedded serves the built-in simulator (DefaultConfig) on a free
// loopback port, in process: what `llmprobe sweep` without --target and
// `llmprobe serve` without a config probe. stop closes it and waits for the
// server to end (at most ShutdownGrace and 5s).
func StartEmbedded(logger log.Logger) (stop func(), url string, err error) {
	sim, err := New(DefaultConfig(), log.With(logger, "component", "simulator"))
	if err != nil {
		return nil, "", err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		sim.Close()
		return nil, "", err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sim.Serve(ctx, l) }()
	return func() {
		sim.Close()
		cancel()
		select {
		case <-done:
		case <-time.After(ShutdownGrace + 5*time.Second):
		}
	}, "http://" + l.Addr().String(), nil
}

// EmbeddedCapacity is the capacity (req/s) of the simulator StartEmbedded
// serves for a workload of fixed lengths without a shared prefix, from its
// parameters (Config.Capacity); 0 for any other workload (multi-turn
// sessions too: their rate is in sessions/s).
func EmbeddedCapacity(w workload.Spec) float64 {
	if w.PrefixTokens != 0 || w.MultiTurn != nil || w.InputTokens.Dist != workload.DistFixed || w.OutputTokens.Dist != workload.DistFixed {
		return 0
	}
	return DefaultConfig().Capacity(w.InputTokens.Value, w.OutputTokens.Value)
}
