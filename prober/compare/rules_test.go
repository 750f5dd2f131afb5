package compare

import (
	"os"
	"strings"
	"testing"
)

// TestRulesTableMatchesDocs: every row of the rules table is a row of
// docs/compare.md's "Verdict rules" table, in the same order, whose source
// column names the evidence the rule needs; and the table has no other row.
func TestRulesTableMatchesDocs(t *testing.T) {
	b, err := os.ReadFile("../../docs/compare.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, "| rule | ok when | source |")
	if i < 0 {
		t.Fatal(`docs/compare.md has no "| rule | ok when | source |" table`)
	}
	var rows []string
	for _, l := range strings.Split(doc[i:], "\n")[2:] {
		if !strings.HasPrefix(l, "| ") {
			break
		}
		rows = append(rows, l)
	}
	if len(rows) != len(validityRules) {
		t.Errorf("docs/compare.md lists %d rules, the table has %d", len(rows), len(validityRules))
	}
	for k, vr := range validityRules {
		if k >= len(rows) {
			break
		}
		cells := strings.Split(strings.Trim(rows[k], "|"), " | ")
		name, source := strings.TrimSpace(cells[0]), strings.TrimSpace(cells[len(cells)-1])
		if name != vr.name || source != vr.needs {
			t.Errorf("row %d: docs say %q from %q, the table %q from %q", k+1, name, source, vr.name, vr.needs)
		}
	}
}
