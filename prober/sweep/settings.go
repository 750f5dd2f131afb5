package sweep

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Surface is a set of the places a sweep setting is given: the sweep and
// compare commands' flags, the YAML of a scheduled sweep and the body of
// the sweep API (one spelling: SweepSpec).
type Surface uint8

// The surfaces of a setting.
const (
	// SurfaceSweep is `llmprobe sweep`'s flags.
	SurfaceSweep Surface = 1 << iota
	// SurfaceCompare is `llmprobe compare`'s copy of the sweep flags.
	SurfaceCompare
	// SurfaceSpec is a scheduled sweep's YAML (targets[].sweeps[]) and the
	// body of POST /api/v1/sweeps (prober/config.SweepSpec).
	SurfaceSpec
)

// Kind is the type of a setting's value as a surface gives it.
type Kind uint8

// The kinds of a setting.
const (
	KindString   Kind = iota + 1 // text
	KindBool                     // a switch
	KindInt                      // an integer
	KindInt64                    // a 64-bit integer
	KindFloat                    // a number
	KindDuration                 // a Go duration ("5s")
	KindStrings                  // repeatable text
)

// kindTypes are the Go types of the kinds' values.
var kindTypes = map[Kind]reflect.Type{
	KindString: reflect.TypeFor[string](), KindBool: reflect.TypeFor[bool](), KindInt: reflect.TypeFor[int](),
	KindInt64: reflect.TypeFor[int64](), KindFloat: reflect.TypeFor[float64](),
	KindDuration: reflect.TypeFor[time.Duration](), KindStrings: reflect.TypeFor[[]string](),
}

// Type is the Go type of a value of kind k, as Setting.Apply takes it
// and a command's flag holds it.
func (k Kind) Type() reflect.Type { return kindTypes[k] }

// Bound is the range a setting's number (or each number of its list) must
// lie in; a zero Bound has no limit.
type Bound struct {
	Min, Max         float64
	HasMin, HasMax   bool
	MinOpen, MaxOpen bool // the bound itself is excluded
	// Finite refuses ±Inf and NaN.
	Finite bool
	// ZeroDefault: a zero in a Config stands for the default (a Config
	// built by hand leaves it out); a surface that is given a zero checks
	// it against the bound like any value.
	ZeroDefault bool
	// Text replaces the generated "must be ..." phrase; MaxText replaces
	// it for a value above Max only.
	Text, MaxText string
	// MaxLen bounds the number of elements of a list setting (levels,
	// speeds, percentiles); 0: no bound. Min and Max then bound each
	// element.
	MaxLen int
}

// Setting describes one sweep setting: its Config field, type, default,
// bounds, unit, doc and its spelling on each surface.
type Setting struct {
	// Field is the Go field path in Config ("Validity.MaxSendLag"). The
	// settings of the commands alone (--no-progress, --push.url) are no
	// row of this table: internal/rundir holds them.
	Field string
	// Flag is the CLI flag ("max-send-lag"), Key the YAML / JSON key of a
	// scheduled sweep and the sweep API ("max_send_lag"); "" where none.
	Flag, Key string
	Kind      Kind
	// Default is the default as a flag takes it ("10ms"); "" for none.
	// CompareDefault, when set, is compare's own (its --rounds counts
	// both sides).
	// SpecDefault, when set, is the default of a sweep the daemon runs
	// (an API sweep's name).
	Default, CompareDefault, SpecDefault string
	Bound                                Bound
	// SpecVia is the spec key that decides a field no spec key sets
	// (the search's options come with rates: auto, a step's least
	// requests with its num_prompts or duration, a replay with
	// workload.trace): an error about the field names that key.
	SpecVia string
	// DaemonDefault: a sweep the daemon runs, which has no key for it,
	// takes Default (a spec leaves every other setting without a key to
	// its target or to the Config's zero).
	DaemonDefault bool
	// Unit is the unit of a number ("req/s", "USD per hour").
	Unit string
	// Doc is the flag's help, one line; CompareDoc compare's own.
	Doc, CompareDoc string
	// Surfaces are where it is given; 0 with Internal: set by the
	// program, never by a user.
	Surfaces Surface
	// CompareHidden: compare takes the flag but hides it (each side has
	// its own target; the knee search is not offered).
	CompareHidden bool
	// Internal marks a Config field that is no user setting (the
	// program fills it: Embedded, RatesText, a parsed Trace).
	Internal bool
}

// Settings returns the table of sweep settings, in the order of `llmprobe
// sweep --help` (the commands' own flags, internal/rundir's, between
// them). The caller must not modify it.
func Settings() []Setting { return settingsTable }

// LookupField returns the table entry of a Config field path (nil when
// none).
func LookupField(field string) *Setting {
	return lookup(func(s *Setting) bool { return s.Field == field })
}

