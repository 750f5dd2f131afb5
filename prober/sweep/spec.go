package sweep

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/llmprobe/llmprobe/prober/answer"
	"github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/knob"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// A sweep the daemon runs (a scheduled sweep's YAML, the sweep API's body:
// a config.SweepSpec) becomes a Config here, through the settings table:
// its keys, defaults and bounds, and the spelling of the settings an error
// names. prober/config holds the spec as data and asks this package, at
// load, whether each scheduled sweep builds (config.RegisterSweepCheck).

func init() {
	config.RegisterSweepCheck(func(s config.SweepSpec, t config.TargetConfig) error {
		_, err := FromSpec(s, t)
		return err
	})
}

// DefaultSpecName names a sweep started through the API without a name
// (the Name row's SpecDefault).
var DefaultSpecName = LookupField("Name").SpecDefault

// FromSpec builds the Config of spec against target t: base URL, metrics
// URL, model, API, API key and timeouts from t, the load and workload from
// the spec with the settings table's defaults (the sweep CLI's), and t's
// max_sweep_rate enforced (an open-loop rate above it, a closed loop, or
// rates auto searching above it are refused; auto is capped at it). OutDir
// is left empty for the caller. An error is a *config.SpecError whose Key
// is the spec key at fault (its reason names other settings by their
// keys).
func FromSpec(s config.SweepSpec, t config.TargetConfig) (Config, error) {
	c := Config{
		Target:       t.BaseURL,
		MetricsURL:   t.MetricsURL(),
		Model:        t.Model,
		API:          t.API,
		APIKey:       t.APIKey(),
		HTTPConfig:   t.HTTPConfig,
		Timeout:      t.Timeout,
		TTFTTimeout:  t.TTFTTimeout,
		StallTimeout: t.StallTimeout,
		// The target's attribution_headers: its sweeps record them too.
		AttributionHeaders: t.AttributionHeaders,
		// and its slo_headers.
		SLOHeaders: t.SLOHeaders,
		// The target's GPU energy source (issue 38).
		GPUMetricsURL: t.GPUMetricsURL, GPUSelector: t.GPUSelector,
	}
	if !t.ServerTiming {
		c.ServerTiming = ServerTimingOff // the target's server_timing: false
	}
	sp, err := applySpec(s, &c)
	if err != nil {
		return c, err
	}
	c.Metadata = map[string]string{"target": t.Name, "sweep": c.Name}
	if !sp.given["duration"] && c.NumPrompts > 0 {
		c.Duration = 0 // num_prompts bounds the steps
	}
	if c.Duration > 0 {
		c.MinPrompts = defaultOf[int]("MinPrompts")
	}
	if c.SLO.IsZero() {
		c.SLO = t.SLO
	}
	if err := config.ValidateSweepName(c.Name); err != nil {
		return c, specErrf("name", "%w", err)
	}
	if err := specWorkload(s, sp, &c); err != nil {
		return c, err
	}
	if err := specLoad(s, &c, t); err != nil {
		return c, err
	}
	if err := specAnswerChecks(s, &c); err != nil {
		return c, err
	}
	c.OutDir = "-" // checked by the caller, which sets it
	err = c.Validate()
	c.OutDir = ""
	if err != nil {
		return c, specError(err)
	}
	if err := checkStepBudget(c); err != nil {
		return c, specError(err)
	}
	return c, nil
}

// specErrf is the *config.SpecError of a spec key.
func specErrf(key, format string, args ...any) error {
	return &config.SpecError{Key: key, Err: fmt.Errorf(format, args...)}
}

// isTraceSpec reports whether the spec replays a trace (workload.trace).
func isTraceSpec(s config.SweepSpec) bool { return s.Workload != nil && s.Workload.Trace != nil }

