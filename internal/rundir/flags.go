package rundir

import (
	"reflect"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/llmprobe/llmprobe/prober/sweep"
)

// SweepFlags holds the flag values of `llmprobe sweep` (and compare's copy
// of them): one per setting of the sweep settings table, which generates
// the flags (AddSweepFlags); Config turns them into a sweep.Config. The
// values the commands read themselves are exported fields; the others live
// in vals by flag name.
type SweepFlags struct {
	vals  map[string]any // *string, *bool, *int, *int64, *float64, *time.Duration or *[]string
	given map[string]*bool

	out, name   string
	seed        int64
	rounds      int
	costPerHour float64
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

// fields are the flags bound to a field of f.
func (f *SweepFlags) fields() map[string]any {
	return map[string]any{
		"out": &f.out, "name": &f.name, "seed": &f.seed, "rounds": &f.rounds, "no-progress": &f.NoProgress,
		"save-detailed": &f.SaveDetailed, "cost-per-hour": &f.costPerHour, "server-log": &f.ServerLog,
		"push.url": &f.Push.URL, "push.extra-label": &f.Push.ExtraLabels, "push.method": &f.Push.Method,
		"push.timeout": &f.Push.Timeout, "push.required": &f.Push.Required,
		"tracing.endpoint": &f.Tracing.Endpoint, "tracing.enabled": &f.Tracing.Enabled,
		"tracing.protocol": &f.Tracing.Protocol, "tracing.insecure": &f.Tracing.Insecure,
	}
}

// AddSweepFlags adds the flags of the settings the surface takes (sweep or
// compare), in the table's order, with the table's help and default;
// compare hides the ones it takes but does not offer.
func AddSweepFlags(cmd *kingpin.CmdClause, f *SweepFlags, surface sweep.Surface) {
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
func (f *SweepFlags) value(flag string) any {
	p, ok := f.fields()[flag]
	if !ok {
		if p, ok = f.vals[flag]; !ok {
			return nil
		}
	}
	return reflect.ValueOf(p).Elem().Interface()
}

func (f *SweepFlags) str(flag string) string        { s, _ := f.value(flag).(string); return s }
func (f *SweepFlags) num(flag string) int           { n, _ := f.value(flag).(int); return n }
func (f *SweepFlags) flt(flag string) float64       { x, _ := f.value(flag).(float64); return x }
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
