package workload

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
)

// Distribution kinds of a LengthSpec.
const (
	DistFixed     = "fixed"
	DistUniform   = "uniform"
	DistLognormal = "lognormal"
	DistChoice    = "choice"
)

// LengthSpec is a token-length distribution as written in YAML, e.g.
//
//	{dist: fixed, value: 64}
//	{dist: uniform, value: 1024, range_ratio: 0.5}   # vLLM: [floor(v*(1-r)), ceil(v*(1+r))]
//	{dist: uniform, min: 10, max: 100}
//	{dist: lognormal, median: 200, sigma: 0.8, max: 4096}
//	{dist: choice, choices: [{value: 100, weight: 0.9}, {value: 9100, weight: 0.1}]}
//
// Draws are integers in [1, MaxLength] (0 is allowed only for a prefix
// length). A lognormal spec must give max: its tail is unbounded.
type LengthSpec struct {
	Dist       string   `yaml:"dist" json:"dist"`
	Value      int      `yaml:"value,omitempty" json:"value,omitempty"`
	RangeRatio float64  `yaml:"range_ratio,omitempty" json:"range_ratio,omitempty"`
	Min        int      `yaml:"min,omitempty" json:"min,omitempty"`
	Max        int      `yaml:"max,omitempty" json:"max,omitempty"`
	Median     float64  `yaml:"median,omitempty" json:"median,omitempty"`
	Sigma      float64  `yaml:"sigma,omitempty" json:"sigma,omitempty"`
	Choices    []Choice `yaml:"choices,omitempty" json:"choices,omitempty"`
}

// Choice is one weighted value of a DistChoice LengthSpec.
type Choice struct {
	Value  int     `yaml:"value" json:"value"`
	Weight float64 `yaml:"weight" json:"weight"`
}

// MaxLength is the hard sanity cap on every token length of a workload:
// 1,048,576 (2^20) tokens, above any model's context length today. Validate
// rejects a spec that could draw more (a fixed or choice value, a uniform
// bound, a lognormal max, prefix_tokens), so a typo cannot build a prompt
// of millions of tokens.
const MaxLength = 1 << 20

// Fixed returns a fixed-length spec.
func Fixed(n int) LengthSpec { return LengthSpec{Dist: DistFixed, Value: n} }

