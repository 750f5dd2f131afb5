package jsonkind

import (
	"strings"
	"testing"
)

// TestDuplicateKey: a key given twice in one object is refused naming its
// path, at any depth; the same key in sibling objects is not a duplicate
// (issue 22 risks: "duplicate JSON keys in an API body: the last wins").
func TestDuplicateKey(t *testing.T) {
	for body, want := range map[string]string{
		`{"target": "sim", "rates": [1], "rates": [500]}`:                                      "rates: given twice",
		`{"goodput": {"ttft": "1s", "tpot": "5ms", "ttft": "2s"}}`:                             "goodput.ttft: given twice",
		`{"workload": {"request": {"features": [{"kind": "a"}, {"kind": "b", "kind": "c"}]}}}`: "workload.request.features[1].kind: given twice",
		`{"a": [[{"x": 1}], [{"x": 1, "y": {"z": 1, "z": 2}}]]}`:                               "a[1][0].y.z: given twice",
		`{"a": [{"k": 1}, {"k": 2}], "b": {"k": 1}, "k": {"k": {"k": 1}}}`:                     "",
		`{"target": "sim", "rates": [1, 1]}`:                                                   "",
	} {
		err := DuplicateKey([]byte(body))
		if want == "" {
			if err != nil {
				t.Errorf("%s: %v, want no duplicate", body, err)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
}
