package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"go.yaml.in/yaml/v3"

	"github.com/llmprobe/llmprobe/prober/answer"
	"github.com/llmprobe/llmprobe/prober/arrival"
	"github.com/llmprobe/llmprobe/prober/slo"
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

// Rates are the open-loop rates of a sweep: "auto" (the adaptive knee
// search) or a list of rates in requests per second. The zero value is
// neither (Concurrency is then required).
type Rates struct {
	Auto   bool
	Values []float64
}

// IsZero reports whether neither auto nor any rate is set.
func (r Rates) IsZero() bool { return !r.Auto && len(r.Values) == 0 }

// String is "auto" or the rates joined with commas (sweep --rates syntax).
func (r Rates) String() string {
	if r.Auto {
		return "auto"
	}
	parts := make([]string, len(r.Values))
	for i, v := range r.Values {
		parts[i] = strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strings.Join(parts, ",")
}

var errRatesShape = errors.New(`must be "auto" or a list of rates in req/s such as [1, 2, 4]`)

// UnmarshalYAML reads `auto` or a sequence of numbers.
func (r *Rates) UnmarshalYAML(n *yaml.Node) error {
	n = resolveAlias(n)
	switch n.Kind {
	case yaml.ScalarNode:
		if n.ShortTag() == "!!str" && strings.EqualFold(n.Value, "auto") {
			*r = Rates{Auto: true}
			return nil
		}
	case yaml.SequenceNode:
		var vs []float64
		if err := n.Decode(&vs); err != nil {
			return fmt.Errorf("line %d: rates %w", n.Line, errRatesShape)
		}
		*r = Rates{Values: vs}
		return nil
	}
	return fmt.Errorf("line %d: rates %w", n.Line, errRatesShape)
}

// MarshalYAML writes "auto" or the list.
func (r Rates) MarshalYAML() (any, error) {
	if r.Auto {
		return "auto", nil
	}
	return r.Values, nil
}

// UnmarshalJSON reads "auto" or an array of numbers.
func (r *Rates) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		if strings.EqualFold(s, "auto") {
			*r = Rates{Auto: true}
			return nil
		}
		return errRatesShape
	}
	var vs []float64
	if err := json.Unmarshal(b, &vs); err != nil {
		return errRatesShape
	}
	*r = Rates{Values: vs}
	return nil
}

// MarshalJSON writes "auto" or the array.
func (r Rates) MarshalJSON() ([]byte, error) {
	if r.Auto {
		return []byte(`"auto"`), nil
	}
	if r.Values == nil {
		return []byte("[]"), nil
	}
	return json.Marshal(r.Values)
}