// Validate checks the spec; errors name the offending field. A field that
// the dist does not use (e.g. range_ratio with dist fixed) is an error, not
// silently ignored.
func (s LengthSpec) Validate() error {
	if err := s.checkUnused(); err != nil {
		return err
	}
	switch s.Dist {
	case DistFixed:
		if s.Value < 1 {
			return fmt.Errorf("value must be >= 1 for dist fixed, got %d", s.Value)
		}
		if s.Value > MaxLength {
			return fmt.Errorf("value must be <= %d (the largest length llmprobe draws), got %d", MaxLength, s.Value)
		}
	case DistUniform:
		if s.Value != 0 {
			if s.Value < 1 {
				return fmt.Errorf("value must be >= 1, got %d", s.Value)
			}
			if s.RangeRatio < 0 || s.RangeRatio >= 1 || math.IsNaN(s.RangeRatio) {
				return fmt.Errorf("range_ratio must be in [0, 1), got %v", s.RangeRatio)
			}
			if s.Min != 0 || s.Max != 0 {
				return errors.New("give either value (+ range_ratio) or min and max for dist uniform, not both")
			}
			if hi := math.Ceil(float64(s.Value) * (1 + s.RangeRatio)); hi > MaxLength {
				return fmt.Errorf("ceil(value*(1+range_ratio)) must be <= %d (the largest length llmprobe draws), got %.0f", MaxLength, hi)
			}
			return nil
		}
		if s.Min < 1 || s.Max < s.Min {
			return fmt.Errorf("dist uniform needs value (+ range_ratio) or 1 <= min <= max, got min %d max %d", s.Min, s.Max)
		}
		if s.Max > MaxLength {
			return fmt.Errorf("max must be <= %d (the largest length llmprobe draws), got %d", MaxLength, s.Max)
		}
	case DistLognormal:
		if !(s.Median >= 1) {
			return fmt.Errorf("median must be >= 1 for dist lognormal, got %v", s.Median)
		}
		if !(s.Sigma > 0) || math.IsInf(s.Sigma, 0) {
			return fmt.Errorf("sigma must be > 0 for dist lognormal, got %v", s.Sigma)
		}
		if s.Max == 0 {
			return errors.New("max is required for dist lognormal (an unbounded draw can exceed any context length; use the model's max_model_len)")
		}
		if float64(s.Max) < s.Median {
			return fmt.Errorf("max must be >= median (%v) for dist lognormal, got %d", s.Median, s.Max)
		}
		if s.Max > MaxLength {
			return fmt.Errorf("max must be <= %d (the largest length llmprobe draws), got %d", MaxLength, s.Max)
		}
	case DistChoice:
		if len(s.Choices) == 0 {
			return errors.New("choices must not be empty for dist choice")
		}
		for i, c := range s.Choices {
			if c.Value < 1 {
				return fmt.Errorf("choices[%d].value must be >= 1, got %d", i, c.Value)
			}
			if c.Value > MaxLength {
				return fmt.Errorf("choices[%d].value must be <= %d (the largest length llmprobe draws), got %d", i, MaxLength, c.Value)
			}
			if !(c.Weight > 0) || math.IsInf(c.Weight, 0) {
				return fmt.Errorf("choices[%d].weight must be > 0, got %v", i, c.Weight)
			}
		}
	case "":
		return errors.New("dist is required (one of fixed, uniform, lognormal, choice)")
	default:
		return fmt.Errorf("unknown dist %q (one of fixed, uniform, lognormal, choice)", s.Dist)
	}
	return nil
}

// Spec is a whole workload: input and output length distributions, an
// optional shared prefix and whether to ask the server to ignore EOS. The
// seed of the length and prompt generators is given beside it (a probe's
// `seed`, the sweep's --seed) to NewGenerator.
type Spec struct {
	InputTokens  LengthSpec `yaml:"input_tokens" json:"input_tokens"`
	OutputTokens LengthSpec `yaml:"output_tokens" json:"output_tokens"`
	// PrefixTokens is a shared prefix length prepended to every prompt
	// (counted in addition to InputTokens, as vLLM's --random-prefix-len).
	PrefixTokens int `yaml:"prefix_tokens,omitempty" json:"prefix_tokens,omitempty"`
	// IgnoreEOS asks the server to generate exactly the requested output
	// length (vLLM's ignore_eos). Default true, as vllm bench serve forces
	// for random datasets.
	IgnoreEOS *bool `yaml:"ignore_eos,omitempty" json:"ignore_eos,omitempty"`
	// MultiTurn, when set, makes each request a multi-turn chat session
	// (see MultiTurn); nil: single requests.
	MultiTurn *MultiTurn `yaml:"multi_turn,omitempty" json:"multi_turn,omitempty"`
	// Request holds the request features: sampling parameters, extra_body
	// and features carried by a share of the requests (features.go); nil
	// means none.
	Request *Request `yaml:"request,omitempty" json:"request,omitempty"`
	// Dataset, when set, takes the prompts (and output lengths) from a
	// dataset file instead of drawing them: InputTokens and PrefixTokens
	// must then be left out, and OutputTokens, when given, replaces every
	// entry's output length (DatasetSpec).
	Dataset *DatasetSpec `yaml:"dataset,omitempty" json:"dataset,omitempty"`
	// Trace, when set, replays a trace file (TraceSpec): a daemon's
	// scheduled sweep only. InputTokens, OutputTokens, PrefixTokens,
	// Dataset and MultiTurn must then be left out; Request applies.
	Trace *TraceSpec `yaml:"trace,omitempty" json:"trace,omitempty"`
}

