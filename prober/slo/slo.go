// Package slo owns latency SLO thresholds and the goodput rule: which
// per-request thresholds (TTFT, TPOT, E2EL) a target must meet, how they are
// written (YAML/JSON durations such as 800ms; vllm bench serve's --goodput
// syntax ttft:800 tpot:50 e2el:5000 in milliseconds), and whether one Record
// counts as good.
//
// The rule is vLLM's (--goodput, PR #9338): a request is good when it
// succeeded and every configured threshold holds with <=; the TPOT of a
// request with one output token or fewer counts as 0. A failed request is
// never good and violates no SLO (it is counted by its error class instead).
package slo

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/llmprobe/llmprobe/prober"
)

// SLO names, used as the value of the `slo` label and as keys in YAML, JSON
// and --goodput.
const (
	NameTTFT = "ttft"
	NameTPOT = "tpot"
	NameE2EL = "e2el"
	// NameTTFA is the answer TTFT (Record.AnswerTTFT): for a reasoning
	// model, the time to the first token after the thinking.
	NameTTFA = "ttfa"
)

// Names lists the SLO names in a stable order (for pre-declaring label
// values and for docs).
var Names = []string{NameTTFT, NameTPOT, NameE2EL, NameTTFA}

// SLO holds per-request latency thresholds; a zero field is not set. The zero
// SLO sets nothing, so every successful request is good. In YAML and JSON the
// fields are durations written as strings (`ttft: 800ms`, `"tpot": "50ms"`);
// unknown keys are errors.
type SLO struct {
	// TTFT bounds the time to the first token event (vLLM's TTFT).
	TTFT time.Duration
	// TPOT bounds (E2E - TTFT) / (output tokens - 1).
	TPOT time.Duration
	// E2EL bounds the end-to-end latency to the last token event.
	E2EL time.Duration
	// TTFA bounds the answer TTFT (Record.AnswerTTFT): the time to the
	// first answer token, after a reasoning model's thinking.
	TTFA time.Duration
}

// Threshold is one configured SLO.
type Threshold struct {
	Name  string
	Value time.Duration
}

// Thresholds returns the configured (non-zero) thresholds in Names order.
func (s SLO) Thresholds() []Threshold {
	var out []Threshold
	for _, t := range s.all() {
		if t.Value != 0 {
			out = append(out, t)
		}
	}
	return out
}

// all lists every threshold, set or not, in Names order.
func (s SLO) all() []Threshold {
	return []Threshold{{NameTTFT, s.TTFT}, {NameTPOT, s.TPOT}, {NameE2EL, s.E2EL}, {NameTTFA, s.TTFA}}
}

// IsZero reports whether no threshold is set.
func (s SLO) IsZero() bool { return s == SLO{} }

// Validate checks that no threshold is negative.
func (s SLO) Validate() error {
	for _, t := range s.all() {
		if t.Value < 0 {
			return fmt.Errorf("%s must be >= 0, got %s", t.Name, t.Value)
		}
	}
	return nil
}

// Kind identifies one SLO; its String is its name (Names[k]).
type Kind uint8

// The SLO kinds, in Names order.
const (
	KindTTFT Kind = iota
	KindTPOT
	KindE2EL
	KindTTFA
)

// Kinds lists the SLO kinds in Names order.
var Kinds = []Kind{KindTTFT, KindTPOT, KindE2EL, KindTTFA}

// String returns the SLO's name (NameTTFT, NameTPOT, NameE2EL).
func (k Kind) String() string {
	if int(k) < len(Names) {
		return Names[k]
	}
	return fmt.Sprintf("slo(%d)", uint8(k))
}

// Set is a set of SLO kinds (a bitmask); the zero Set is empty.
type Set uint8

// Has reports whether k is in s.
func (s Set) Has(k Kind) bool { return s&(1<<k) != 0 }

// With returns s with k added.
func (s Set) With(k Kind) Set { return s | 1<<k }

