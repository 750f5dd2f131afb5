package rundir

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/prober/sweep"
)

// docFlag matches the flags a row of a flag table in docs/sweep.md
// documents.
var docFlag = regexp.MustCompile("`--([a-z][a-z0-9.-]*)")

// TestSettingsMatchDocs fails when a sweep flag of the table is missing
// from docs/sweep.md's flag tables, or the docs list a flag the table
// does not have.
func TestSettingsMatchDocs(t *testing.T) {
	b, err := os.ReadFile("../../docs/sweep.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	inFlags := false
	for line := range strings.SplitSeq(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "| flag |"):
			inFlags = true
		case !strings.HasPrefix(line, "|"):
			inFlags = false
		case inFlags:
			cells := strings.Split(line, "|")
			for _, m := range docFlag.FindAllStringSubmatch(cells[1], -1) {
				documented[m[1]] = true
			}
		}
	}
	var table []string
	for _, s := range flagSettings() {
		if s.Surfaces&sweep.SurfaceSweep != 0 {
			table = append(table, s.Flag)
			if !documented[s.Flag] {
				t.Errorf("--%s is a sweep setting but docs/sweep.md's flag tables lack it", s.Flag)
			}
		}
	}
	for f := range documented {
		if !slices.Contains(table, f) {
			t.Errorf("docs/sweep.md documents --%s, which neither the settings table nor the commands' own settings have", f)
		}
	}
}
