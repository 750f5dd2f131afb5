package sweep

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/config"
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

// mustSpec is the spec of YAML text.
func mustSpec(t *testing.T, text string) config.SweepSpec {
	t.Helper()
	s, err := config.ParseSweepSpec(text)
	if err != nil {
		t.Fatalf("%q: %v", text, err)
	}
	return s
}

// specTarget is a target to build sweep configs against.
func specTarget() config.TargetConfig {
	return config.TargetConfig{Name: "t", BaseURL: "http://127.0.0.1:1", API: client.APICompletions, Timeout: time.Minute}
}

// TestSweepSpecDefaultsAreTheTable fails when a sweep the daemon runs
// (a scheduled sweep's YAML, the sweep API's body) takes another default
// than the settings table, the sweep CLI's, for a setting it leaves out.
func TestSweepSpecDefaultsAreTheTable(t *testing.T) {
	c, err := FromSpec(mustSpec(t, "rates: auto"), specTarget())
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

// boundSpec is a spec of rates [1, 2] with key set to v (burstiness with
// gamma arrivals: a shape other than 1 needs them, knob.Arrival).
func boundSpec(t *testing.T, key string, v float64) config.SweepSpec {
	text := fmt.Sprintf("rates: [1, 2]\n%s: %v\n", key, v)
	if lookupKey(key).Kind == KindDuration {
		text = fmt.Sprintf("rates: [1, 2]\n%s: %v\n", key, time.Duration(v))
	}
	if key == "burstiness" {
		text += "arrival: gamma\n"
	}
	return mustSpec(t, text)
}

// TestSweepSpecTakesTheTableBounds fails when a spec key refuses a value
// the settings table's bound allows, or takes one it refuses (the CLI's
// side is cmd/llmprobe's TestSweepFlagsTakeTheTableBounds).
func TestSweepSpecTakesTheTableBounds(t *testing.T) {
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
			spec := boundSpec(t, s.Key, v)
			if _, err := FromSpec(spec, specTarget()); config.AsSpecError(err) == nil || config.AsSpecError(err).Key != s.Key {
				t.Errorf("%s: %v (outside the table's bound): got %v, want an error naming %s", s.Key, v, err, s.Key)
			}
		}
		for _, v := range inside {
			n++
			spec := boundSpec(t, s.Key, v)
			if _, err := FromSpec(spec, specTarget()); config.AsSpecError(err) != nil && config.AsSpecError(err).Key == s.Key {
				t.Errorf("%s: %v (inside the table's bound) refused: %v", s.Key, v, err)
			}
		}
	}
	if n < 12 {
		t.Errorf("only %d bound cases", n)
	}
}

// TestSweepSpecRefusesUnknownKeys: a key no row of the settings table has
// is refused with the key named, every such key at once.
func TestSweepSpecRefusesUnknownKeys(t *testing.T) {
	_, err := FromSpec(mustSpec(t, "rates: [1]\nmax_concurency: 4\nburstyness: 2\n"), specTarget())
	var keys []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		se := config.AsSpecError(e)
		if !strings.Contains(se.Err.Error(), "unknown key") {
			t.Errorf("%s: %v", se.Key, se.Err)
		}
		keys = append(keys, se.Key)
	}
	if want := []string{"burstyness", "max_concurency"}; !reflect.DeepEqual(keys, want) {
		t.Errorf("refused keys %q, want %q (%v)", keys, want, err)
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

// TestFromSpecGPUSource: a target's gpu_metrics_url and gpu_selector are
// kept for its scheduled sweeps and reach them, and the URL's secrets stay
// out of the config's Redacted.
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
	if tg.GPUMetricsURL != "http://127.0.0.1:9400/metrics?token=s3cret" || tg.GPUSelector != `pod="vllm-0",namespace="llm"` {
		t.Errorf("target: %q %q", tg.GPUMetricsURL, tg.GPUSelector)
	}
	if r := c.Redacted(); strings.Contains(r, "s3cret") || !strings.Contains(r, "gpu_metrics_url") {
		t.Errorf("Redacted:\n%s", r)
	}
	sc, err := FromSpec(tg.Sweeps[0].SweepSpec, tg)
	if err != nil {
		t.Fatal(err)
	}
	if sc.GPUMetricsURL != "http://127.0.0.1:9400/metrics?token=s3cret" || sc.GPUSelector != `pod="vllm-0",namespace="llm"` {
		t.Errorf("sweep config: %q %q", sc.GPUMetricsURL, sc.GPUSelector)
	}
}