// Names returns the names of the kinds in s, in Names order (nil when s
// is empty).
func (s Set) Names() []string {
	var out []string
	for _, k := range Kinds {
		if s.Has(k) {
			out = append(out, k.String())
		}
	}
	return out
}

// Verdict is the goodput rule's verdict on one Record: Good when it
// succeeded and every configured threshold held; Violated the thresholds
// that did not hold (empty for a failed request, which is never good and
// violates nothing).
type Verdict struct {
	Good     bool
	Violated Set
}

// Verdict applies the goodput rule to r: r is good when it succeeded and
// every configured threshold holds (value <= threshold). A failed request is
// not good and violates nothing. The TPOT of a request with <= 1 output
// token is taken as 0, as vLLM does for goodput.
func (s SLO) Verdict(r *prober.Record) Verdict {
	if !r.OK() {
		return Verdict{}
	}
	var v Set
	if s.TTFT != 0 && r.TTFT > s.TTFT && !r.NoStream {
		v = v.With(KindTTFT)
	}
	if s.TPOT != 0 {
		tpot, _ := r.TPOT() // 0 when output tokens <= 1
		if tpot > s.TPOT {
			v = v.With(KindTPOT)
		}
	}
	if s.E2EL != 0 && r.E2E > s.E2EL {
		v = v.With(KindE2EL)
	}
	if s.TTFA != 0 && r.AnswerTTFT() > s.TTFA && !r.NoStream {
		v = v.With(KindTTFA)
	}
	return Verdict{Good: v == 0, Violated: v}
}

// Evaluate is Verdict with the violated SLOs as names (nil when none).
//
// Deprecated: use Verdict; Evaluate remains until prober/sweep moved.
func (s SLO) Evaluate(r *prober.Record) (good bool, violated []string) {
	v := s.Verdict(r)
	return v.Good, v.Violated.Names()
}

func known(name string) bool { return slices.Contains(Names, name) }

// set assigns the threshold called name (one of Names).
func (s *SLO) set(name string, v time.Duration) {
	switch name {
	case NameTTFT:
		s.TTFT = v
	case NameTPOT:
		s.TPOT = v
	case NameE2EL:
		s.E2EL = v
	case NameTTFA:
		s.TTFA = v
	}
}

func unknownKey(k string) error {
	return fmt.Errorf("unknown slo key %q (one of ttft, tpot, e2el, ttfa)", k)
}

// parseValue parses one threshold written as a Go duration ("800ms", "1.5s").
func parseValue(name, v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s: invalid duration %q (want e.g. 800ms or 1.5s)", name, v)
	}
	if d < 0 {
		return 0, fmt.Errorf("%s must be >= 0, got %s", name, v)
	}
	return d, nil
}

// UnmarshalYAML decodes a mapping of SLO names to duration strings, e.g.
// `{ttft: 800ms, tpot: 50ms}`. Unknown or repeated keys, values without a
// unit and negative values are errors that name the key.
func (s *SLO) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: slo must be a mapping such as {ttft: 800ms, tpot: 50ms}", n.Line)
	}
	var out SLO
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if seen[k.Value] {
			return fmt.Errorf("line %d: slo key %q given twice", k.Line, k.Value)
		}
		seen[k.Value] = true
		if v.Kind != yaml.ScalarNode {
			return fmt.Errorf("line %d: %s must be a duration such as 800ms", v.Line, k.Value)
		}
		if !known(k.Value) {
			return fmt.Errorf("line %d: %w", k.Line, unknownKey(k.Value))
		}
		d, err := parseValue(k.Value, v.Value)
		if err != nil {
			return fmt.Errorf("line %d: %w", v.Line, err)
		}
		out.set(k.Value, d)
	}
	*s = out
	return nil
}

// MarshalYAML writes the set thresholds as duration strings.
func (s SLO) MarshalYAML() (any, error) {
	m := map[string]string{}
	for _, t := range s.Thresholds() {
		m[t.Name] = t.Value.String()
	}
	return m, nil
}

