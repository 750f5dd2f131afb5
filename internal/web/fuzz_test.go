package web

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// bodyErrors are the rejections of decodeSweepRequest that concern the whole
// body rather than one key.
var bodyErrors = []string{
	"invalid JSON at byte ",
	"invalid JSON: the body ends inside the object",
	"the body is empty: want a JSON object",
	"the body must be a JSON object",
	"data after the JSON object",
	"the body has an empty key",
}

// FuzzSweepBody fuzzes the body of POST /api/v1/sweeps as the handler
// takes it: decodeSweepRequest, then sweep.FromSpec
// against a target with max_sweep_rate 100. It checks that nothing panics,
// that every rejection names a key of the body (or, for the body as a
// whole, says why), that a spec sweep.FromSpec refuses names its key (or the
// sweep.Config field), and that an accepted spec gives a sweep.Config that
// validates and keeps under the target's max_sweep_rate. Seeds:
// testdata/fuzz/FuzzSweepBody.
func FuzzSweepBody(f *testing.F) {
	cfg, err := config.Parse([]byte("targets:\n  - name: sim\n    base_url: http://127.0.0.1:1\n    max_sweep_rate: 100\n"), "t.yml")
	if err != nil {
		f.Fatal(err)
	}
	target := cfg.Targets[0]
	for _, s := range []string{
		`{"target": "sim", "rates": [1, 2, 4], "num_prompts": 20}`,
		`{"target": "sim", "rates": "auto", "goodput": {"ttft": "800ms"}}`,
		`{"target": "sim", "concurrency": [1, 2], "duration": "2s"}`,
		`{"target": "sim", "rates": [1], "workload": {"input_tokens": {"dist": "fixed", "value": 8}, "output_tokens": {"dist": "fixed", "value": 2}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := decodeSweepRequest(body)
		if err != nil {
			checkNamesKey(t, body, err.Error())
			return
		}
		c, err := sweep.FromSpec(req.SweepSpec, target)
		if err != nil {
			se := config.AsSpecError(err)
			var fe *sweep.FieldError
			if (se == nil || se.Key == "") && !errors.As(err, &fe) {
				t.Fatalf("FromSpec refused %q without naming a key: %v", body, err)
			}
			if msg := se.Error(); msg == "" || strings.ContainsRune(msg, '\n') {
				t.Fatalf("FromSpec error %q: want one non-empty line", msg)
			}
			return
		}
		c.OutDir = t.TempDir()
		if err := c.Validate(); err != nil {
			t.Fatalf("FromSpec accepted %q but its Config does not validate: %v", body, err)
		}
		if c.NumPrompts > sweep.MaxStepRequests || c.MinPrompts > sweep.MaxStepRequests || c.Warmups > sweep.MaxStepRequests {
			t.Fatalf("accepted a step over %d requests (num_prompts %d, min %d, warmups %d) from %q",
				sweep.MaxStepRequests, c.NumPrompts, c.MinPrompts, c.Warmups, body)
		}
		for _, r := range c.Rates {
			if !(r > 0) || r > target.MaxSweepRate || math.IsInf(r, 0) {
				t.Fatalf("accepted rate %v (max_sweep_rate %v) from %q", r, target.MaxSweepRate, body)
			}
		}
		if c.NumPrompts == 0 && c.Trace == nil {
			for _, r := range c.Rates {
				if math.Round(r*c.Duration.Seconds()) > sweep.MaxStepRequests {
					t.Fatalf("accepted rate %v over duration %v: a step over %d requests, from %q", r, c.Duration, sweep.MaxStepRequests, body)
				}
			}
		}
		if len(c.Concurrency) > 0 {
			t.Fatalf("accepted a closed loop against a target with max_sweep_rate: %q", body)
		}
		if c.Auto && (c.Search.MaxRate <= 0 || c.Search.MaxRate > target.MaxSweepRate) {
			t.Fatalf("rates auto with search max rate %v (max_sweep_rate %v)", c.Search.MaxRate, target.MaxSweepRate)
		}
	})
}

// checkNamesKey fails t unless msg, a decodeSweepRequest rejection of body, is a
// whole-body error or begins with one of the body's top-level keys ("key:"
// or "key.sub:").
func checkNamesKey(t *testing.T, body []byte, msg string) {
	t.Helper()
	if msg == "" {
		t.Fatalf("empty rejection of %q", body)
	}
	for _, p := range bodyErrors {
		if strings.HasPrefix(msg, p) {
			return
		}
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatalf("decodeSweepRequest's rejection %q of %q is not a whole-body error, yet the body is no JSON object (%v)", msg, body, err)
	}
	for k := range raw {
		if strings.HasPrefix(msg, k+": ") || strings.HasPrefix(msg, k+".") {
			return
		}
	}
	t.Fatalf("rejection %q of %q names no key of the body", msg, body)
}