// specWorkload sets c's workload: a trace's, the spec's workload, or vllm
// bench serve's random one of input_len, output_len, range_ratio and
// prefix_len (the settings table's defaults).
func specWorkload(s config.SweepSpec, sp specKeys, c *Config) error {
	switch {
	case isTraceSpec(s):
		if err := specTrace(s, sp, c); err != nil {
			return err
		}
		if !sp.given["duration"] {
			c.Duration, c.MinPrompts = 0, 0 // the whole trace
		}
	case s.Workload != nil && sp.random:
		return specError(ProblemError(knob.WorkloadOrLengths(true, true)))
	case s.Workload != nil:
		c.Workload, c.WorkloadSource = *s.Workload, "config"
		if c.Workload.Dataset == nil && (c.Workload.InputTokens.Dist == "" || c.Workload.OutputTokens.Dist == "") {
			return specErrf("workload", "needs input_tokens and output_tokens")
		}
	default:
		w, err := FlagWorkload(sp.lengths["Workload.InputTokens"].(int), sp.lengths["Workload.OutputTokens"].(int),
			sp.lengths["Workload.InputTokens.RangeRatio"].(float64), sp.lengths["Workload.PrefixTokens"].(int))
		if err != nil {
			return specError(err)
		}
		c.Workload, c.WorkloadSource = w, "flags"
	}
	return nil
}

// specLoad sets c's load (rates, auto or concurrency; a trace's speeds
// were set with its workload) within t's max_sweep_rate.
func specLoad(s config.SweepSpec, c *Config, t config.TargetConfig) error {
	switch {
	case isTraceSpec(s): // its speeds, checked by specTrace; their mean rates here
		if err := checkTraceRate(c.Trace, c.NumPrompts, c.Duration, c.TraceSpeeds, t.MaxSweepRate); err != nil {
			return err
		}
	case (c.Auto || len(c.Rates) > 0) && len(c.Concurrency) > 0:
		return specError(ProblemError(knob.RatesOrConcurrency(true, true)))
	case c.Auto || len(c.Rates) > 0 || len(c.Concurrency) > 0:
	default:
		return specErrf("rates", `required: "auto", a list of rates, or concurrency levels`)
	}
	if max := t.MaxSweepRate; max > 0 {
		for _, r := range c.Rates {
			if r > max {
				return specErrf("rates", "rate %v req/s is over the target's max_sweep_rate (%v req/s)", r, max)
			}
		}
		if len(c.Concurrency) > 0 {
			return specErrf("concurrency", "the target has a max_sweep_rate (%v req/s), which a closed loop cannot keep: use rates", max)
		}
		if c.Auto {
			c.Search.Start = math.Min(DefaultAutoStart, max)
			c.Search.MaxRate = max
		}
	}
	return nil
}

// specTrace fills the trace replay of a spec whose workload has a trace:
// the trace loaded with the config (an error when it was not: only a
// config file's scheduled sweeps load one), the speeds, the workload of
// the warmups and request features. Rates and concurrency are refused:
// the trace has its own timing.
func specTrace(s config.SweepSpec, sp specKeys, c *Config) error {
	ts := s.Workload.Trace
	if err := s.Workload.Validate(); err != nil {
		return underKey("workload", err)
	}
	tr := s.LoadedTrace()
	if tr == nil {
		return specErrf("workload.trace", "not loaded: a trace is read when the config file is loaded (a scheduled sweep's workload)")
	}
	if c.Auto || len(c.Rates) > 0 || len(c.Concurrency) > 0 {
		key := "rates"
		if len(c.Concurrency) > 0 {
			key = "concurrency"
		}
		return specErrf(key, "a trace replay has its own timing: give workload.trace.speeds, not rates or concurrency")
	}
	if err := ProblemError(knob.WorkloadOrLengths(true, sp.random)); err != nil {
		return specError(err)
	}
	w := workload.DefaultSpec() // the warmups' plain prompts, as sweep --trace
	w.IgnoreEOS, w.Request = s.Workload.IgnoreEOS, s.Workload.Request
	c.Workload, c.WorkloadSource, c.Trace, c.TraceSpeeds = w, "config", tr, ts.SpeedsOrDefault()
	return nil
}

// underKey prefixes a "key: why" error of a spec's own Validate with
// prefix, as a *config.SpecError ("workload.trace.speeds", why).
func underKey(prefix string, err error) error {
	if key, why, ok := strings.Cut(err.Error(), ": "); ok && !strings.Contains(key, " ") {
		return &config.SpecError{Key: prefix + "." + key, Err: errors.New(why)}
	}
	return &config.SpecError{Key: prefix, Err: err}
}

