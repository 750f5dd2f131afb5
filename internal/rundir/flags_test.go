package rundir

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/llmprobe/llmprobe/prober/sweep"
)

// boundCases returns, for a setting's bound, values just outside it (each
// must be refused) and at its edges inside (none may be refused for this
// setting), as flag text of its kind.
func boundCases(s sweep.Setting) (outside, inside []string) {
	b := s.Bound
	format := func(v float64) string {
		switch s.Kind {
		case sweep.KindInt, sweep.KindInt64:
			return strconv.FormatInt(int64(v), 10)
		case sweep.KindDuration:
			return time.Duration(v).String()
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	step := 1.0
	if s.Kind == sweep.KindFloat {
		step = 1e-3
	}
	if b.HasMin {
		if b.MinOpen {
			outside, inside = append(outside, format(b.Min)), append(inside, format(b.Min+step))
		} else {
			outside, inside = append(outside, format(b.Min-step)), append(inside, format(b.Min))
		}
	}
	if b.HasMax {
		if b.MaxOpen {
			outside, inside = append(outside, format(b.Max)), append(inside, format(b.Max-step))
		} else {
			outside, inside = append(outside, format(b.Max+step)), append(inside, format(b.Max))
		}
	}
	return outside, inside
}

// TestSweepFlagsTakeTheTableBounds fails when the CLI refuses a value the
// settings table's bound allows, or takes one it refuses: every bound is
// the table's, checked by sweep.Setting.Apply and Config.Validate.
func TestSweepFlagsTakeTheTableBounds(t *testing.T) {
	build := func(args ...string) error {
		app := kingpin.New("t", "")
		f := &SweepFlags{}
		AddSweepFlags(app.Command("sweep", ""), f, sweep.SurfaceSweep)
		if _, err := app.Parse(append([]string{"sweep", "--out", t.TempDir()}, args...)); err != nil {
			t.Fatal(err)
		}
		_, err := f.Config()
		return err
	}
	names := func(err error, s sweep.Setting) bool {
		var fe *FlagError
		var field *sweep.FieldError
		return (errors.As(err, &field) && sweep.FlagSpelling(field.Field) == "--"+s.Flag) || (errors.As(err, &fe) && fe.Flag == s.Flag)
	}
	n := 0
	for _, s := range sweep.Settings() {
		if s.Flag == "" || s.Internal || s.Surfaces&sweep.SurfaceSweep == 0 || s.Kind == sweep.KindString || (s.Bound == sweep.Bound{}) {
			continue
		}
		outside, inside := boundCases(s)
		ctx := []string{"--rates", "1,2"}
		if s.Field == "Burstiness" {
			ctx = append(ctx, "--arrival", "gamma") // a shape other than 1 needs gamma arrivals (knob.Arrival)
		}
		if strings.HasPrefix(s.Field, "Workload.Dataset.") {
			ctx = append(ctx, "--dataset", "d.jsonl") // the flag applies with a dataset
		}
		// A step interval aligns steps on --start-at, which needs one.
		ctxFor := func(v string) []string {
			if d, err := time.ParseDuration(v); s.Field == "StepInterval" && err == nil && d > 0 {
				return append(append([]string{}, ctx...), "--start-at", "2100-01-01T00:00:00Z")
			}
			return ctx
		}
		for _, v := range outside {
			if v == "0" && s.ZeroIsDefault() {
				continue // 0 is the default: none (--num-prompts 0: the step is bounded by --duration)
			}
			n++
			if err := build(append([]string{"--" + s.Flag + "=" + v}, ctxFor(v)...)...); !names(err, s) {
				t.Errorf("--%s=%s (outside the table's bound): got %v, want an error naming --%s", s.Flag, v, err, s.Flag)
			}
		}
		for _, v := range inside {
			n++
			if err := build(append([]string{"--" + s.Flag + "=" + v}, ctxFor(v)...)...); names(err, s) {
				t.Errorf("--%s=%s (inside the table's bound) refused: %v", s.Flag, v, err)
			}
		}
	}
	if n < 40 {
		t.Errorf("only %d bound cases: the table lost its bounds?", n)
	}
}

// TestSweepFlagsRequest: the request flags fill the workload's request
// section (a given 0 temperature is set, a pointer; --extra-body's JSON a
// map), over a --workload file's; without any there is no section.
func TestSweepFlagsRequest(t *testing.T) {
	config := func(args ...string) sweep.Config {
		t.Helper()
		app := kingpin.New("t", "")
		f := &SweepFlags{}
		AddSweepFlags(app.Command("sweep", ""), f, sweep.SurfaceSweep)
		if _, err := app.Parse(append([]string{"sweep", "--rates", "1"}, args...)); err != nil {
			t.Fatal(err)
		}
		c, err := f.Config()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if r := config().Workload.Request; r != nil {
		t.Errorf("no request flag: request %+v, want none", r)
	}
	r := config("--temperature", "0", "--stop", "x", "--min-tokens", "2", "--extra-body", `{"a":1}`).Workload.Request
	if r == nil || r.Temperature == nil || *r.Temperature != 0 || r.TopP != nil || !slices.Equal(r.Stop, []string{"x"}) ||
		r.MinTokens != 2 || r.ExtraBody["a"] != 1.0 {
		t.Fatalf("request %+v", r)
	}
	wl := filepath.Join(t.TempDir(), "wl.yml")
	if err := os.WriteFile(wl, []byte("input_tokens: {dist: fixed, value: 8}\noutput_tokens: {dist: fixed, value: 2}\n"+
		"request:\n  top_p: 0.5\n  stop: [y]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = config("--workload", wl, "--stop", "x").Workload.Request
	if r == nil || r.TopP == nil || *r.TopP != 0.5 || !slices.Equal(r.Stop, []string{"x"}) {
		t.Errorf("over the file's request: %+v, want top_p 0.5 and the flag's stop", r)
	}
}
