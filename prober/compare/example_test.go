package compare_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/go-kit/log"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/prober/compare"
	"github.com/llmprobe/llmprobe/prober/sweep"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// serveSimulator serves the built-in vLLM simulator of cfg on a free port
// of 127.0.0.1 until stop is called.
func serveSimulator(cfg simulator.Config) (url string, stop func(), err error) {
	sim, err := simulator.New(cfg, log.NewNopLogger())
	if err != nil {
		return "", nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		sim.Close()
		return "", nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sim.Serve(ctx, l) }()
	return "http://" + l.Addr().String(), func() {
		sim.Close()
		cancel()
		<-done
	}, nil
}

// startSimulator serves a simulator with 1 ms steps (see serveSimulator).
func startSimulator() (url string, stop func()) {
	cfg := simulator.DefaultConfig()
	cfg.StepBase = time.Millisecond
	url, stop, err := serveSimulator(cfg)
	if err != nil {
		panic(err)
	}
	return url, stop
}

// A comparison of two servers: four rounds in A/B/B/A order, each the
// same small sweep (20 requests at 20 req/s) from an idle server, then the
// validity rules and the compared figures on both sides' rounds pooled.
// Without RunRound the rounds run in memory; `llmprobe compare`
// (internal/rundir.RunCompare) writes each as a sweep run directory.
func ExampleProcedure() {
	baseURL, stopBase := startSimulator()
	defer stopBase()
	candURL, stopCand := startSimulator()
	defer stopCand()

	side := func(target string) sweep.Config {
		return sweep.Config{
			Target: target, API: "completions", Timeout: 30 * time.Second,
			Workload:       workload.Spec{InputTokens: workload.Fixed(32), OutputTokens: workload.Fixed(4)},
			WorkloadSource: "flags", Rates: []float64{20}, RatesText: "20", Arrival: "poisson", Burstiness: 1,
			NumPrompts: 20, Warmups: 1, Rounds: 1, MetricsInterval: 100 * time.Millisecond, IdleTimeout: 5 * time.Second,
			OutDir: os.TempDir(), Name: "example", // validated, not written: the rounds run in memory
			Embedded: true, // the simulators share this process: no client CPU check
			Validity: sweep.ValidityOptions{MaxSendLag: time.Second, MaxSchedLatency: time.Second},
		}
	}
	th, err := compare.ParseThresholds("tpot_p50=50%,throughput=20%")
	if err != nil {
		panic(err)
	}
	p := &compare.Procedure{
		Baseline: side(baseURL), Candidate: side(candURL),
		Order: compare.OrderABBA, Rounds: 4, Seed: 7,
		Thresholds: th, Vary: []string{compare.FieldEndpoint}, Iters: 200,
	}
	if err := p.Preflight(context.Background()); err != nil {
		panic(err)
	}
	res := p.Run(context.Background())

	for _, r := range res.Rounds {
		fmt.Printf("round %d: %s, seed %d, complete %v\n", r.Round, r.Side, r.Seed, r.Complete)
	}
	for _, r := range res.Result.Rules[:2] {
		fmt.Printf("%s %s: %s\n", r.Name, r.Status, r.Detail)
	}
	for _, f := range res.Result.Figures {
		fmt.Printf("figure %s @ %s over %d and %d requests\n", f.Name, f.Level, f.NBaseline, f.NCandidate)
	}
	// Output:
	// round 1: baseline, seed 7, complete true
	// round 2: candidate, seed 7, complete true
	// round 3: candidate, seed 8, complete true
	// round 4: baseline, seed 8, complete true
	// fingerprint ok: the sides differ only in: endpoint
	// success counts ok: 40 vs 40 completed (of 40 vs 40)
	// figure tpot_p50 @ rate=20 over 40 and 40 requests
	// figure throughput @ rate=20 over 40 and 40 requests
}
