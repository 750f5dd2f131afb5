package main

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"

	lpconfig "github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// sweepFlags holds the flag values of `llmprobe sweep` (and compare's copy
// of them): one per setting of the sweep settings table, which generates
// the flags (addSweepFlags). The values the rest of the command reads by
// name are fields; the others live in vals by flag name.
type sweepFlags struct {
	vals  map[string]any // *string, *bool, *int, *int64, *float64, *time.Duration or *[]string
	given map[string]*bool

	out, name                string
	seed                     int64
	rounds                   int
	noProgress, saveDetailed bool
	costPerHour              float64
	extra                    sweepExtraFlags // --server-log, --push.* (sweepextra.go)
	goodputArgs              []string        // the goodput-pairs argument
}

// fields are the flags bound to a field of f.
func (f *sweepFlags) fields() map[string]any {
	return map[string]any{
		"out": &f.out, "name": &f.name, "seed": &f.seed, "rounds": &f.rounds, "no-progress": &f.noProgress,
		"save-detailed": &f.saveDetailed, "cost-per-hour": &f.costPerHour, "server-log": &f.extra.serverLog,
		"push.url": &f.extra.pushURL, "push.extra-label": &f.extra.pushExtraLabels, "push.method": &f.extra.pushMethod,
		"push.timeout": &f.extra.pushTimeout,
	}
}

// addSweepFlags adds the flags of the settings the surface takes (sweep or
// compare), in the table's order, with the table's help and default;
// compare hides the ones it takes but does not offer.
func addSweepFlags(cmd *kingpin.CmdClause, f *sweepFlags, surface sweep.Surface) {
	f.vals, f.given = map[string]any{}, map[string]*bool{}
	bound := f.fields()
	for _, s := range sweep.Settings() {
		if s.Flag == "" || s.Internal {
			continue
		}
		hidden := surface == sweep.SurfaceCompare && s.CompareHidden
		if s.Surfaces&surface == 0 && !hidden {
			continue
		}
		doc, def := s.Doc, s.Default
		if surface == sweep.SurfaceCompare && s.CompareDoc != "" {
			doc = s.CompareDoc
		}
		if surface == sweep.SurfaceCompare && s.CompareDefault != "" {
			def = s.CompareDefault
		}
		fc := cmd.Flag(s.Flag, doc)
		if def != "" {
			fc.Default(def)
		}
		if hidden {
			fc.Hidden()
		}
		f.given[s.Flag] = new(bool)
		fc.IsSetByUser(f.given[s.Flag])
		p, ok := bound[s.Flag]
		if !ok {
			p = newValue(s.Kind)
			f.vals[s.Flag] = p
		}
		bindValue(fc, p)
	}
	cmd.Arg("goodput-pairs", "More --goodput KEY:VALUE pairs (vLLM's `--goodput ttft:800 tpot:50` form).").
		StringsVar(&f.goodputArgs)
}

// kindTypes are the storage types of the settings' kinds.
var kindTypes = map[sweep.Kind]reflect.Type{
	sweep.KindBool: reflect.TypeFor[bool](), sweep.KindInt: reflect.TypeFor[int](), sweep.KindInt64: reflect.TypeFor[int64](),
	sweep.KindFloat: reflect.TypeFor[float64](), sweep.KindDuration: reflect.TypeFor[time.Duration](),
	sweep.KindStrings: reflect.TypeFor[[]string](), sweep.KindString: reflect.TypeFor[string](),
}

// newValue allocates the storage of a setting's kind.
func newValue(k sweep.Kind) any { return reflect.New(kindTypes[k]).Interface() }

// bindValue binds a flag to its storage with kingpin's parser of its type.
func bindValue(fc *kingpin.FlagClause, p any) {
	switch p := p.(type) {
	case *bool:
		fc.BoolVar(p)
	case *int:
		fc.IntVar(p)
	case *int64:
		fc.Int64Var(p)
	case *float64:
		fc.Float64Var(p)
	case *time.Duration:
		fc.DurationVar(p)
	case *[]string:
		fc.StringsVar(p)
	case *string:
		fc.StringVar(p)
	}
}

// value returns a flag's value (a string, bool, int, ...); nil for a flag
// the command does not have.
func (f *sweepFlags) value(flag string) any {
	p, ok := f.fields()[flag]
	if !ok {
		if p, ok = f.vals[flag]; !ok {
			return nil
		}
	}
	return reflect.ValueOf(p).Elem().Interface()
}

func (f *sweepFlags) str(flag string) string        { s, _ := f.value(flag).(string); return s }
func (f *sweepFlags) num(flag string) int           { n, _ := f.value(flag).(int); return n }
func (f *sweepFlags) flt(flag string) float64       { x, _ := f.value(flag).(float64); return x }
func (f *sweepFlags) dur(flag string) time.Duration { d, _ := f.value(flag).(time.Duration); return d }
func (f *sweepFlags) strs(flag string) []string     { s, _ := f.value(flag).([]string); return s }
func (f *sweepFlags) isSet(flag string) bool        { p := f.given[flag]; return p != nil && *p }
func (f *sweepFlags) set(flag string, v string)     { *f.vals[flag].(*string) = v }

// clone copies f, values and all, so that one side of a compare can
// change its copy.
func (f *sweepFlags) clone() *sweepFlags {
	c := *f
	c.vals = make(map[string]any, len(f.vals))
	for k, p := range f.vals {
		v := reflect.New(reflect.TypeOf(p).Elem())
		v.Elem().Set(reflect.ValueOf(p).Elem())
		c.vals[k] = v.Interface()
	}
	return &c
}

// special are the settings buildSweepConfig sets itself (files to read,
// a workload to build, flags that go together); applySettings sets the
// others from the table.
var special = map[string]bool{
	"Target": true, "APIKey": true, "HTTPConfig": true, "Workload": true, "Workload.InputTokens": true,
	"Workload.OutputTokens": true, "Workload.InputTokens.RangeRatio": true, "Workload.PrefixTokens": true,
	"Rates": true, "Concurrency": true, "Duration": true, "SLO": true, "MaxStepBytes": true, "Trace": true,
	"TraceSpeeds": true,
}

// applySettings sets every Config field of a flag that maps onto it
// directly (sweep.Setting.Apply: the table's bound, parsing lists).
func applySettings(f *sweepFlags, c *sweep.Config) error {
	for _, s := range sweep.Settings() {
		if s.Field == "" || s.Internal || special[s.Field] || strings.HasPrefix(s.Field, "Workload.") {
			continue
		}
		v := f.value(s.Flag)
		if v == nil {
			continue
		}
		if err := s.Apply(c, v); err != nil {
			return err
		}
	}
	return nil
}

// applyStepBytes parses --max-step-bytes and checks it against the
// table's bound (the text quoted in the reason).
func applyStepBytes(f *sweepFlags, c *sweep.Config) error {
	text := f.str("max-step-bytes")
	n, err := lpconfig.ParseByteSize(text)
	if err != nil {
		return &flagError{flag: "max-step-bytes", err: err}
	}
	if err := sweep.LookupField("MaxStepBytes").Check(float64(n), strconv.Quote(text)); err != nil {
		return err
	}
	c.MaxStepBytes = int64(n)
	return nil
}

// flagOf returns the flag of a *sweep.FieldError's field ("" when none).
func flagOf(err error) string {
	var fe *sweep.FieldError
	if errors.As(err, &fe) {
		if s := sweep.LookupField(fe.Field); s != nil {
			return s.Flag
		}
	}
	return ""
}
