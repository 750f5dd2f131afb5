package sweep

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/llmprobe/llmprobe/prober/config"
)

// A spec's keys are decoded one by one through the settings table: the
// row whose Key a key is gives its type (Kind), its bound (Apply) and its
// default (SpecDefault, else Default) when the key is left out. A key no
// row has is refused. A zero value stands for the default, as a key left
// out does. The rows of the random workload's lengths (Workload.*) are
// kept for FlagWorkload, which builds the workload of all four.

// specKeys are a spec's decoded keys: the keys given (with a value other
// than zero), the random workload's lengths (given or defaulted) and
// whether one was given.
type specKeys struct {
	given   map[string]bool
	lengths map[string]any
	random  bool
}

// lookupKey returns the spec row of a key (nil when none).
func lookupKey(key string) *Setting {
	return lookup(func(s *Setting) bool { return s.Key == key && s.isSpecKey() })
}

// isSpecKey reports whether a spec gives the setting by its Key.
func (s *Setting) isSpecKey() bool { return s.Key != "" && s.Surfaces&SurfaceSpec != 0 && !s.Internal }

// unknownKey is the error of a key no spec row has, with a hint where it
// belongs or which key it probably is (config.KeyHint).
func unknownKey(key string) error {
	if key == "" {
		return specErrf(`""`, "unknown key: a key needs a name")
	}
	var keys []string
	for _, s := range settingsTable {
		if s.isSpecKey() {
			keys = append(keys, s.Key)
		}
	}
	if h := config.KeyHint(key, keys...); h != "" {
		return specErrf(key, "unknown key (%s)", h)
	}
	return specErrf(key, "unknown key")
}

// specDecoders decode the keys whose value is no scalar of their row's
// kind, or whose value means something else in a spec, into c.
var specDecoders = map[string]func(c *Config, n *yaml.Node) error{
	"Rates": func(c *Config, n *yaml.Node) error {
		if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" && strings.EqualFold(n.Value, "auto") {
			return LookupField("Rates").Apply(c, "auto")
		}
		var vs []float64
		if n.Kind != yaml.SequenceNode || n.Decode(&vs) != nil || len(vs) == 0 {
			return errors.New(`must be "auto" or a list of rates in req/s such as [1, 2, 4]`)
		}
		text := make([]string, len(vs))
		for i, v := range vs {
			text[i] = strconv.FormatFloat(v, 'g', -1, 64)
		}
		return LookupField("Rates").Apply(c, strings.Join(text, ","))
	},
	"Concurrency": func(c *Config, n *yaml.Node) error {
		var vs []int
		if n.Kind != yaml.SequenceNode || n.Decode(&vs) != nil || len(vs) == 0 {
			return errors.New("must be a list of concurrency levels such as [1, 4, 16]")
		}
		return LookupField("Concurrency").Apply(c, joinNumbers(vs))
	},
	"SLO": func(c *Config, n *yaml.Node) error {
		if err := n.Decode(&c.SLO); err != nil {
			return underKey("goodput", errors.New(stripLine(err)))
		}
		for _, th := range []struct {
			name string
			v    time.Duration
		}{{"ttft", c.SLO.TTFT}, {"tpot", c.SLO.TPOT}, {"e2el", c.SLO.E2EL}, {"ttfa", c.SLO.TTFA}} {
			if th.v > MaxTimeout {
				return &config.SpecError{Key: "goodput." + th.name, Err: fmt.Errorf("must be <= %v (no request runs longer), got %v", time.Duration(MaxTimeout), th.v)}
			}
		}
		return nil
	},
	// -1: no warmups (0, as a key left out, is the default).
	"Warmups": func(c *Config, n *yaml.Node) error {
		var v int
		if err := n.Decode(&v); err != nil {
			return kindError(KindInt, n)
		}
		switch v {
		case 0: // the default, as the key left out
			v = defaultOf[int]("Warmups")
		case -1:
			v = 0
		}
		return LookupField("Warmups").Apply(c, v)
	},
	// Set by specAnswerChecks: a set loaded with the config.
	"AnswerChecks": func(*Config, *yaml.Node) error { return nil },
}