// MarshalJSON writes the set thresholds as duration strings, e.g.
// {"ttft":"800ms","tpot":"50ms"}; the zero SLO is {}.
func (s SLO) MarshalJSON() ([]byte, error) {
	m := map[string]string{}
	for _, t := range s.Thresholds() {
		m[t.Name] = t.Value.String()
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads what MarshalJSON writes; unknown keys and non-string
// values are errors.
func (s *SLO) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("slo: %w", err)
	}
	var out SLO
	names := slices.Sorted(maps.Keys(m))
	for _, name := range names {
		if !known(name) {
			return unknownKey(name)
		}
		var v string
		if err := json.Unmarshal(m[name], &v); err != nil {
			return fmt.Errorf("%s must be a duration string such as \"800ms\"", name)
		}
		d, err := parseValue(name, v)
		if err != nil {
			return err
		}
		out.set(name, d)
	}
	*s = out
	return nil
}

// ParseGoodput parses vllm bench serve's --goodput syntax: KEY:VALUE pairs
// with KEY one of ttft, tpot, e2el (vLLM's keys) or ttfa (llmprobe's answer TTFT) and
// VALUE in milliseconds (a decimal
// number), e.g. []string{"ttft:800", "tpot:50"}. Each argument may itself
// hold several pairs separated by spaces or commas ("ttft:800 tpot:50"), so
// a single flag value works too. Errors name the bad key or pair. A value of
// 0 is rejected: vLLM would accept it and then count no request as good,
// while here 0 means "not set".
func ParseGoodput(args []string) (SLO, error) {
	var out SLO
	seen := map[string]bool{}
	n := 0
	for _, arg := range args {
		for _, pair := range strings.FieldsFunc(arg, func(r rune) bool { return r == ' ' || r == ',' || r == '\t' }) {
			key, val, ok := strings.Cut(pair, ":")
			if !ok {
				return SLO{}, fmt.Errorf("invalid goodput %q: want KEY:VALUE with KEY one of ttft, tpot, e2el, ttfa and VALUE in ms", pair)
			}
			key = strings.ToLower(strings.TrimSpace(key))
			if !known(key) {
				return SLO{}, fmt.Errorf("invalid goodput key %q: must be one of ttft, tpot, e2el, ttfa", key)
			}
			if seen[key] {
				return SLO{}, fmt.Errorf("goodput key %q given twice", key)
			}
			seen[key] = true
			ms, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
			if err != nil || math.IsNaN(ms) || math.IsInf(ms, 0) {
				return SLO{}, fmt.Errorf("invalid goodput value for %s: %q is not a number of milliseconds", key, val)
			}
			if ms < 0 {
				return SLO{}, fmt.Errorf("invalid goodput value for %s: %v must be >= 0", key, ms)
			}
			if ms == 0 {
				return SLO{}, fmt.Errorf("invalid goodput value for %s: 0 would make no request good; omit the key for no threshold", key)
			}
			if ms*1e6 >= math.MaxInt64 {
				return SLO{}, fmt.Errorf("invalid goodput value for %s: %v ms is too large", key, ms)
			}
			out.set(key, time.Duration(math.Round(ms*1e6)))
			n++
		}
	}
	if n == 0 {
		return SLO{}, errors.New("goodput needs at least one KEY:VALUE pair (ttft, tpot, e2el or ttfa, in ms)")
	}
	return out, nil
}

// GoodputArgs formats the set thresholds in --goodput syntax, e.g.
// "ttft:800 tpot:50" (milliseconds, shortest exact decimal), for command
// lines and fingerprints.
func (s SLO) GoodputArgs() string {
	var parts []string
	for _, t := range s.Thresholds() {
		parts = append(parts, t.Name+":"+strconv.FormatFloat(float64(t.Value)/1e6, 'f', -1, 64))
	}
	return strings.Join(parts, " ")
}

// String is GoodputArgs, or "none" for the zero SLO.
func (s SLO) String() string {
	if s.IsZero() {
		return "none"
	}
	return s.GoodputArgs()
}
