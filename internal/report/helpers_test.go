package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/prober/sweep"
)

// tableText returns WriteTable's text of res.
func tableText(t *testing.T, res *sweep.Result) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteTable(&b, res); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// checkText requires out (called what in the messages, which print shown)
// to hold every string of want and none of notWant.
func checkText(t *testing.T, what, out, shown string, want, notWant []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, shown)
		}
	}
	for _, w := range notWant {
		if strings.Contains(out, w) {
			t.Errorf("%s has %q:\n%s", what, w, shown)
		}
	}
}

// textCase is a sweep result and what its rendering must and must not say.
type textCase struct {
	name    string
	sweep   func() *sweep.Result
	want    []string
	notWant []string
}
