package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"go.yaml.in/yaml/v3"

	"github.com/llmprobe/llmprobe/prober/answer"
	"github.com/llmprobe/llmprobe/prober/arrival"
	"github.com/llmprobe/llmprobe/prober/jsonkind"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// Defaults of a sweep run by the daemon (a sweeps: entry or the sweep API).
const (
	// DefaultSweepKeep is how many run directories of one target and sweep
	// name are kept when retention leaves count out.
	DefaultSweepKeep = 10
	// MinSweepInterval is the shortest every: of a scheduled sweep.
	MinSweepInterval = time.Second
)

// Duration is a time.Duration written as a Go duration string ("800ms",
// "24h") in YAML and JSON; a number is a type error.
type Duration time.Duration

// UnmarshalText parses a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("invalid duration %q (want e.g. 30s, 10m or 24h)", string(b))
	}
	*d = Duration(v)
	return nil
}

// DescribeJSON words the value a Duration takes (jsonkind.Describer).
func (Duration) DescribeJSON() string { return `a duration string such as "30s"` }

// MarshalText writes the duration as time.Duration.String does.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// SweepSpec is the spec of a sweep the daemon runs, as given: a target's
// sweeps: entry (its schedule's keys aside) or the body of POST
// /api/v1/sweeps (its target aside). Its keys are the sweep CLI's flags
// with underscores; prober/sweep.FromSpec decodes them one by one through
// the sweep settings table, which refuses a key it has no row of, so this
// package, the daemon's schema, holds no copy of the sweep's settings.
// Only workload is decoded here: its schema is a probe's, and the files it
// names are read at load.
type SweepSpec struct {
	// Workload is the workload key (nil when left out).
	Workload *workload.Spec
	// Keys are the other keys and their values, as given.
	Keys map[string]yaml.Node

	// trace is Workload.Trace's file as loaded with the config
	// (readSweepFiles); nil for a spec that did not come from a config file.
	trace *workload.Trace
	// answers is answer_checks's file as loaded with the config
	// (readSweepFiles); nil for builtin and for a spec that did not come
	// from a config file.
	answers *answer.Set
}

// sweepSpecYAML is a sweep's YAML mapping: the schedule's keys, the
// workload and every other key as given.
type sweepSpecYAML struct {
	Every     Duration             `yaml:"every,omitempty"`
	Cron      string               `yaml:"cron,omitempty"`
	Jitter    Duration             `yaml:"jitter,omitempty"`
	Retention Retention            `yaml:"retention,omitempty"`
	Workload  *workload.Spec       `yaml:"workload,omitempty"`
	Keys      map[string]yaml.Node `yaml:",inline"`
}

// ParseSweepSpec reads a sweep's spec from YAML (or JSON) text: a mapping
// of spec keys, the workload decoded strictly. Tests and tools build specs
// with it; its keys are checked by prober/sweep.FromSpec.
func ParseSweepSpec(text string) (SweepSpec, error) {
	dec := yaml.NewDecoder(strings.NewReader(text))
	dec.KnownFields(true)
	var v ScheduledSweep
	err := dec.Decode(&v)
	return v.SweepSpec, err
}

// SweepSpecFromJSON builds a sweep's spec from the keys of a JSON object
// (the sweep API's body, its target taken out): the workload decoded
// strictly (an unknown key in it is an error naming it), every other value
// kept for prober/sweep.FromSpec.
func SweepSpecFromJSON(raw map[string]json.RawMessage) (SweepSpec, error) {
	s := SweepSpec{Keys: make(map[string]yaml.Node, len(raw))}
	for k, v := range raw {
		if k == "workload" {
			dec := json.NewDecoder(bytes.NewReader(v))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&s.Workload); err != nil {
				var te *json.UnmarshalTypeError
				if errors.As(err, &te) && te.Field != "" {
					return SweepSpec{}, &SpecError{Key: k + "." + te.Field, Err: fmt.Errorf("want %s, got %s", jsonkind.Describe(te.Type), te.Value)}
				}
				return SweepSpec{}, &SpecError{Key: k, Err: errors.New(strings.TrimPrefix(err.Error(), "json: "))}
			}
			continue
		}
		var n yaml.Node // JSON is YAML, but for the characters YAML cannot carry
		if err := yaml.Unmarshal(v, &n); err != nil {
			return SweepSpec{}, &SpecError{Key: k, Err: fmt.Errorf("a value a spec cannot carry: %s", strings.TrimPrefix(err.Error(), "yaml: "))}
		}
		if len(n.Content) != 1 {
			return SweepSpec{}, &SpecError{Key: k, Err: errors.New("not a JSON value")}
		}
		s.Keys[k] = *n.Content[0]
	}
	return s, nil
}

