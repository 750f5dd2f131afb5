package workload

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// TraceSpec is a workload's trace replay as a configuration writes it (a
// daemon's scheduled sweep: `workload: {trace: {path, speeds, block_size}}`;
// the CLI's --trace, --trace-speed and --trace-block-size): the file, the
// replay speeds (one step each) and the tokens one hash id stands for. A
// trace gives every request's lengths and shared prefixes, so a Spec with a
// Trace takes no input_tokens, output_tokens, prefix_tokens, dataset or
// multi_turn. A trace is never a probe's workload: a probe runs without
// end, a replay is a timed experiment with one.
type TraceSpec struct {
	// Path is the trace file (required): Mooncake or offsets JSONL
	// (LoadTrace).
	Path string `yaml:"path" json:"path"`
	// Speeds are the replay speeds in the order run (1: the trace's own
	// timing, 2: twice as fast); empty means [1].
	Speeds []float64 `yaml:"speeds,omitempty" json:"speeds,omitempty"`
	// BlockSize is the tokens one hash id stands for; 0 means
	// DefaultTraceBlockSize (512, Mooncake's).
	BlockSize int `yaml:"block_size,omitempty" json:"block_size,omitempty"`
	// SHA256 is the "sha256:" digest of the file as loaded, set by whoever
	// loads it (the daemon's config load), so that a changed file changes
	// the spec's JSON and a reload restarts the schedule that replays it.
	// It is never read from YAML.
	SHA256 string `yaml:"-" json:"sha256,omitempty"`
}

// MaxTraceSpeeds caps TraceSpec.Speeds: each speed is a step.
const MaxTraceSpeeds = 64

// SpeedsOrDefault returns Speeds, or [1] when empty.
func (s TraceSpec) SpeedsOrDefault() []float64 {
	if len(s.Speeds) == 0 {
		return []float64{1}
	}
	return s.Speeds
}

// Options returns the TraceOptions of LoadTrace for the spec.
func (s TraceSpec) Options() TraceOptions { return TraceOptions{BlockSize: s.BlockSize} }

// Validate checks the spec's own fields (not the file); errors begin with
// the key at fault.
func (s TraceSpec) Validate() error {
	if s.Path == "" {
		return errors.New("path: required")
	}
	if s.BlockSize < 0 || s.BlockSize > MaxTraceBlockSize {
		return fmt.Errorf("block_size: must be in [1, %d] (0 or left out: %d), got %d", MaxTraceBlockSize, DefaultTraceBlockSize, s.BlockSize)
	}
	if len(s.Speeds) > MaxTraceSpeeds {
		return fmt.Errorf("speeds: at most %d speeds (each is a step), got %d", MaxTraceSpeeds, len(s.Speeds))
	}
	for i, v := range s.Speeds {
		if !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("speeds: speed must be > 0 and finite (2 replays twice as fast), got %v", v)
		}
		if slices.Contains(s.Speeds[:i], v) {
			return fmt.Errorf("speeds: speed %v given twice", v)
		}
	}
	return nil
}

// validateTrace checks a Spec with a Trace: the trace's own fields, and no
// key that the trace decides.
func (s Spec) validateTrace() error {
	if err := s.Trace.Validate(); err != nil {
		return fmt.Errorf("trace.%w", err)
	}
	const why = "does not apply with trace (the trace gives each request's lengths and shared prefixes)"
	switch {
	case s.Dataset != nil:
		return errors.New("dataset: does not apply with trace (give one of them)")
	case s.MultiTurn != nil:
		return errors.New("multi_turn: " + why)
	case s.InputTokens.Dist != "":
		return errors.New("input_tokens: " + why)
	case s.OutputTokens.Dist != "":
		return errors.New("output_tokens: " + why)
	case s.PrefixTokens != 0:
		return errors.New("prefix_tokens: " + why)
	}
	return nil
}

// MeanRate is the mean request rate of a replay of the first n entries at
// speed, in req/s: n over their span divided by the speed (a sweep step's
// level). 0 when the n entries have no span.
func (t *Trace) MeanRate(n int, speed float64) float64 {
	if n < 1 || n > len(t.Entries) {
		return 0
	}
	span := t.Entries[n-1].Offset.Seconds() / speed
	if !(span > 0) {
		return 0
	}
	return float64(n) / span
}