// DefaultSpec is the workload used when none is given: 64 input tokens, 16
// output tokens, ignore_eos.
func DefaultSpec() Spec {
	return Spec{InputTokens: Fixed(64), OutputTokens: Fixed(16)}
}

// IgnoreEOSOrDefault returns IgnoreEOS, defaulting to true.
func (s Spec) IgnoreEOSOrDefault() bool { return s.IgnoreEOS == nil || *s.IgnoreEOS }

// Validate checks every field; errors name the field.
func (s Spec) Validate() error {
	if s.Trace != nil {
		if err := s.validateTrace(); err != nil {
			return err
		}
		if err := s.Request.Validate(); err != nil {
			return under("request", err)
		}
		return nil
	}
	if s.Dataset != nil {
		if s.MultiTurn != nil {
			return errors.New("multi_turn: does not apply with dataset (a dataset's messages entries are sent as they are; multi-turn sessions draw their turns)")
		}
		if err := s.validateDataset(); err != nil {
			return err
		}
		if err := s.Request.Validate(); err != nil {
			return under("request", err)
		}
		return nil
	}
	if err := s.InputTokens.Validate(); err != nil {
		return fmt.Errorf("input_tokens: %w", err)
	}
	if err := s.OutputTokens.Validate(); err != nil {
		return fmt.Errorf("output_tokens: %w", err)
	}
	if s.PrefixTokens < 0 {
		return fmt.Errorf("prefix_tokens must be >= 0, got %d", s.PrefixTokens)
	}
	if s.PrefixTokens > MaxLength {
		return fmt.Errorf("prefix_tokens must be <= %d (the largest length llmprobe draws), got %d", MaxLength, s.PrefixTokens)
	}
	if s.MultiTurn != nil {
		if err := s.MultiTurn.Validate(); err != nil {
			return fmt.Errorf("multi_turn.%w", err)
		}
	}
	if err := s.Request.Validate(); err != nil {
		return under("request", err)
	}
	return nil
}

// checkUnused rejects fields set for a dist that does not use them.
func (s LengthSpec) checkUnused() error {
	type field struct {
		name string
		set  bool
	}
	all := []field{
		{"value", s.Value != 0}, {"range_ratio", s.RangeRatio != 0}, {"min", s.Min != 0}, {"max", s.Max != 0},
		{"median", s.Median != 0}, {"sigma", s.Sigma != 0}, {"choices", s.Choices != nil},
	}
	var used []string
	switch s.Dist {
	case DistFixed:
		used = []string{"value"}
	case DistUniform:
		used = []string{"value", "range_ratio", "min", "max"} // the two forms are checked in Validate
		if s.Value == 0 && s.RangeRatio != 0 {
			return errors.New("range_ratio needs value for dist uniform (min and max take no range_ratio)")
		}
	case DistLognormal:
		used = []string{"median", "sigma", "max"}
	case DistChoice:
		used = []string{"choices"}
	default:
		return nil // unknown or missing dist: Validate reports it
	}
	for _, f := range all {
		if f.set && !slices.Contains(used, f.name) {
			return fmt.Errorf("%s does not apply to dist %s", f.name, s.Dist)
		}
	}
	return nil
}

// Hash returns "sha256:" and the hex SHA-256 of the spec's canonical JSON
// (IgnoreEOS resolved to its default), for fingerprints: equal workloads
// hash equal. The generator's seed is not part of it.
func (s Spec) Hash() string {
	c := s
	ie := s.IgnoreEOSOrDefault()
	c.IgnoreEOS = &ie
	b, err := json.Marshal(c)
	if err != nil { // NaN or Inf in an invalid spec: hash its Go syntax instead
		b = fmt.Appendf(nil, "%#v", c)
	}
	h := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(h[:])
}