// LookupFlag returns the setting of a flag name (nil when none).
func LookupFlag(flag string) *Setting { return lookup(func(s *Setting) bool { return s.Flag == flag }) }

// lookup returns the first row match accepts (nil when none).
func lookup(match func(*Setting) bool) *Setting {
	for i := range settingsTable {
		if s := &settingsTable[i]; match(s) {
			return s
		}
	}
	return nil
}

// Spelling names a Config field on one surface ("--input-len",
// "input_len"); "" when the surface has no name for it.
type Spelling func(field string) string

// FlagSpelling spells a field as its CLI flag ("--input-len").
func FlagSpelling(field string) string {
	if s := LookupField(field); s != nil && s.Flag != "" {
		return "--" + s.Flag
	}
	return ""
}

// check returns the bound's problem with v ("must be > 0"), "" when v is
// within it.
func (b Bound) check(v float64) string {
	bad := (b.Finite && (math.IsInf(v, 0) || math.IsNaN(v))) ||
		(b.HasMin && (v < b.Min || (b.MinOpen && v == b.Min) || math.IsNaN(v))) ||
		(b.HasMax && (v > b.Max || (b.MaxOpen && v == b.Max)))
	if !bad {
		return ""
	}
	if b.Text != "" {
		return b.Text
	}
	if b.MaxText != "" {
		if b.HasMax && (v > b.Max || (b.MaxOpen && v == b.Max)) {
			return b.MaxText
		}
		b.HasMax = false
	}
	g := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	switch {
	case b.HasMin && b.HasMax:
		lo, hi := "[", "]"
		if b.MinOpen {
			lo = "("
		}
		if b.MaxOpen {
			hi = ")"
		}
		return "must be in " + lo + g(b.Min) + ", " + g(b.Max) + hi
	case b.HasMin:
		op := ">="
		if b.MinOpen {
			op = ">"
		}
		s := "must be " + op + " " + g(b.Min)
		if b.Finite {
			s += " and finite"
		}
		return s
	case b.HasMax:
		return "must be at most " + g(b.Max)
	}
	return "must be finite"
}

// Check returns the *FieldError of a value v outside the setting's bound
// (nil within it); got is the value as the reason shows it (the number, or
// the text a surface was given).
func (s *Setting) Check(v float64, got any) error {
	if p := s.Bound.check(v); p != "" {
		return fieldErr(s.Field, "%s, got %v", p, got)
	}
	return nil
}

// checkBound is Check of the table entry of field.
func checkBound(field string, v float64, got any) error {
	if s := LookupField(field); s != nil {
		return s.Check(v, got)
	}
	return nil
}

// validateBounds checks every scalar number of c whose setting has a
// bound (a zero of a ZeroDefault setting passes: it is the default).
func (c *Config) validateBounds() error {
	root := reflect.ValueOf(c).Elem()
	for i := range settingsTable {
		s := &settingsTable[i]
		if s.Field == "" || (s.Bound == Bound{}) {
			continue
		}
		v, ok := fieldValue(root, s.Field)
		if !ok {
			continue
		}
		if v.Kind() == reflect.Slice {
			// A list: its elements are checked where it is parsed and
			// in Validate, its length here.
			if s.Bound.MaxLen > 0 && v.Len() > s.Bound.MaxLen {
				return fieldErr(s.Field, "must have at most %d values, got %d", s.Bound.MaxLen, v.Len())
			}
			continue
		}
		x, got, ok := number(v)
		if !ok || (x == 0 && s.Bound.ZeroDefault) {
			continue
		}
		if err := s.Check(x, got); err != nil {
			return err
		}
	}
	return nil
}

// number returns a number (an int, int64, float64 or time.Duration) as the
// float its bound checks and the value a reason shows; false for a value
// that is no number.
func number(v reflect.Value) (x float64, got any, ok bool) {
	switch v.Kind() {
	case reflect.Int, reflect.Int64:
		return float64(v.Int()), v.Interface(), true
	case reflect.Float64:
		return v.Float(), v.Float(), true
	}
	return 0, nil, false
}

// fieldValue returns the field at a dotted path of a struct value (through
// the pointers on the way: false at a nil one).
func fieldValue(v reflect.Value, path string) (reflect.Value, bool) {
	for part := range strings.SplitSeq(path, ".") {
		if v.Kind() == reflect.Pointer && !v.IsNil() {
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return reflect.Value{}, false
		}
		v = v.FieldByName(part)
		if !v.IsValid() {
			return reflect.Value{}, false
		}
	}
	return v, true
}

