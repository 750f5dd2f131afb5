// Package simtest starts the built-in vLLM simulator on a loopback port for
// tests: a real HTTP server on 127.0.0.1:0, stopped with t.Cleanup.
package simtest

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/llmprobe/llmprobe/internal/simulator"
)

// Fast returns the simulator's default configuration with engine steps of
// about a millisecond (1 ms per step, 10 µs per running sequence, prefill
// free), so that tests of the prober against it run in milliseconds per
// request while its continuous batching and metrics stay real.
func Fast() simulator.Config {
	c := simulator.DefaultConfig()
	c.StepBase = time.Millisecond
	c.StepPerPrefillToken = 0
	c.StepPerSeq = 10 * time.Microsecond
	return c
}

// Start builds a Simulator from cfg and serves it on a free port of
// 127.0.0.1. It returns the base URL ("http://127.0.0.1:PORT", or https://
// when cfg serves TLS; no trailing slash) and the Simulator (for SetFaults, Gatherer, ...). Cleanup closes the
// Simulator (in-flight requests end at once), stops the server and fails the
// test if either reports an error. It fails the test at once when cfg is
// invalid or no port can be opened.
func Start(t testing.TB, cfg simulator.Config) (baseURL string, sim *simulator.Simulator) {
	t.Helper()
	sim, err := simulator.New(cfg, log.NewNopLogger())
	if err != nil {
		t.Fatalf("simtest: new simulator: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		sim.Close()
		t.Fatalf("simtest: listen: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- sim.Serve(ctx, l) }()
	t.Cleanup(func() {
		closeErr := sim.Close()
		cancel()
		var serveErr error
		select {
		case serveErr = <-served:
		case <-time.After(simulator.ShutdownGrace + 5*time.Second):
			serveErr = errors.New("server did not stop")
		}
		if err := errors.Join(closeErr, serveErr); err != nil {
			t.Errorf("simtest: stop simulator: %v", err)
		}
	})
	return sim.Scheme() + "://" + l.Addr().String(), sim
}
