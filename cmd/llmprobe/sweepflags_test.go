package main

import (
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/llmprobe/llmprobe/prober/sweep"
)

// TestSweepFlagsAreTheTable fails when a flag of `llmprobe sweep` or the
// sweep part of `llmprobe compare` disagrees with the settings table on
// its default, help or visibility, or when sweep has a flag the table
// lacks (or the reverse).
func TestSweepFlagsAreTheTable(t *testing.T) {
	app, _, _ := newApp(io.Discard, io.Discard)
	model := app.Model()
	for _, c := range []struct {
		cmd     string
		surface sweep.Surface
	}{{"sweep", sweep.SurfaceSweep}, {"compare", sweep.SurfaceCompare}} {
		var cmd *kingpin.CmdModel
		for _, m := range model.Commands {
			if m.Name == c.cmd {
				cmd = m
			}
		}
		if cmd == nil {
			t.Fatalf("no %s command", c.cmd)
		}
		seen := map[string]bool{}
		for _, fl := range cmd.Flags {
			s := sweep.LookupFlag(fl.Name)
			if s == nil || s.Internal {
				if c.cmd == "sweep" {
					t.Errorf("sweep --%s is not in the settings table", fl.Name)
				}
				continue // one of compare's own flags
			}
			seen[fl.Name] = true
			def, doc, hidden := s.Default, s.Doc, false
			if c.surface == sweep.SurfaceCompare {
				if s.CompareDefault != "" {
					def = s.CompareDefault
				}
				if s.CompareDoc != "" {
					doc = s.CompareDoc
				}
				hidden = s.CompareHidden
			}
			var want []string
			if def != "" {
				want = []string{def}
			}
			if !slices.Equal(fl.Default, want) {
				t.Errorf("%s --%s: default %q, the table's %q", c.cmd, fl.Name, fl.Default, want)
			}
			if fl.Help != doc || fl.Hidden != hidden {
				t.Errorf("%s --%s: help %q (hidden %v), the table's %q (hidden %v)", c.cmd, fl.Name, fl.Help, fl.Hidden, doc, hidden)
			}
		}
		for _, s := range sweep.Settings() {
			if s.Flag != "" && !s.Internal && (s.Surfaces&c.surface != 0 || (c.surface == sweep.SurfaceCompare && s.CompareHidden)) && !seen[s.Flag] {
				t.Errorf("%s lacks --%s of the settings table", c.cmd, s.Flag)
			}
		}
	}
}

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
		f := &sweepFlags{}
		addSweepFlags(app.Command("sweep", ""), f, sweep.SurfaceSweep)
		if _, err := app.Parse(append([]string{"sweep", "--out", t.TempDir()}, args...)); err != nil {
			t.Fatal(err)
		}
		_, err := buildSweepConfig(f)
		return err
	}
	names := func(err error, s sweep.Setting) bool {
		var fe *flagError
		return flagOf(err) == s.Flag || (errors.As(err, &fe) && fe.flag == s.Flag)
	}
	n := 0
	for _, s := range sweep.Settings() {
		if s.Flag == "" || s.Internal || s.Surfaces&sweep.SurfaceSweep == 0 || s.Kind == sweep.KindString || (s.Bound == sweep.Bound{}) {
			continue
		}
		outside, inside := boundCases(s)
		ctx := []string{"--rates", "1,2"}
		if strings.HasPrefix(s.Field, "Workload.Dataset.") {
			ctx = append(ctx, "--dataset", "d.jsonl") // the flag applies with a dataset
		}
		for _, v := range outside {
			if v == "0" && s.ZeroIsDefault() {
				continue // 0 is the default: none (--num-prompts 0: the step is bounded by --duration)
			}
			n++
			if err := build(append([]string{"--" + s.Flag + "=" + v}, ctx...)...); !names(err, s) {
				t.Errorf("--%s=%s (outside the table's bound): got %v, want an error naming --%s", s.Flag, v, err, s.Flag)
			}
		}
		for _, v := range inside {
			n++
			if err := build(append([]string{"--" + s.Flag + "=" + v}, ctx...)...); names(err, s) {
				t.Errorf("--%s=%s (inside the table's bound) refused: %v", s.Flag, v, err)
			}
		}
	}
	if n < 40 {
		t.Errorf("only %d bound cases: the table lost its bounds?", n)
	}
}
