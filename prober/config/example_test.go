package config_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/llmprobe/llmprobe/prober/config"
)

// ExampleLoad loads a small configuration file: every key left out takes
// its default (global timeouts, the completions API, Poisson arrivals, a
// max_concurrency of 4 × ceil(rate), 16 output tokens), a target inherits
// global's timeouts, and a bad value is an error naming the file, the line
// and the field.
func ExampleLoad() {
	dir, err := os.MkdirTemp("", "config-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "llmprobe.yml")
	write := func(yml string) {
		if err := os.WriteFile(path, []byte(yml), 0o600); err != nil {
			fmt.Println(err)
		}
	}

	write(`
targets:
  - name: vllm-a
    base_url: http://vllm:8000
    slo: {ttft: 800ms}
    probes:
      - name: small
        rate: 2.5
        workload:
          input_tokens: {dist: fixed, value: 64}
`)
	c, err := config.Load(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	t := c.Targets[0]
	fmt.Println("target:", t.Name, t.API, "timeout", t.Timeout, "ttft slo", t.SLO.TTFT)
	for _, p := range t.Probes {
		fmt.Println("probe:", p.Name, "rate", p.Rate, p.Arrival, "max_concurrency", p.MaxConcurrency,
			"input", p.Workload.InputTokens.Value, "output", p.Workload.OutputTokens.Value)
	}

	write(`
targets:
  - name: vllm-a
    base_url: http://vllm:8000
    probes:
      - {name: small, rate: -1}
`)
	_, err = config.Load(path)
	fmt.Println(strings.TrimPrefix(err.Error(), dir+string(filepath.Separator)))
	// Output:
	// target: vllm-a completions timeout 2m0s ttft slo 800ms
	// probe: small rate 2.5 poisson max_concurrency 12 input 64 output 16
	// llmprobe.yml:6: targets[0].probes[0].rate: must be > 0, got -1
}
