package config

import (
	"errors"
	"reflect"
	"strings"
	"time"

	"github.com/llmprobe/llmprobe/prober/sweep"
)

// The settings of a sweep the daemon runs (a scheduled sweep's YAML, the
// sweep API's body) go through the sweep settings table
// (sweep.Settings): its keys, defaults and bounds, and the spelling of
// the settings an error names.

// specAliases spell the sweep.Config fields that no spec key sets but a
// spec key decides (the search's options come with rates: auto; a step's
// least requests with its duration; a trace with the workload's).
var specAliases = map[string]string{
	"Search.Start": "rates", "Search.MaxSteps": "rates", "Search.Tolerance": "rates", "MinPrompts": "num_prompts",
	"Trace": "workload.trace", "TraceSpeeds": "workload.trace.speeds",
}

// SpecKey returns the SweepSpec key (YAML and JSON) that a sweep.Config
// field path names (the settings table's key), "" when no key sets it (a
// target setting or a default).
func SpecKey(field string) string {
	if k := sweep.KeySpelling(field); k != "" {
		return k
	}
	return specAliases[field]
}

// daemonDefaults are the settings a daemon sweep takes at the settings
// table's default: the spec has no key for them.
var daemonDefaults = []string{"MetricsInterval", "IdleTimeout", "Search.MaxSteps", "Search.Tolerance",
	"Validity.MaxClientCPU", "Validity.MaxErrorRate"}

// specSpecial are the spec keys SweepConfig sets itself: the load, the
// workload, the SLO, the keys whose zero means something else and the
// answer checks (a set loaded with the config).
var specSpecial = map[string]bool{
	"name": true, "rates": true, "concurrency": true, "workload": true, "input_len": true, "output_len": true,
	"range_ratio": true, "prefix_len": true, "goodput": true, "warmups": true, "duration": true, "answer_checks": true,
}

// specValue returns the value of the spec's field of a key (by its yaml
// tag); ok is false when the field is zero.
func (s SweepSpec) specValue(key string) (v any, ok bool) {
	rv, rt := reflect.ValueOf(s), reflect.TypeFor[SweepSpec]()
	for i := 0; i < rt.NumField(); i++ {
		tag, _, _ := strings.Cut(rt.Field(i).Tag.Get("yaml"), ",")
		if tag != key {
			continue
		}
		f := rv.Field(i)
		if f.IsZero() {
			return nil, false
		}
		if d, isDur := f.Interface().(Duration); isDur {
			return time.Duration(d), true
		}
		return f.Interface(), true
	}
	return nil, false
}

// applySettings sets the table's spec settings of c from the spec, each
// left out at the table's default (the CLI's), through sweep.Setting.Apply
// (the table's bounds), and the settings the spec has no key for at their
// defaults.
func (s SweepSpec) applySettings(c *sweep.Config) error {
	for _, st := range sweep.Settings() {
		if st.Surfaces&sweep.SurfaceSpec == 0 || specSpecial[st.Key] {
			continue
		}
		v, ok := s.specValue(st.Key)
		if !ok {
			if v = st.DefaultValue(); v == nil {
				continue
			}
		}
		if err := st.Apply(c, v); err != nil {
			return err
		}
	}
	for _, f := range daemonDefaults {
		st := sweep.LookupField(f)
		if err := st.Apply(c, st.DefaultValue()); err != nil {
			return err
		}
	}
	return nil
}

// defaultOf is the table's default of a field.
func defaultOf[T any](field string) T { return sweep.LookupField(field).DefaultValue().(T) }

// specError maps a *sweep.FieldError to the spec key that sets the field
// (a *fieldError with that path), the settings its reason refers to
// spelled as keys; other errors pass through.
func specError(err error) error {
	var fe *sweep.FieldError
	if errors.As(err, &fe) {
		if k := SpecKey(fe.Field); k != "" {
			return &fieldError{path: k, err: errors.New(fe.Reason(SpecKey))}
		}
	}
	return err
}

// SpecErrorText is err's message with a *sweep.FieldError in it spelled
// as a spec's keys ("input_len: input_len 9000 + output_len 16 = ..."): the
// daemon's text of an error a sweep met after its spec was accepted (the
// preflight's max_model_len check).
func SpecErrorText(err error) string {
	var fe *sweep.FieldError
	if !errors.As(err, &fe) {
		return err.Error()
	}
	name := fe.Field
	if k := SpecKey(fe.Field); k != "" {
		name = k
	}
	return strings.Replace(err.Error(), fe.Error(), name+": "+fe.Reason(SpecKey), 1)
}