// SweepSpec is the load and workload of one sweep the daemon runs: a
// target's sweeps: entry, or the body of POST /api/v1/sweeps (beside its
// target). The keys are the sweep CLI's flags with underscores. Every field
// left zero takes the CLI's default; the SLO defaults to the target's slo.
type SweepSpec struct {
	// Name names the sweep: the sweep label of its metrics and the suffix
	// of its run directories ([a-zA-Z0-9_.:-]+; "api" for an API
	// sweep without one: the Name row's SpecDefault).
	Name string `yaml:"name" json:"name,omitempty"`
	// Rates ("auto" or a list) or Concurrency (closed-loop levels): exactly
	// one is set.
	Rates       Rates `yaml:"rates,omitempty" json:"rates,omitzero"`
	Concurrency []int `yaml:"concurrency,omitempty" json:"concurrency,omitempty"`
	// MaxConcurrency caps the requests in flight of an open loop (0: none).
	MaxConcurrency int `yaml:"max_concurrency,omitempty" json:"max_concurrency,omitempty"`
	// Arrival ("poisson", "gamma", "constant"; default poisson) and its
	// gamma shape Burstiness (default 1).
	Arrival    string  `yaml:"arrival,omitempty" json:"arrival,omitempty"`
	Burstiness float64 `yaml:"burstiness,omitempty" json:"burstiness,omitempty"`
	// NumPrompts (requests per step) or Duration (per step, default
	// sweep.DefaultDuration with at least sweep.DefaultMinPrompts requests).
	NumPrompts int      `yaml:"num_prompts,omitempty" json:"num_prompts,omitempty"`
	Duration   Duration `yaml:"duration,omitempty" json:"duration,omitempty"`
	// Workload is the request distribution (as a probe's workload:), or
	// InputLen, OutputLen, RangeRatio and PrefixLen build vllm bench
	// serve's random one; not both. Default: workload.DefaultSpec().
	Workload   *workload.Spec `yaml:"workload,omitempty" json:"workload,omitempty"`
	InputLen   int            `yaml:"input_len,omitempty" json:"input_len,omitempty"`
	OutputLen  int            `yaml:"output_len,omitempty" json:"output_len,omitempty"`
	RangeRatio float64        `yaml:"range_ratio,omitempty" json:"range_ratio,omitempty"`
	PrefixLen  int            `yaml:"prefix_len,omitempty" json:"prefix_len,omitempty"`
	// Goodput is the SLO a good request meets (default: the target's slo).
	Goodput slo.SLO `yaml:"goodput,omitempty" json:"goodput,omitzero"`
	// Rounds (default 1), Warmups (default sweep.DefaultWarmups; -1 for
	// none) and Seed (default 0).
	Rounds  int   `yaml:"rounds,omitempty" json:"rounds,omitempty"`
	Warmups int   `yaml:"warmups,omitempty" json:"warmups,omitempty"`
	Seed    int64 `yaml:"seed,omitempty" json:"seed,omitempty"`
	// PromptNonce is mixed into the prompt texts (sweep.Config.PromptNonce;
	// 0, the default: a fresh one per run).
	PromptNonce int64 `yaml:"prompt_nonce,omitempty" json:"prompt_nonce,omitempty"`
	// MaxSendLag is the validity threshold of the client's send-lag p99
	// (default sweep.DefaultMaxSendLag): a step above it is flagged
	// client-saturated.
	MaxSendLag Duration `yaml:"max_send_lag,omitempty" json:"max_send_lag,omitempty"`
	// MaxSchedLatency is the validity threshold of the Go
	// scheduling-latency p99 over a step (default
	// sweep.DefaultMaxSchedLatency): a step above it is flagged
	// client-read-lag.
	MaxSchedLatency Duration `yaml:"max_sched_latency,omitempty" json:"max_sched_latency,omitempty"`
	// MaxClientCPU is the validity threshold of the process's CPU use over
	// a step, in cores (default sweep.DefaultMaxClientCPU): a step above it
	// is flagged client-saturated. A daemon's process also runs its
	// probes, discovery and scrapes, so a busy daemon may need it raised.
	MaxClientCPU float64 `yaml:"max_client_cpu,omitempty" json:"max_client_cpu,omitempty"`
	// SweepMode is isolated (default) or background, and BackgroundBand
	// the background mode's band of the production rate (default
	// sweep.DefaultBackgroundBand); docs/sweep.md#background-sweeps.
	SweepMode      string  `yaml:"sweep_mode,omitempty" json:"sweep_mode,omitempty"`
	BackgroundBand float64 `yaml:"background_band,omitempty" json:"background_band,omitempty"`
	// TraceSampleRatio is the share of the sweep's requests traced with
	// the daemon's tracing on (default sweep.DefaultTraceSampleRatio).
	TraceSampleRatio float64 `yaml:"trace_sample_ratio,omitempty" json:"trace_sample_ratio,omitempty"`
	// AnswerChecks is the answer-check set sent once after the last step
	// of a complete sweep (sweep.Config.AnswerChecks): "builtin", or in a
	// scheduled sweep the path of a JSONL check set, relative to the config
	// file's directory (read at load; the sweep API takes builtin only:
	// CheckNoFiles). Empty: none.
	AnswerChecks string `yaml:"answer_checks,omitempty" json:"answer_checks,omitempty"`

	// trace is Workload.Trace's file as loaded with the config
	// (readSweepFiles); nil for a spec that did not come from a config file.
	trace *workload.Trace
	// answers is AnswerChecks's file as loaded with the config
	// (readSweepFiles); nil for builtin and for a spec that did not come
	// from a config file.
	answers *answer.Set
}

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
// each run delayed by a random share of Jitter.
type ScheduledSweep struct {
	SweepSpec `yaml:",inline"`
	Every     Duration  `yaml:"every,omitempty" json:"every,omitempty"`
	Cron      string    `yaml:"cron,omitempty" json:"cron,omitempty"`
	Jitter    Duration  `yaml:"jitter,omitempty" json:"jitter,omitempty"`
	Retention Retention `yaml:"retention,omitempty" json:"retention,omitzero"`
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
	fes := flatten(err)
	if len(fes) == 0 {
		return &SpecError{Err: err}
	}
	return &SpecError{Key: fes[0].path, Err: fes[0].err}
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
		for _, th := range []struct {
			name string
			v    time.Duration
		}{{"ttft", s.Goodput.TTFT}, {"tpot", s.Goodput.TPOT}, {"e2el", s.Goodput.E2EL}, {"ttfa", s.Goodput.TTFA}} {
			if th.v > MaxTimeout {
				l.add(path+".goodput."+th.name, fmt.Errorf("must be <= %v (no request runs longer), got %v", time.Duration(MaxTimeout), th.v))
			}
		}
		if s.Name == "" {
			l.add(path+".name", errors.New("required"))
		} else if j, dup := seen[s.Name]; dup {
			l.add(path+".name", fmt.Errorf("duplicate sweep name %q (also sweeps[%d])", s.Name, j))
		} else {
			seen[s.Name] = i
		}
		if s.Name != "" && sweepCheck != nil {
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
