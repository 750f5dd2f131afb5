package rules_test

import (
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/rules"
)

func TestFindThreshold(t *testing.T) {
	groups, err := rules.Parse([]byte(`groups:
  - name: g
    rules:
      - record: a:b:c
        expr: sum by (target) (x) >= 200
      - alert: A
        expr: label_replace(a:b:c > 2, "metric", "m", "", "") and on (target) 0.5 > y and z < -0.05
      - alert: Twice
        expr: a:b:c > 2 or a:b:c > 3
`))
	if err != nil {
		t.Fatal(err)
	}
	files := []rules.File{{Name: "t.yml", Groups: groups}}
	f := func(rule, series, want, wantErr string) {
		t.Helper()
		got, err := rules.FindThreshold(files, rule, series)
		if wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), wantErr) {
				t.Errorf("%s %s: error %v, want %q", rule, series, err, wantErr)
			}
			return
		}
		if err != nil || got.String() != want {
			t.Errorf("%s %s: %v, %v; want %s", rule, series, got, err, want)
		}
	}
	f("A", "a:b:c", "> 2", "")            // inside label_replace
	f("A", "y", "< 0.5", "")              // the number on the left, turned around
	f("A", "z", "< -0.05", "")            // a negative number
	f("a:b:c", "x", "", "with no number") // aggregated: not the series compared
	f("Twice", "a:b:c", "", "both > 2 and > 3")
	f("Nope", "a:b:c", "", "no rule Nope")
	f("A", "w", "", "compares w with no number")
}
