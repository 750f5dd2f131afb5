package sweep

import (
	"errors"
	"fmt"
	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/config"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fieldAt returns the value of a Config field path (a length spec
// as its value).
func fieldAt(t *testing.T, c *Config, path string) any {
	t.Helper()
	v := reflect.ValueOf(c).Elem()
	for part := range strings.SplitSeq(path, ".") {
		v = v.FieldByName(part)
		if !v.IsValid() {
			t.Fatalf("Config has no %s", path)
		}
	}
	if v.Type().Name() == "LengthSpec" {
		v = v.FieldByName("Value")
	}
	return v.Interface()
}

// specTarget is a target to build sweep configs against.
func specTarget() config.TargetConfig {
	return config.TargetConfig{Name: "t", BaseURL: "http://127.0.0.1:1", API: client.APICompletions, Timeout: time.Minute}
}

// TestSweepSpecDefaultsAreTheTable fails when a sweep the daemon runs
// (a scheduled sweep's YAML, the sweep API's body) takes another default
// than the settings table, the sweep CLI's, for a setting it leaves out.
func TestSweepSpecDefaultsAreTheTable(t *testing.T) {
	c, err := FromSpec(config.SweepSpec{Rates: config.Rates{Auto: true}}, specTarget())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range Settings() {
		spec := s.Surfaces&SurfaceSpec != 0
		if (!spec && !s.DaemonDefault) || s.Default == "" || s.Kind == KindString && s.Field != "Arrival" {
			continue
		}
		n++
		if got, want := fieldAt(t, &c, s.Field), s.DefaultValue(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s (key %q): a spec without it gives %v, the table's default is %v", s.Field, s.Key, got, want)
		}
	}
	if n < 12 {
		t.Errorf("only %d defaults compared", n)
	}
	if name := LookupField("Name").SpecDefault; c.Name != name || DefaultSpecName != name {
		t.Errorf("name %q, DefaultSpecName %q, the table's %q", c.Name, DefaultSpecName, name)
	}
}

// TestSweepSpecTakesTheTableBounds fails when a spec key refuses a value
// the settings table's bound allows, or takes one it refuses (the CLI's
// side is cmd/llmprobe's TestSweepFlagsTakeTheTableBounds).
func TestSweepSpecTakesTheTableBounds(t *testing.T) {
	set := func(spec *config.SweepSpec, key string, v float64) {
		rv := reflect.ValueOf(spec).Elem()
		for i := 0; i < rv.NumField(); i++ {
			if tag, _, _ := strings.Cut(rv.Type().Field(i).Tag.Get("yaml"), ","); tag == key {
				f := rv.Field(i)
				switch f.Kind() {
				case reflect.Float64:
					f.SetFloat(v)
				default:
					f.SetInt(int64(v))
				}
				return
			}
		}
		t.Fatalf("SweepSpec has no key %q", key)
	}
	n := 0
	for _, s := range Settings() {
		b := s.Bound
		if s.Surfaces&SurfaceSpec == 0 || s.Kind == KindString || (b == Bound{}) || s.Key == "warmups" {
			continue // warmups: -1 is the spec's "none"
		}
		step := 1.0
		if s.Kind == KindFloat {
			step = 1e-3
		}
		var outside, inside []float64
		if b.HasMin {
			if b.MinOpen {
				outside, inside = append(outside, b.Min), append(inside, b.Min+step)
			} else {
				outside, inside = append(outside, b.Min-step), append(inside, b.Min)
			}
		}
		if b.HasMax {
			if b.MaxOpen {
				outside, inside = append(outside, b.Max), append(inside, b.Max-step)
			} else {
				outside, inside = append(outside, b.Max+step), append(inside, b.Max)
			}
		}
		for _, v := range outside {
			if v == 0 {
				continue // 0 leaves the key out: the default
			}
			n++
			spec := config.SweepSpec{Rates: config.Rates{Values: []float64{1, 2}}}
			if s.Key == "burstiness" {
				spec.Arrival = "gamma" // a shape other than 1 needs gamma arrivals (knob.Arrival)
			}
			set(&spec, s.Key, v)
			if _, err := FromSpec(spec, specTarget()); config.AsSpecError(err) == nil || config.AsSpecError(err).Key != s.Key {
				t.Errorf("%s: %v (outside the table's bound): got %v, want an error naming %s", s.Key, v, err, s.Key)
			}
		}
		for _, v := range inside {
			n++
			spec := config.SweepSpec{Rates: config.Rates{Values: []float64{1, 2}}}
			if s.Key == "burstiness" {
				spec.Arrival = "gamma" // a shape other than 1 needs gamma arrivals (knob.Arrival)
			}
			set(&spec, s.Key, v)
			if _, err := FromSpec(spec, specTarget()); config.AsSpecError(err) != nil && config.AsSpecError(err).Key == s.Key {
				t.Errorf("%s: %v (inside the table's bound) refused: %v", s.Key, v, err)
			}
		}
	}
	if n < 12 {
		t.Errorf("only %d bound cases", n)
	}
}

// TestSweepSpecKeysAreTheTable fails when a SweepSpec key (YAML or JSON)
// has no entry in the settings table, or a table key no SweepSpec field.
func TestSweepSpecKeysAreTheTable(t *testing.T) {
	rt := reflect.TypeFor[config.SweepSpec]()
	keys := map[string]bool{}
	for i := 0; i < rt.NumField(); i++ {
		f := rt.Field(i)
		if !f.IsExported() {
			continue
		}
		y, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		j, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if y != j {
			t.Errorf("SweepSpec.%s: yaml key %q, json key %q", f.Name, y, j)
		}
		keys[y] = true
		var s *Setting
		for _, st := range Settings() {
			if st.Key == y && st.Surfaces&SurfaceSpec != 0 {
				s = &st
			}
		}
		if s == nil {
			t.Errorf("SweepSpec key %q has no spec setting in the settings table", y)
		}
	}
	for _, s := range Settings() {
		if s.Surfaces&SurfaceSpec != 0 && !keys[s.Key] {
			t.Errorf("the settings table's key %q (%s) is no SweepSpec field", s.Key, s.Field)
		}
	}
}

// TestSpecErrorText checks that a sweep's error after its spec was
// accepted names the spec's keys, not the CLI's flags.
func TestSpecErrorText(t *testing.T) {
	fe := &FieldError{Field: "Workload.InputTokens", Err: errors.New("{Workload.InputTokens} 9000 + {Workload.OutputTokens} 16 = 9016 tokens")}
	if got, want := SpecErrorText(fmt.Errorf("prepare: %w", fe)), "prepare: input_len: input_len 9000 + output_len 16 = 9016 tokens"; got != want {
		t.Errorf("SpecErrorText = %q, want %q", got, want)
	}
	if got := SpecErrorText(errors.New("plain")); got != "plain" {
		t.Errorf("SpecErrorText = %q", got)
	}
}

// TestFromSpecGPUSource: a target's gpu_metrics_url and gpu_selector reach
// its scheduled sweeps.
func TestFromSpecGPUSource(t *testing.T) {
	c, err := config.Parse([]byte(`targets:
  - name: sim
    base_url: http://127.0.0.1:8000
    gpu_metrics_url: http://127.0.0.1:9400/metrics?token=s3cret
    gpu_selector: pod="vllm-0",namespace="llm"
    sweeps:
      - name: nightly
        every: 24h
        rates: [1]
`), "llmprobe.yml")
	if err != nil {
		t.Fatal(err)
	}
	tg := c.Targets[0]
	sc, err := FromSpec(tg.Sweeps[0].SweepSpec, tg)
	if err != nil {
		t.Fatal(err)
	}
	if sc.GPUMetricsURL != "http://127.0.0.1:9400/metrics?token=s3cret" || sc.GPUSelector != `pod="vllm-0",namespace="llm"` {
		t.Errorf("sweep config: %q %q", sc.GPUMetricsURL, sc.GPUSelector)
	}
}