// Apply sets the Config field of a setting whose value a surface gave,
// checking it against the setting's bound first: a string, bool, int,
// int64, float64 or time.Duration as the field's type is, or the text of
// a list (Rates, Concurrency, Percentiles, TraceSpeeds, StartAt,
// Search.Start) or a []string (Metadata, SLO) that Apply parses. An error
// is a *FieldError naming the field.
func (s *Setting) Apply(c *Config, v any) error {
	if p, ok := parsers[s.Field]; ok {
		return p(c, v)
	}
	f, ok := fieldValue(reflect.ValueOf(c).Elem(), s.Field)
	if !ok || !f.CanSet() {
		return fmt.Errorf("sweep: setting %q has no Config field", s.Field)
	}
	rv := reflect.ValueOf(v)
	if !rv.Type().ConvertibleTo(f.Type()) {
		return fmt.Errorf("sweep: setting %s takes %s, not %T", s.Field, f.Type(), v)
	}
	if rv.IsZero() && s.ZeroIsDefault() {
		f.Set(rv.Convert(f.Type()))
		return nil
	}
	if x, got, ok := number(rv); ok {
		if err := s.Check(x, got); err != nil {
			return err
		}
	}
	f.Set(rv.Convert(f.Type()))
	return nil
}

// ZeroIsDefault reports whether a zero value is the setting's own default
// (--num-prompts 0: none, the step is bounded by --duration): a surface
// given it explicitly passes; a zero that is not the default (--max-step-bytes
// 0) is checked against the bound.
func (s *Setting) ZeroIsDefault() bool {
	return s.Bound.ZeroDefault && (s.Default == "" || s.Default == "0" || s.Default == "0s")
}

// parsers set the fields whose value is text to parse.
var parsers = map[string]func(c *Config, v any) error{
	"Rates": func(c *Config, v any) (err error) {
		c.RatesText = v.(string)
		c.Rates, c.Auto, err = ParseRates(c.RatesText)
		return err
	},
	"Concurrency": func(c *Config, v any) (err error) {
		c.Concurrency, err = ParseConcurrency(v.(string))
		return err
	},
	"Percentiles": func(c *Config, v any) (err error) {
		c.Percentiles, err = ParsePercentiles(v.(string))
		return err
	},
	"TraceSpeeds": func(c *Config, v any) (err error) {
		c.TraceSpeeds, err = ParseTraceSpeeds(v.(string))
		return err
	},
	"SLO": func(c *Config, v any) (err error) {
		c.SLO, err = ParseGoodput(v.([]string))
		return err
	},
	"Metadata": func(c *Config, v any) (err error) {
		c.Metadata, err = ParseMetadata(v.([]string))
		return err
	},
	"StartAt": func(c *Config, v any) (err error) {
		if v.(string) == "" {
			return nil
		}
		c.StartAt, err = ParseStartAt(v.(string))
		return err
	},
	"Search.Start": func(c *Config, v any) error {
		text := strings.TrimSpace(v.(string))
		if strings.EqualFold(text, "probe") {
			c.Search.Start = 0
			return nil
		}
		r, err := strconv.ParseFloat(text, 64)
		if err != nil || checkBound("Search.Start", r, r) != nil {
			return fieldErr("Search.Start", "must be probe or a rate > 0 in req/s, got %q", v)
		}
		c.Search.Start = r
		return nil
	},
}

// ParseStartAt parses a wall-clock time (Config.StartAt): RFC 3339 or Unix
// seconds.
func ParseStartAt(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if v, err := strconv.ParseFloat(s, 64); err == nil && v > 0 && !math.IsInf(v, 0) {
		sec, frac := math.Modf(v)
		return time.Unix(int64(sec), int64(frac*1e9)), nil
	}
	return time.Time{}, fieldErr("StartAt", "%q is neither an RFC 3339 time nor Unix seconds", s)
}

// DefaultValue returns the setting's default as Apply takes it (a string,
// bool, int, int64, float64, time.Duration or []string of its kind); nil
// when it has none. Default is a literal of the table, so a bad one is a
// programming error (the table's tests parse every one).
func (s *Setting) DefaultValue() any {
	if s.Default == "" {
		return nil
	}
	v, err := parseKind(s.Kind, s.Default)
	if err != nil {
		panic(fmt.Sprintf("sweep: setting %s: default %q: %v", s.Field, s.Default, err))
	}
	return v
}

// parseKind parses the text of a value of kind k (a flag's) as Apply
// takes it.
func parseKind(k Kind, text string) (any, error) {
	switch k {
	case KindBool:
		return strconv.ParseBool(text)
	case KindInt:
		return strconv.Atoi(text)
	case KindInt64:
		return strconv.ParseInt(text, 10, 64)
	case KindFloat:
		return strconv.ParseFloat(text, 64)
	case KindDuration:
		return time.ParseDuration(text)
	case KindStrings:
		return []string{text}, nil
	}
	return text, nil
}