// Text returns the text of key, when it is given as a scalar.
func (s SweepSpec) Text(key string) (string, bool) {
	n, ok := s.Keys[key]
	if !ok {
		return "", false
	}
	v := resolveAlias(&n)
	if v.Kind != yaml.ScalarNode || v.ShortTag() == "!!null" {
		return "", false
	}
	return v.Value, true
}

// setText sets key to a string (a copy of Keys: the spec it came from is
// left as it was).
func (s *SweepSpec) setText(key, text string) {
	s.Keys = maps.Clone(s.Keys)
	s.Keys[key] = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: text}
}

// Name is the spec's name key ("" when none).
func (s SweepSpec) Name() string {
	name, _ := s.Text("name")
	return name
}

// values returns the spec as plain values (each key's value as YAML
// decodes it, the workload as its struct), for JSON and YAML.
func (s SweepSpec) values() map[string]any {
	m := make(map[string]any, len(s.Keys)+1)
	for k, n := range s.Keys {
		var v any
		if err := n.Decode(&v); err == nil {
			m[k] = v
		}
	}
	if s.Workload != nil {
		m["workload"] = s.Workload
	}
	return m
}

// UnmarshalJSON reads what MarshalJSON writes (SweepSpecFromJSON).
func (s *SweepSpec) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	spec, err := SweepSpecFromJSON(raw)
	*s = spec
	return err
}

// MarshalJSON writes the spec as a JSON object of its keys.
func (s SweepSpec) MarshalJSON() ([]byte, error) { return json.Marshal(s.values()) }

// AnswerChecksSHA256 is the hex SHA-256 of the check-set file the spec's
// answer_checks named, as loaded with the config ("" for builtin or none):
// a schedule's digest holds it, so that a reload after the file changed
// restarts the schedule.
func (s SweepSpec) AnswerChecksSHA256() string {
	if s.answers == nil {
		return ""
	}
	return s.answers.SHA256
}

// Retention bounds the run directories kept of one target and sweep name
// under --sweeps.dir: at most Count (default DefaultSweepKeep), none older
// than Age (0: no age limit). The newest successful one is always kept and
// counts toward Count.
type Retention struct {
	Count int      `yaml:"count,omitempty" json:"count,omitempty"`
	Age   Duration `yaml:"age,omitempty" json:"age,omitempty"`
}

// ScheduledSweep is one entry of a target's sweeps: block, a capacity sweep
// the daemon runs on a schedule: Every (an interval) or Cron (a standard
// five-field cron expression, or a descriptor such as @daily), exactly one,
// each run delayed by a random share of Jitter. Its other keys are the
// sweep's spec.
type ScheduledSweep struct {
	SweepSpec
	Every     Duration
	Cron      string
	Jitter    Duration
	Retention Retention
}

// UnmarshalYAML splits the entry into its schedule and its spec (the
// document's strictness holds for the workload).
func (s *ScheduledSweep) UnmarshalYAML(unmarshal func(any) error) error {
	var v sweepSpecYAML
	if err := unmarshal(&v); err != nil {
		return err
	}
	*s = ScheduledSweep{SweepSpec: SweepSpec{Workload: v.Workload, Keys: v.Keys}, Every: v.Every, Cron: v.Cron,
		Jitter: v.Jitter, Retention: v.Retention}
	return nil
}

// MarshalYAML writes the entry as one mapping: its schedule and its spec.
func (s ScheduledSweep) MarshalYAML() (any, error) {
	return sweepSpecYAML{Every: s.Every, Cron: s.Cron, Jitter: s.Jitter, Retention: s.Retention,
		Workload: s.Workload, Keys: s.Keys}, nil
}

// MarshalJSON writes the entry as one object: its schedule and its spec.
func (s ScheduledSweep) MarshalJSON() ([]byte, error) {
	m := s.values()
	m["every"], m["cron"], m["jitter"], m["retention"] = s.Every, s.Cron, s.Jitter, s.Retention
	return json.Marshal(m)
}

// Schedule returns the sweep's schedule: its next run after a given time,
// before jitter.
func (s ScheduledSweep) Schedule() (cron.Schedule, error) {
	if s.Cron != "" {
		return cronParser.Parse(s.Cron)
	}
	if s.Every <= 0 {
		return nil, errors.New("no schedule")
	}
	return cron.Every(time.Duration(s.Every)), nil
}

// Keep returns Retention.Count, or DefaultSweepKeep when left out.
func (r Retention) Keep() int {
	if r.Count > 0 {
		return r.Count
	}
	return DefaultSweepKeep
}

// cronParser reads the five standard fields and the @descriptors (@daily,
// @every 6h).
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// sweepCheck builds a scheduled sweep's spec against its target at load
// (prober/sweep.FromSpec, registered by that package): nil in a program
// that does not link the sweep engine, which runs no sweep.
var sweepCheck func(SweepSpec, TargetConfig) error

