package config

import (
	"errors"

	"github.com/llmprobe/llmprobe/prober/gpusel"
)

// ValidateGPUSource checks a target's gpu_metrics_url and gpu_selector (the
// GPU energy source of its sweeps, issue 38), as the config file's and a
// discovered target's relabelled __gpu_metrics_url__ and __gpu_selector__.
func ValidateGPUSource(rawURL, selector string) error {
	var l problems
	if rawURL != "" {
		l.add("gpu_metrics_url", validateURL(rawURL, true))
	}
	if _, err := gpusel.Parse(selector); err != nil {
		l.add("gpu_selector", err)
	} else if selector != "" && rawURL == "" {
		l.add("gpu_selector", errors.New("needs gpu_metrics_url"))
	}
	return l.err()
}