// stripLine drops yaml's "line N: " from a decoding error (the config
// file's error names the line of the key).
func stripLine(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:\n  ")
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if _, after, ok := strings.Cut(rest, ": "); ok {
			return after
		}
	}
	return msg
}

// kindWords word a value of each kind, for a value of another type.
var kindWords = map[Kind]string{
	KindString: "text", KindBool: "true or false", KindInt: "an integer", KindInt64: "an integer",
	KindFloat: "a number", KindDuration: `a duration string such as "30s"`, KindStrings: "a list of strings",
}

// nodeWords word the type of a value as given (JSON's names; else string).
var nodeWords = map[string]string{"!!int": "number", "!!float": "number", "!!bool": "boolean", "!!null": "null", "!!seq": "array", "!!map": "object"}

// kindError is the error of a value n that is not of kind k.
func kindError(k Kind, n *yaml.Node) error {
	got, ok := nodeWords[n.ShortTag()]
	if !ok {
		got = "string"
	}
	return fmt.Errorf("want %s, got %s", kindWords[k], got)
}

// decodeKind decodes n as a value of kind k, as Setting.Apply takes it.
func decodeKind(k Kind, n *yaml.Node) (any, error) {
	if (k == KindString || k == KindDuration) && n.ShortTag() != "!!str" && (k == KindDuration || n.Kind != yaml.ScalarNode) {
		return nil, kindError(k, n)
	}
	if k == KindDuration {
		var d config.Duration
		if err := n.Decode(&d); err != nil {
			return nil, errors.New(stripLine(err))
		}
		return time.Duration(d), nil
	}
	v := reflect.New(k.Type())
	if err := n.Decode(v.Interface()); err != nil {
		return nil, kindError(k, n)
	}
	return v.Elem().Interface(), nil
}

// applySpec sets c from the spec's keys, each through its row, and every
// spec row left out at its default; then the rows marked DaemonDefault.
// Every key's problem is returned at once, each a *config.SpecError.
func applySpec(s config.SweepSpec, c *Config) (specKeys, error) {
	sp := specKeys{given: map[string]bool{}, lengths: map[string]any{}}
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(s.Keys)) {
		n := s.Keys[k]
		v := &n
		for v.Kind == yaml.AliasNode {
			v = v.Alias
		}
		if v.ShortTag() == "!!null" {
			continue
		}
		st := lookupKey(k)
		if st == nil {
			errs = append(errs, unknownKey(k))
			continue
		}
		if err := applyKey(st, c, v, &sp); err != nil {
			var se *config.SpecError
			if !errors.As(err, &se) {
				if se, _ = specError(err).(*config.SpecError); se == nil {
					se = &config.SpecError{Key: k, Err: err}
				}
			}
			errs = append(errs, se)
		}
	}
	for i := range settingsTable {
		st := &settingsTable[i]
		if !st.isSpecKey() || sp.given[st.Key] {
			continue
		}
		v := st.DefaultValue()
		if st.SpecDefault != "" {
			v = st.SpecDefault
		}
		switch {
		case v == nil:
		case strings.HasPrefix(st.Field, "Workload."):
			sp.lengths[st.Field] = v
		default:
			if err := st.Apply(c, v); err != nil {
				errs = append(errs, specError(err))
			}
		}
	}
	for _, st := range settingsTable {
		if st.DaemonDefault {
			if err := st.Apply(c, st.DefaultValue()); err != nil {
				errs = append(errs, specError(err))
			}
		}
	}
	return sp, errors.Join(errs...)
}

// applyKey decodes one given key's value n into c (a length of the random
// workload into sp) and records it as given unless it is zero.
func applyKey(st *Setting, c *Config, n *yaml.Node, sp *specKeys) error {
	if dec, ok := specDecoders[st.Field]; ok {
		sp.given[st.Key] = true
		return dec(c, n)
	}
	v, err := decodeKind(st.Kind, n)
	if err != nil {
		return err
	}
	if reflect.ValueOf(v).IsZero() {
		return nil // the default
	}
	sp.given[st.Key] = true
	if strings.HasPrefix(st.Field, "Workload.") {
		sp.lengths[st.Field], sp.random = v, true
		return nil
	}
	return st.Apply(c, v)
}
