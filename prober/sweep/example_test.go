package sweep_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"time"

	"github.com/go-kit/log"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/prober/sweep"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// ExamplePrepare sweeps two open-loop rates against the built-in simulator,
// served in-process: Prepare checks the target (models, context length,
// /metrics) before any load, Run sends each step's requests and returns the
// Result. What it prints does not depend on timing: whether a step is
// valid does (on a starved machine a step may be flagged
// client-saturated), so the example leaves it out.
func ExamplePrepare() {
	sc := simulator.DefaultConfig()
	sc.StepBase = time.Millisecond // ~1 ms engine steps: the example runs in well under a second
	sc.StepPerPrefillToken = 0
	sim, err := simulator.New(sc, log.NewNopLogger())
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := httptest.NewServer(sim.Handler())
	defer srv.Close()
	defer sim.Close()
	out, err := os.MkdirTemp("", "sweep-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(out)

	cfg := sweep.Config{
		Target:          srv.URL,
		API:             "completions",
		Timeout:         30 * time.Second,
		Workload:        workload.Spec{InputTokens: workload.Fixed(32), OutputTokens: workload.Fixed(4)},
		WorkloadSource:  "flags",
		Rates:           []float64{10, 20},
		RatesText:       "10,20",
		Arrival:         "poisson",
		Burstiness:      1,
		NumPrompts:      10,
		Rounds:          1,
		MetricsInterval: 100 * time.Millisecond,
		IdleTimeout:     2 * time.Second,
		OutDir:          out,
		Name:            "example",
		Embedded:        true, // the server shares this process: its CPU is not the client's
	}
	ctx := context.Background()
	p, err := sweep.Prepare(ctx, cfg, sweep.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("model:", p.Model())
	res, err := p.Run(ctx, nil, nil) // nil: discard the records, no progress
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("complete:", res.Complete, "steps:", len(res.Steps))
	for _, st := range res.Steps {
		fmt.Printf("%s: %d requests, %d completed, %d output tokens\n",
			st.Label, st.Stats.Requests, st.Stats.Completed, st.Stats.TotalOutputTokens)
	}
	// Output:
	// model: llmprobe-sim
	// complete: true steps: 2
	// rate=10: 10 requests, 10 completed, 40 output tokens
	// rate=20: 10 requests, 10 completed, 40 output tokens
}