// RegisterSweepCheck sets the check of every scheduled sweep at load:
// prober/sweep registers FromSpec when it is linked, so that the daemon's
// config imports no sweep engine and still refuses, at load, a sweep that
// cannot run. Its error is a *SpecError (or one naming a spec key).
func RegisterSweepCheck(check func(SweepSpec, TargetConfig) error) { sweepCheck = check }

// LoadedTrace is workload.trace's file as loaded with the config
// (readSweepFiles); nil for a spec that did not come from a config file.
func (s SweepSpec) LoadedTrace() *workload.Trace { return s.trace }

// LoadedAnswers is answer_checks's file as loaded with the config
// (readSweepFiles); nil for builtin and for a spec that did not come from
// a config file.
func (s SweepSpec) LoadedAnswers() *answer.Set { return s.answers }

// ValidateSweepName checks a sweep's name ([a-zA-Z0-9_.:-]+), as a
// probe's.
func ValidateSweepName(name string) error { return validateName(name) }

// SpecError is the error of a sweep spec that names its key: Key is the
// spec key at fault ("rates", "goodput", ...; "" when no key is to blame)
// and Err the reason.
type SpecError struct {
	Key string
	Err error
}

// Error formats the error as "key: reason".
func (e *SpecError) Error() string {
	if e.Key == "" {
		return e.Err.Error()
	}
	return e.Key + ": " + e.Err.Error()
}

// Unwrap returns the reason.
func (e *SpecError) Unwrap() error { return e.Err }

// AsSpecError returns a spec's error (prober/sweep.FromSpec's,
// CheckNoFiles's) as a *SpecError (nil for nil).
func AsSpecError(err error) *SpecError {
	if err == nil {
		return nil
	}
	if fes := flatten(err); len(fes) > 0 {
		return fes[0]
	}
	return &SpecError{Err: err}
}

// validateMaxSweepRate checks max_sweep_rate: 0 (no cap) or > 0 and at
// most arrival.MaxRate.
func validateMaxSweepRate(v float64) error {
	if math.IsInf(v, 0) || !(v >= 0) {
		return fmt.Errorf("must be >= 0 and finite (0: no cap), got %v", v)
	}
	if v > arrival.MaxRate {
		return fmt.Errorf("must be <= %v (the most arrivals per second an arrival process yields), got %v", float64(arrival.MaxRate), v)
	}
	return nil
}

// validateSweeps checks the target's max_sweep_rate and sweeps: each entry
// builds a valid sweep against t (sweepCheck), has a valid schedule and
// retention, and names are unique in the target.
func (t TargetConfig) validateSweeps() error {
	var l problems
	if l.add("max_sweep_rate", validateMaxSweepRate(t.MaxSweepRate)) {
		t.MaxSweepRate = 0
	}
	if len(t.Sweeps) > MaxSweepsPerTarget {
		l.add("sweeps", fmt.Errorf("at most %d scheduled sweeps a target, got %d", MaxSweepsPerTarget, len(t.Sweeps)))
	}
	seen := map[string]int{}
	for i, s := range t.Sweeps {
		path := fmt.Sprintf("sweeps[%d]", i)
		name := s.Name()
		if name == "" {
			l.add(path+".name", errors.New("required"))
		} else if j, dup := seen[name]; dup {
			l.add(path+".name", fmt.Errorf("duplicate sweep name %q (also sweeps[%d])", name, j))
		} else {
			seen[name] = i
		}
		if sweepCheck != nil { // an unknown key is reported beside a missing name
			l.add(path, sweepCheck(s.SweepSpec, t))
		}
		switch {
		case s.Every != 0 && s.Cron != "":
			l.add(path+".every", errors.New("set either every or cron, not both"))
		case s.Cron != "":
			if _, err := cronParser.Parse(s.Cron); err != nil {
				l.add(path+".cron", fmt.Errorf("invalid cron expression %q: %w", s.Cron, err))
			}
		case s.Every == 0:
			l.add(path+".every", errors.New("required: an interval such as 24h, or cron: an expression"))
		case time.Duration(s.Every) < MinSweepInterval:
			l.add(path+".every", fmt.Errorf("must be >= %v, got %v", MinSweepInterval, time.Duration(s.Every)))
		}
		switch {
		case s.Jitter < 0:
			l.add(path+".jitter", fmt.Errorf("must be >= 0, got %v", time.Duration(s.Jitter)))
		case s.Every > 0 && s.Jitter >= s.Every:
			l.add(path+".jitter", fmt.Errorf("must be < every (%v), got %v", time.Duration(s.Every), time.Duration(s.Jitter)))
		}
		if s.Retention.Count < 0 {
			l.add(path+".retention.count", fmt.Errorf("must be >= 1, got %d", s.Retention.Count))
		}
		if s.Retention.Age < 0 {
			l.add(path+".retention.age", fmt.Errorf("must be >= 0 (0: no age limit), got %v", time.Duration(s.Retention.Age)))
		}
	}
	return l.err()
}
