package archtest

import (
	"reflect"
	"sort"
	"strings"
	"time"

	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/prometheus/discovery"
	"github.com/prometheus/prometheus/model/relabel"

	"github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/slo"
	"github.com/llmprobe/llmprobe/prober/sweep"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// The kinds of a configuration key (configKey.kind).
const (
	kindInt      = "int"      // an integer
	kindFloat    = "float"    // a float
	kindDuration = "duration" // a Go duration string
	kindBytes    = "bytes"    // a size (config.ByteSize)
	kindString   = "string"
	kindBool     = "bool"
	kindAny      = "any"      // a YAML value of any shape (extra_body's values, a JSON schema)
	kindList     = "list"     // a list: its row bounds the number of entries
	kindMap      = "map"      // a mapping of names: its row bounds the number of entries and the names
	kindExternal = "external" // a type of another module, decoded and validated there
)

// configKey is one key a user can set in the daemon's YAML: its path with
// [] for a list's entries and .* for a mapping's values
// ("targets[].probes[].rate"), its row in configKeyRows (the path below
// the innermost anchor type, prefixed with the anchor's name:
// "target.probes[].rate"), its kind and Go type.
type configKey struct {
	path, row, kind string
	typ             reflect.Type
}

// keyAnchors are the types that appear at several places of the tree: a
// key below one is one row, whichever place it is at ("workload.prefix_tokens"
// for a probe's, a module's and a sweep's workload); the generated checks
// still run at every place.
var keyAnchors = map[reflect.Type]string{
	reflect.TypeFor[config.TargetConfig](): "target",
	reflect.TypeFor[workload.Spec]():       "workload",
	reflect.TypeFor[slo.SLO]():             "slo",
}

// scalarKinds are the named types read as one scalar (or a list of
// numbers, for Rates), whatever their Go shape.
var scalarKinds = map[reflect.Type]string{
	reflect.TypeFor[time.Duration]():     kindDuration,
	reflect.TypeFor[config.Duration]():   kindDuration,
	reflect.TypeFor[config.ByteSize]():   kindBytes,
	reflect.TypeFor[promconfig.Secret](): kindString,
}

// externalTypes are types of other modules whose keys are validated by
// their own decoder: one row each, never walked.
var externalTypes = map[reflect.Type]bool{
	reflect.TypeFor[promconfig.HTTPClientConfig](): true,
	reflect.TypeFor[promconfig.TLSConfig]():        true,
	reflect.TypeFor[relabel.Config]():              true,
}

// sweepSpecKeys are the keys of a sweep's spec, from prober/sweep's
// settings table: path is the key, typ the Go type walked for it (the
// workload's, the SLO's, a list's) or nil for a scalar of kind.
func sweepSpecKeys() []configKey {
	kinds := map[sweep.Kind]string{sweep.KindInt: kindInt, sweep.KindInt64: kindInt, sweep.KindFloat: kindFloat,
		sweep.KindDuration: kindDuration, sweep.KindString: kindString, sweep.KindBool: kindBool}
	types := map[string]reflect.Type{ // the rows whose value is no scalar of their kind
		"Workload": reflect.TypeFor[workload.Spec](), "SLO": reflect.TypeFor[slo.SLO](),
		"Rates": reflect.TypeFor[[]float64](), "Concurrency": reflect.TypeFor[[]int](),
	}
	var out []configKey
	for _, s := range sweep.Settings() {
		if s.Key == "" || s.Surfaces&sweep.SurfaceSpec == 0 || s.Internal {
			continue
		}
		if t, ok := types[s.Field]; ok {
			out = append(out, configKey{path: s.Key, typ: t})
			continue
		}
		k, ok := kinds[s.Kind]
		if !ok {
			panic("configKeys: the spec key " + s.Key + " is a list of strings: teach sweepSpecKeys its kind")
		}
		out = append(out, configKey{path: s.Key, kind: k})
	}
	return out
}

// configKeys walks config.Config by reflection, following yaml tags
// through structs, slices, maps and pointers, and returns every key a user
// can set, sorted by path. A list or a mapping is a key itself (its size)
// besides its entries'. discovery's mechanisms (static_configs,
// <name>_sd_configs), decoded by prometheus/discovery, are external keys of
// each entry.
func configKeys() []configKey {
	var out []configKey
	var walk func(path, row string, t reflect.Type, depth int)
	add := func(path, row, kind string, t reflect.Type) {
		out = append(out, configKey{path: path, row: row, kind: kind, typ: t})
	}
	join := func(a, b string) string {
		if a == "" {
			return b
		}
		return a + "." + b
	}
	walk = func(path, row string, t reflect.Type, depth int) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if depth > 32 {
			panic("configKeys: the type tree nests deeper than 32 at " + path)
		}
		if a, ok := keyAnchors[t]; ok && path != "" {
			row = a
		}
		if k, ok := scalarKinds[t]; ok {
			add(path, row, k, t)
			return
		}
		if externalTypes[t] {
			add(path, row, kindExternal, t)
			return
		}
		if t == reflect.TypeFor[config.SweepSpec]() {
			// A sweep's spec: its keys are prober/sweep's settings
			// table's spec rows (sweep.FromSpec decodes them), its
			// workload a workload.Spec.
			for _, k := range sweepSpecKeys() {
				if k.typ == nil {
					add(join(path, k.path), join(row, k.path), k.kind, nil)
					continue
				}
				walk(join(path, k.path), join(row, k.path), k.typ, depth+1)
			}
			return
		}
		switch t.Kind() {
		case reflect.Struct:
			if t == reflect.TypeFor[config.DiscoveryConfig]() {
				names := discovery.RegisteredConfigNames()
				sort.Strings(names)
				for _, n := range names {
					k := n + "_sd_configs"
					if n == "static" {
						k = "static_configs"
					}
					add(join(path, k), join(row, k), kindExternal, nil)
				}
			}
			for i := range t.NumField() {
				f := t.Field(i)
				if !f.IsExported() {
					continue
				}
				name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
				if name == "-" {
					continue
				}
				if name == "" && (opts == "inline" || f.Anonymous) {
					// An embedded struct (TurnsSpec's LengthSpec) is decoded
					// in place by its owner's UnmarshalYAML.
					walk(path, row, f.Type, depth+1)
					continue
				}
				if name == "" {
					name = strings.ToLower(f.Name)
				}
				walk(join(path, name), join(row, name), f.Type, depth+1)
			}
		case reflect.Slice, reflect.Array:
			add(path, row, kindList, t)
			walk(path+"[]", row+"[]", t.Elem(), depth+1)
		case reflect.Map:
			add(path, row, kindMap, t)
			walk(path+".*", row+".*", t.Elem(), depth+1)
		case reflect.Interface:
			add(path, row, kindAny, t)
		case reflect.Bool:
			add(path, row, kindBool, t)
		case reflect.String:
			add(path, row, kindString, t)
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			add(path, row, kindInt, t)
		case reflect.Float32, reflect.Float64:
			add(path, row, kindFloat, t)
		default:
			panic("configKeys: a " + t.Kind().String() + " at " + path + ": teach configKeys its kind")
		}
	}
	walk("", "", reflect.TypeFor[config.Config](), 0)
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out
}
