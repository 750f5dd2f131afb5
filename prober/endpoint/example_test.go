package endpoint_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"

	"github.com/go-kit/log"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/prober/endpoint"
)

// ExampleEndpoint_Discover asks the built-in simulator, served in-process,
// what it serves: the models of GET /v1/models, the engine (detected from
// /metrics and /v1/models), its version and context length. A model that
// is configured but not listed is an error wrapping ErrModelNotListed, with
// Info still filled in.
func ExampleEndpoint_Discover() {
	sim, err := simulator.New(simulator.DefaultConfig(), log.NewNopLogger())
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := httptest.NewServer(sim.Handler())
	defer srv.Close()
	defer sim.Close()

	ep, err := endpoint.New(endpoint.Options{BaseURL: srv.URL})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ep.CloseIdleConnections()
	info, err := ep.Discover(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("models:", info.Models)
	fmt.Println("model:", info.Model, "listed:", info.Listed)
	fmt.Println("engine:", info.Engine, "from", info.EngineSource)
	fmt.Println("max_model_len:", info.MaxModelLen, "from", info.MaxModelLenSource)
	fmt.Println("server version:", info.ServerVersion)

	other, err := endpoint.New(endpoint.Options{BaseURL: srv.URL, Model: "gpt-9"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer other.CloseIdleConnections()
	_, err = other.Discover(context.Background())
	fmt.Println("not listed:", errors.Is(err, endpoint.ErrModelNotListed))
	// Output:
	// models: [llmprobe-sim]
	// model: llmprobe-sim listed: true
	// engine: vllm from /metrics names
	// max_model_len: 8192 from /v1/models max_model_len
	// server version: 0.11.0+llmprobe.sim
	// not listed: true
}
