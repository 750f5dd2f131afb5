package sweep

import (
	"errors"
	"math"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/prober/knob"
)

// cliText is err as the sweep CLI shows it: a *FieldError as "Field:
// reason", the reason's references spelled as flags.
func cliText(err error) string {
	var fe *FieldError
	if !errors.As(err, &fe) {
		return err.Error()
	}
	return strings.Replace(err.Error(), fe.Error(), fe.Field+": "+fe.Reason(FlagSpelling), 1)
}

// configFields walks Config with reflect: the path of every field, into
// the structs of this package (ValidityOptions, SearchOptions); a field of
// another package's type (workload.Spec, slo.SLO, time.Time) is one leaf.
func configFields(t reflect.Type, prefix string) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		path := prefix + f.Name
		if f.Type.Kind() == reflect.Struct && f.Type.PkgPath() == t.PkgPath() {
			out = append(out, configFields(f.Type, path+".")...)
			continue
		}
		out = append(out, path)
	}
	return out
}

// TestSettingsCoverConfig fails when a Config field has no entry in the
// settings table (a user setting with its surfaces, or one marked
// Internal), or when an entry names a field Config does not have.
func TestSettingsCoverConfig(t *testing.T) {
	have := map[string]bool{}
	for _, s := range Settings() {
		if s.Field != "" {
			have[s.Field] = true
		}
	}
	for _, f := range configFields(reflect.TypeFor[Config](), "") {
		if !have[f] {
			t.Errorf("sweep.Config.%s has no entry in the settings table (settings_table.go): add one, with its surfaces or Internal: true", f)
		}
	}
	for _, s := range Settings() {
		if s.Field == "" {
			t.Errorf("row --%s has no Config field: a setting of the commands alone lives in internal/rundir (cliSettings)", s.Flag)
			continue
		}
		typ := reflect.TypeFor[Config]()
		for part := range strings.SplitSeq(s.Field, ".") {
			for typ.Kind() == reflect.Pointer {
				typ = typ.Elem()
			}
			f, ok := typ.FieldByName(part)
			if typ.Kind() != reflect.Struct || !ok {
				t.Errorf("setting %q (--%s) names no Config field", s.Field, s.Flag)
				break
			}
			typ = f.Type
		}
	}
}

// TestSettingsTable checks each entry: a user setting has a surface, a
// flag or key, a doc and a default of its kind within its bound; names
// are unique per surface.
func TestSettingsTable(t *testing.T) {
	flags, keys := map[string]bool{}, map[string]bool{}
	for _, s := range Settings() {
		name := s.Field + " --" + s.Flag
		if s.Doc == "" {
			t.Errorf("%s: no doc", name)
		}
		if s.Internal {
			continue
		}
		if s.Surfaces == 0 || (s.Flag == "" && s.Key == "") {
			t.Errorf("%s: a user setting without a surface or a name on it", name)
		}
		if s.Flag != "" {
			if flags[s.Flag] {
				t.Errorf("flag --%s twice", s.Flag)
			}
			flags[s.Flag] = true
		}
		if s.Key != "" {
			if keys[s.Key] {
				t.Errorf("key %s twice", s.Key)
			}
			keys[s.Key] = true
		}
		if (s.Surfaces&SurfaceSpec != 0) != (s.Key != "") {
			t.Errorf("%s: a key without the spec surface, or the reverse", name)
		}
		for _, d := range []string{s.Default, s.CompareDefault} {
			if d == "" {
				continue
			}
			v, ok := defaultNumber(t, s, d)
			if ok && !(v == 0 && s.ZeroIsDefault()) && s.Bound.check(v) != "" {
				t.Errorf("%s: default %q is outside its bound: %s", name, d, s.Bound.check(v))
			}
		}
	}
}

// defaultNumber parses a default of a numeric kind.
func defaultNumber(t *testing.T, s Setting, d string) (float64, bool) {
	t.Helper()
	var err error
	var v float64
	switch s.Kind {
	case KindInt, KindInt64:
		var n int64
		n, err = strconv.ParseInt(d, 10, 64)
		v = float64(n)
	case KindFloat:
		v, err = strconv.ParseFloat(d, 64)
	case KindDuration:
		var x time.Duration
		x, err = time.ParseDuration(d)
		v = float64(x)
	case KindBool:
		_, err = strconv.ParseBool(d)
		return 0, false
	default:
		return 0, false
	}
	if err != nil {
		t.Errorf("--%s: default %q is not a %v: %v", s.Flag, d, s.Kind, err)
	}
	return v, err == nil
}

