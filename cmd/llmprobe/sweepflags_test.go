package main

import (
	"io"
	"slices"
	"testing"

	"github.com/alecthomas/kingpin/v2"

	"github.com/llmprobe/llmprobe/internal/rundir"
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
			s := rundir.LookupFlag(fl.Name)
			if s == nil || s.Internal {
				if c.cmd == "sweep" {
					t.Errorf("sweep --%s is neither in the settings table nor a command's own setting (rundir)", fl.Name)
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