// checkTraceRate refuses a replay speed whose mean rate is over the
// target's max_sweep_rate (0: no cap).
func checkTraceRate(tr *workload.Trace, numPrompts int, d time.Duration, speeds []float64, maxRate float64) error {
	if maxRate <= 0 {
		return nil
	}
	for _, sp := range speeds {
		n := tr.Cut(numPrompts, d, sp)
		if r := tr.MeanRate(n, sp); r > maxRate {
			return specErrf("workload.trace.speeds", "speed %v replays %.4g req/s on average, over the target's max_sweep_rate (%v req/s)", sp, r, maxRate)
		}
	}
	return nil
}

// specAnswerChecks sets c's answer checks: the builtin set, or the file
// loaded with the config (an error when it was not: only a config file's
// scheduled sweeps load one). Config.Validate checks that the target's API
// can send every check.
func specAnswerChecks(s config.SweepSpec, c *Config) error {
	switch checks, _ := s.Text("answer_checks"); {
	case checks == "":
	case checks == answer.BuiltinName:
		c.AnswerChecks = answer.Builtin()
	case s.LoadedAnswers() == nil:
		return specErrf("answer_checks", "not loaded: a check set file is read when the config file is loaded (a scheduled sweep's answer_checks)")
	default:
		c.AnswerChecks = s.LoadedAnswers()
	}
	return nil
}

// checkStepBudget refuses an open-loop sweep whose highest rate over its
// duration makes a step of more than MaxStepRequests requests, naming
// Duration (and Rates) so that the spec's error names the keys: the sweep
// itself finds it only at that step, after the lower ones ran, and names
// the CLI flag (issue 22 D8). The highest rate is the list's, or the
// search's MaxRate for rates auto (max_sweep_rate); a closed loop, a trace
// or num_prompts is bounded elsewhere.
func checkStepBudget(c Config) error {
	if c.NumPrompts > 0 || c.Duration <= 0 || c.Trace != nil {
		return nil
	}
	rate := 0.0
	switch {
	case len(c.Rates) > 0:
		rate = slices.Max(c.Rates)
	case c.Auto && c.Search.MaxRate > 0:
		rate = c.Search.MaxRate
	default:
		return nil
	}
	send := rate
	if c.Sharded() {
		send /= float64(c.ShardCount)
	}
	if n := math.Round(send * c.Duration.Seconds()); n > MaxStepRequests {
		return &FieldError{Field: "Duration", Err: fmt.Errorf(
			"{Duration} %s at {Rates} %g req/s makes %.0f requests per step, more than %d: shorten {Duration} or lower {Rates}",
			c.Duration.Round(time.Millisecond), rate, n, MaxStepRequests)}
	}
	return nil
}

// SpecKey returns the spec key (YAML and JSON) that a Config field path
// names (the settings table's Key, or SpecVia of a field a key decides),
// "" when no key sets it (a target setting or a default).
func SpecKey(field string) string {
	if s := LookupField(field); s != nil {
		if s.Key != "" {
			return s.Key
		}
		return s.SpecVia
	}
	return ""
}

// defaultOf is the table's default of a field.
func defaultOf[T any](field string) T { return LookupField(field).DefaultValue().(T) }

// specError maps a *FieldError to the *config.SpecError of the spec key
// that sets the field, the settings its reason refers to spelled as keys;
// other errors pass through.
func specError(err error) error {
	var fe *FieldError
	if errors.As(err, &fe) {
		if k := SpecKey(fe.Field); k != "" {
			return &config.SpecError{Key: k, Err: errors.New(fe.Reason(SpecKey))}
		}
	}
	return err
}

// SpecErrorText is err's message with a *FieldError in it spelled as a
// spec's keys ("input_len: input_len 9000 + output_len 16 = ..."): the
// daemon's text of an error a sweep met after its spec was accepted (the
// preflight's max_model_len check).
func SpecErrorText(err error) string { return ErrorText(err, SpecKey) }

// ErrorText is err's message with a *FieldError in it as "name: reason",
// the field and the settings its reason refers to spelled by spell (a
// field spell has no name for keeps its path): SpecErrorText, and the
// commands' text of a flag's error (spell FlagSpelling).
func ErrorText(err error, spell Spelling) string {
	var fe *FieldError
	if !errors.As(err, &fe) {
		return err.Error()
	}
	name := fe.Field
	if n := spell(fe.Field); n != "" {
		name = n
	}
	return strings.Replace(err.Error(), fe.Error(), name+": "+fe.Reason(spell), 1)
}