// TestSettingsDefaultsAreTheConstants pins the table's defaults to the
// exported defaults the engine applies to a zero field.
func TestSettingsDefaultsAreTheConstants(t *testing.T) {
	for field, want := range map[string]string{
		"Timeout": DefaultTimeout.String(), "Duration": DefaultDuration.String(), "MinPrompts": strconv.Itoa(DefaultMinPrompts),
		"Warmups": strconv.Itoa(DefaultWarmups), "Rounds": strconv.Itoa(DefaultRounds), "Validity.MaxSendLag": DefaultMaxSendLag.String(),
		"MetricsInterval": DefaultMetricsInterval.String(), "IdleTimeout": DefaultIdleTimeout.String(),
		"Search.MaxSteps": strconv.Itoa(DefaultAutoMaxSteps), "Validity.MaxErrorRate": "0.05", "Validity.MaxClientCPU": "0.9",
		"Search.Tolerance": "0.05",
	} {
		if s := LookupField(field); s == nil || s.Default != want {
			t.Errorf("%s: table default %v, want %q", field, s, want)
		}
	}
}

// TestFieldErrorSpelling checks that a reason refers to another setting
// by its field path, which each surface spells its own way.
func TestFieldErrorSpelling(t *testing.T) {
	c := testConfig(t, "http://127.0.0.1:1")
	c.FreshPrefix = true
	err := c.Validate()
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "FreshPrefix" {
		t.Fatalf("Validate = %v, want a FieldError on FreshPrefix", err)
	}
	for _, tt := range []struct {
		spell Spelling
		want  string
	}{
		{nil, "needs Workload.PrefixTokens > 0"},
		{FlagSpelling, "needs --prefix-len > 0"},
		{SpecKey, "needs prefix_len > 0"},
	} {
		if got := fe.Reason(tt.spell); got != tt.want {
			t.Errorf("Reason = %q, want %q", got, tt.want)
		}
	}
	if strings.Contains(err.Error(), "--") {
		t.Errorf("Error() %q quotes a CLI flag", err)
	}
	// A brace that is no setting's path stays as it is.
	if got := knob.Render(`{"prompt"} and {NoSuchField}`, FlagSpelling); got != `{"prompt"} and NoSuchField` {
		t.Errorf("Render = %q", got)
	}
}

func TestBoundText(t *testing.T) {
	f := func(b Bound, v float64, want string) {
		t.Helper()
		if got := b.check(v); got != want {
			t.Errorf("%+v.check(%v) = %q, want %q", b, v, got, want)
		}
	}
	f(Bound{HasMin: true}, -1, "must be >= 0")
	f(Bound{HasMin: true}, 0, "")
	f(Bound{HasMin: true, MinOpen: true}, 0, "must be > 0")
	f(Bound{HasMin: true, MinOpen: true, Finite: true}, math.Inf(1), "must be > 0 and finite")
	f(Bound{HasMin: true, MinOpen: true}, math.NaN(), "must be > 0")
	f(Bound{HasMin: true, Max: 1, HasMax: true, MaxOpen: true}, 1, "must be in [0, 1)")
	f(Bound{HasMin: true, Max: 1, HasMax: true, MaxOpen: true}, 0.5, "")
	f(Bound{Min: 1, HasMin: true, Max: 10, HasMax: true, MaxText: "must be at most 10 per step"}, 11, "must be at most 10 per step")
	f(Bound{Min: 1, HasMin: true, Max: 10, HasMax: true, MaxText: "must be at most 10 per step"}, 0, "must be >= 1")
}

// docFlag matches the flags a row of a flag table in docs/sweep.md
// documents: the `--name` spans of its first cell.
var docFlag = regexp.MustCompile("`--([a-z][a-z0-9.-]*)")

// TestSettingsMatchAPIDocs fails when docs/sweep-api.md's body key table
// lacks a spec key of the table, lists one the table lacks, or cites a
// flag that is not the flag of one of its row's keys.
func TestSettingsMatchAPIDocs(t *testing.T) {
	b, err := os.ReadFile("../../docs/sweep-api.md")
	if err != nil {
		t.Fatal(err)
	}
	keyCell := regexp.MustCompile("`([a-z_]+)`")
	documented := map[string]bool{}
	inKeys := false
	for line := range strings.SplitSeq(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "| key | type |"):
			inKeys = true
		case !strings.HasPrefix(line, "|"):
			inKeys = false
		case inKeys && !strings.HasPrefix(line, "|---"):
			cells := strings.Split(line, "|")
			var flags []string
			for _, m := range keyCell.FindAllStringSubmatch(cells[1], -1) {
				if m[1] == "target" {
					continue // the request's, not the spec's
				}
				documented[m[1]] = true
				for _, s := range Settings() {
					if s.Key == m[1] && s.Surfaces&SurfaceSpec != 0 {
						flags = append(flags, s.Flag)
					}
				}
			}
			for _, m := range docFlag.FindAllStringSubmatch(cells[3], -1) {
				if !slices.Contains(flags, m[1]) {
					t.Errorf("docs/sweep-api.md cites --%s in the row of %s, whose settings' flags are %v", m[1], strings.TrimSpace(cells[1]), flags)
				}
			}
		}
	}
	for _, s := range Settings() {
		if s.Surfaces&SurfaceSpec != 0 && !documented[s.Key] {
			t.Errorf("spec key %s (%s) is missing from docs/sweep-api.md's key table", s.Key, s.Field)
		}
		delete(documented, s.Key)
	}
	for k := range documented {
		t.Errorf("docs/sweep-api.md documents key %s, which the settings table lacks", k)
	}
}
