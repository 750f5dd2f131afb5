// Package gpusel parses the GPU label selector of a GPU energy source
// (gpu_selector, --gpu-selector): PromQL label matchers on a DCGM
// exporter's series. It is a leaf shared by the daemon's config and the
// sweep engine, so that both check a selector by one rule.
package gpusel

import (
	"fmt"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// MaxBytes bounds a selector in bytes.
const MaxBytes = 1024

// Parse parses a GPU label selector: PromQL matchers, with or without
// braces (`pod="vllm-0",namespace="llm"`, `{UUID=~"GPU-1.*"}`). Empty
// selects every GPU the exporter serves (nil matchers).
func Parse(s string) ([]*labels.Matcher, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	if len(s) > MaxBytes {
		return nil, fmt.Errorf("must be at most %d bytes, got %d", MaxBytes, len(s))
	}
	if !strings.HasPrefix(s, "{") {
		s = "{" + s + "}"
	}
	ms, err := parser.NewParser(parser.Options{}).ParseMetricSelector(s)
	if err != nil {
		return nil, fmt.Errorf("not a label selector: %w", err)
	}
	for _, m := range ms {
		if m.Name == labels.MetricName {
			return nil, fmt.Errorf("selects GPUs by label, not by metric name (%s)", m)
		}
	}
	return ms, nil
}
