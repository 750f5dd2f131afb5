package rundir

import (
	"reflect"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/llmprobe/llmprobe/prober/sweep"
)

// SweepFlags holds the flag values of `llmprobe sweep` (and compare's copy
// of them): one per setting of the sweep settings table and of the
// commands' own (cliSettings), which generate the flags (AddSweepFlags);
// Config turns them into a sweep.Config. Every value lives in vals by flag
// name; the commands' own settings the commands read are exported fields
// too (their rows bind them).
type SweepFlags struct {
	vals  map[string]any // *string, *bool, *int, *int64, *float64, *time.Duration or *[]string
	given map[string]*bool

	goodputArgs []string // the goodput-pairs argument

	// NoProgress and SaveDetailed are --no-progress and --save-detailed.
	NoProgress, SaveDetailed bool
	// ServerLog is --server-log.
	ServerLog string
	// Push holds --push.*: the run's summary metrics pushed once.
	Push PushFlags
	// Tracing holds --tracing.endpoint, --tracing.enabled,
	// --tracing.protocol and --tracing.insecure (--tracing.sample-ratio is
	// the sweep's TraceSampleRatio).
	Tracing TracingFlags
}

// TracingFlags are the exporter's --tracing.* flags of sweep and compare
// (the daemon's serve has the same, daemon.Tracing).
type TracingFlags struct {
	Endpoint, Protocol string
	Enabled, Insecure  bool
}

// PushFlags are the sweep's --push.url, --push.extra-label, --push.method,
// --push.timeout and --push.required.
type PushFlags struct {
	URL         string
	ExtraLabels []string
	Method      string
	Timeout     time.Duration
	// Required makes a failed push exit 1; without it the failure is a
	// warning.
	Required bool
}

// AddSweepFlags adds the flags of the settings the surface takes (sweep or
// compare), in the order of flagSettings, with the table's help and
// default; compare hides the ones it takes but does not offer.
func AddSweepFlags(cmd *kingpin.CmdClause, f *SweepFlags, surface sweep.Surface) {
	f.vals, f.given = map[string]any{}, map[string]*bool{}
	for _, s := range flagSettings() {
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
		p := newValue(s.Kind)
		if s.bind != nil {
			p = s.bind(f)
		}
		f.vals[s.Flag] = p
		bindValue(fc, p)
	}
	cmd.Arg("goodput-pairs", "More --goodput KEY:VALUE pairs (vLLM's `--goodput ttft:800 tpot:50` form).").
		StringsVar(&f.goodputArgs)
}

// newValue allocates the storage of a setting's kind.
func newValue(k sweep.Kind) any { return reflect.New(k.Type()).Interface() }

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
func (f *SweepFlags) value(flag string) any {
	p, ok := f.vals[flag]
	if !ok {
		return nil
	}
	return reflect.ValueOf(p).Elem().Interface()
}

// setValue sets a flag's value (of its kind) as if it had been given:
// compare's sides change their copies.
func (f *SweepFlags) setValue(flag string, v any) {
	reflect.ValueOf(f.vals[flag]).Elem().Set(reflect.ValueOf(v))
}

func (f *SweepFlags) str(flag string) string        { s, _ := f.value(flag).(string); return s }
func (f *SweepFlags) num(flag string) int           { n, _ := f.value(flag).(int); return n }
func (f *SweepFlags) flt(flag string) float64       { x, _ := f.value(flag).(float64); return x }
func (f *SweepFlags) num64(flag string) int64       { n, _ := f.value(flag).(int64); return n }
func (f *SweepFlags) dur(flag string) time.Duration { d, _ := f.value(flag).(time.Duration); return d }
func (f *SweepFlags) strs(flag string) []string     { s, _ := f.value(flag).([]string); return s }
func (f *SweepFlags) isSet(flag string) bool        { p := f.given[flag]; return p != nil && *p }
func (f *SweepFlags) set(flag string, v string)     { *f.vals[flag].(*string) = v }

// clone copies f, values and all, so that one side of a compare can
// change its copy.
func (f *SweepFlags) clone() *SweepFlags {
	c := *f
	c.vals = make(map[string]any, len(f.vals))
	for k, p := range f.vals {
		v := reflect.New(reflect.TypeOf(p).Elem())
		v.Elem().Set(reflect.ValueOf(p).Elem())
		c.vals[k] = v.Interface()
	}
	return &c
}
