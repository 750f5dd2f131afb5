package slo

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/llmprobe/llmprobe/prober"
)

const ms = time.Millisecond

// rec builds a successful record with the given TTFT, E2E and output tokens.
func rec(ttft, e2e time.Duration, out int) *prober.Record {
	return &prober.Record{TTFT: ttft, E2E: e2e, CompletionTokens: out, HTTPStatus: 200}
}

func TestEvaluate(t *testing.T) {
	full := SLO{TTFT: 800 * ms, TPOT: 50 * ms, E2EL: 5000 * ms}
	tests := []struct {
		name     string
		slo      SLO
		r        *prober.Record
		good     bool
		violated []string
	}{
		{name: "all hold", slo: full, r: rec(100*ms, 1100*ms, 21), good: true},
		// TPOT = (4800-800)/(81-1) = 50ms exactly: == holds, as vLLM's s >= r.
		{name: "every boundary equal is good", slo: full, r: rec(800*ms, 4800*ms, 81), good: true},
		{name: "e2e boundary equal is good", slo: SLO{E2EL: 5 * time.Second}, r: rec(ms, 5*time.Second, 2), good: true},
		{name: "ttft one ns over", slo: full, r: rec(800*ms+1, 830*ms, 2), violated: []string{NameTTFT}},
		// TPOT = (1851-800)/(22-1) = 50.047ms > 50ms.
		{name: "tpot over", slo: full, r: rec(800*ms, 1851*ms, 22), violated: []string{NameTPOT}},
		{name: "e2el over", slo: full, r: rec(100*ms, 5001*ms, 200), violated: []string{NameE2EL}},
		{name: "all three over in names order", slo: full, r: rec(2*time.Second, 12*time.Second, 11), violated: []string{NameTTFT, NameTPOT, NameE2EL}},
		// One output token: TPOT counts as 0, so a huge E2E-TTFT gap does not violate TPOT.
		{name: "one token tpot is 0", slo: SLO{TPOT: ms}, r: rec(10*ms, 9*time.Second, 1), good: true},
		{name: "zero tokens tpot is 0", slo: SLO{TPOT: ms}, r: rec(10*ms, 9*time.Second, 0), good: true},
		{name: "unset thresholds ignored", slo: SLO{TTFT: 800 * ms}, r: rec(10*ms, time.Hour, 2), good: true},
		{name: "zero slo: success is good", slo: SLO{}, r: rec(time.Hour, time.Hour, 5), good: true},
		{name: "failed request neither good nor violating",
			slo: full, r: &prober.Record{Error: prober.ClassHTTP5xx, HTTPStatus: 500, TTFT: 10 * time.Second}},
		{name: "failed request with zero slo not good",
			slo: SLO{}, r: &prober.Record{Error: prober.ClassTimeout}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.slo.Verdict(tc.r)
			if v.Good != tc.good || !slices.Equal(v.Violated.Names(), tc.violated) {
				t.Fatalf("Verdict = %v, %q; want %v, %q", v.Good, v.Violated.Names(), tc.good, tc.violated)
			}
			for _, k := range Kinds {
				if v.Violated.Has(k) != slices.Contains(tc.violated, k.String()) {
					t.Errorf("Violated.Has(%s) = %v", k, v.Violated.Has(k))
				}
			}
			good, violated := tc.slo.Evaluate(tc.r)
			if good != tc.good || !slices.Equal(violated, tc.violated) {
				t.Fatalf("Evaluate = %v, %q; want %v, %q", good, violated, tc.good, tc.violated)
			}
		})
	}
}

func TestKindNames(t *testing.T) {
	for i, k := range Kinds {
		if k.String() != Names[i] {
			t.Errorf("Kinds[%d] = %s, Names[%d] = %s", i, k, i, Names[i])
		}
	}
	if got := Set(0).With(KindE2EL).With(KindTTFT).Names(); !slices.Equal(got, []string{NameTTFT, NameE2EL}) {
		t.Errorf("Names = %q", got)
	}
	if Set(0).Names() != nil {
		t.Error("empty set has names")
	}
}

func TestYAML(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    SLO
		wantErr string
	}{
		{name: "issue example", in: "slo: {ttft: 800ms, tpot: 50ms}", want: SLO{TTFT: 800 * ms, TPOT: 50 * ms}},
		{name: "block style all keys", in: "slo:\n  ttft: 1s\n  tpot: 40ms\n  e2el: 1m30s\n",
			want: SLO{TTFT: time.Second, TPOT: 40 * ms, E2EL: 90 * time.Second}},
		{name: "fractional seconds", in: "slo: {e2el: 2.5s}", want: SLO{E2EL: 2500 * ms}},
		{name: "empty mapping", in: "slo: {}", want: SLO{}},
		{name: "zero means unset", in: "slo: {ttft: 0}", want: SLO{}},
		{name: "unknown key", in: "slo: {ttft: 800ms, itl: 20ms}", wantErr: `line 1: unknown slo key "itl" (one of ttft, tpot, e2el, ttfa)`},
		{name: "missing unit", in: "slo:\n  ttft: 800\n", wantErr: `line 2: ttft: invalid duration "800" (want e.g. 800ms or 1.5s)`},
		{name: "negative", in: "slo: {tpot: -5ms}", wantErr: "line 1: tpot must be >= 0, got -5ms"},
		{name: "repeated key", in: "slo:\n  ttft: 1s\n  ttft: 2s\n", wantErr: `slo key "ttft" given twice`},
		{name: "not a mapping", in: "slo: 800ms", wantErr: "line 1: slo must be a mapping such as {ttft: 800ms, tpot: 50ms}"},
		{name: "nested value", in: "slo: {ttft: [1s]}", wantErr: "line 1: ttft must be a duration such as 800ms"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var doc struct {
				SLO SLO `yaml:"slo"`
			}
			err := yaml.Unmarshal([]byte(tc.in), &doc)
			if failedAsWanted(t, err, tc.wantErr) {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if doc.SLO != tc.want {
				t.Fatalf("got %+v, want %+v", doc.SLO, tc.want)
			}
			// Round trip through MarshalYAML.
			out, err := yaml.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			var back struct {
				SLO SLO `yaml:"slo"`
			}
			if err := yaml.Unmarshal(out, &back); err != nil || back.SLO != tc.want {
				t.Fatalf("round trip of %q = %+v, %v", out, back.SLO, err)
			}
		})
	}
}

func TestJSON(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    SLO
		wantOut string
		wantErr string
	}{
		{name: "two keys", in: `{"ttft":"800ms","tpot":"50ms"}`, want: SLO{TTFT: 800 * ms, TPOT: 50 * ms}, wantOut: `{"tpot":"50ms","ttft":"800ms"}`},
		{name: "empty", in: `{}`, want: SLO{}, wantOut: `{}`},
		{name: "e2el", in: `{"e2el":"5s"}`, want: SLO{E2EL: 5 * time.Second}, wantOut: `{"e2el":"5s"}`},
		{name: "unknown key", in: `{"ttft":"1s","foo":"1s"}`, wantErr: `unknown slo key "foo" (one of ttft, tpot, e2el, ttfa)`},
		{name: "number", in: `{"ttft":800}`, wantErr: `ttft must be a duration string such as "800ms"`},
		{name: "bad duration", in: `{"tpot":"fast"}`, wantErr: `tpot: invalid duration "fast" (want e.g. 800ms or 1.5s)`},
		{name: "not an object", in: `[1]`, wantErr: "slo: json: cannot unmarshal array"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s SLO
			err := json.Unmarshal([]byte(tc.in), &s)
			if failedAsWanted(t, err, tc.wantErr) {
				return
			}
			if err != nil || s != tc.want {
				t.Fatalf("got %+v, %v; want %+v", s, err, tc.want)
			}
			out, err := json.Marshal(s)
			if err != nil || string(out) != tc.wantOut {
				t.Fatalf("Marshal = %s, %v; want %s", out, err, tc.wantOut)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		slo     SLO
		wantErr string
	}{
		{name: "zero", slo: SLO{}},
		{name: "set", slo: SLO{TTFT: ms, TPOT: ms, E2EL: ms}},
		{name: "negative ttft", slo: SLO{TTFT: -ms}, wantErr: "ttft must be >= 0, got -1ms"},
		{name: "negative e2el", slo: SLO{E2EL: -time.Second}, wantErr: "e2el must be >= 0, got -1s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.slo.Validate()
			if (err == nil) != (tc.wantErr == "") || err != nil && err.Error() != tc.wantErr {
				t.Fatalf("Validate = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestParseGoodput(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		want     SLO
		wantArgs string
		wantErr  string
	}{
		{name: "vllm example", args: []string{"ttft:800", "tpot:50", "e2el:5000"},
			want: SLO{TTFT: 800 * ms, TPOT: 50 * ms, E2EL: 5 * time.Second}, wantArgs: "ttft:800 tpot:50 e2el:5000"},
		{name: "one arg with spaces", args: []string{"ttft:800 tpot:50"}, want: SLO{TTFT: 800 * ms, TPOT: 50 * ms}, wantArgs: "ttft:800 tpot:50"},
		{name: "commas", args: []string{"e2el:2000,ttft:300"}, want: SLO{TTFT: 300 * ms, E2EL: 2 * time.Second}, wantArgs: "ttft:300 e2el:2000"},
		{name: "fractional ms", args: []string{"tpot:12.5"}, want: SLO{TPOT: 12500 * time.Microsecond}, wantArgs: "tpot:12.5"},
		{name: "upper case key", args: []string{"TTFT:1"}, want: SLO{TTFT: ms}, wantArgs: "ttft:1"},
		{name: "bad key", args: []string{"ttft:800", "itl:20"}, wantErr: `invalid goodput key "itl": must be one of ttft, tpot, e2el, ttfa`},
		{name: "no colon", args: []string{"ttft=800"}, wantErr: `invalid goodput "ttft=800": want KEY:VALUE`},
		{name: "not a number", args: []string{"tpot:50ms"}, wantErr: `invalid goodput value for tpot: "50ms" is not a number of milliseconds`},
		{name: "negative", args: []string{"e2el:-1"}, wantErr: "invalid goodput value for e2el: -1 must be >= 0"},
		{name: "zero", args: []string{"ttft:0"}, wantErr: "invalid goodput value for ttft: 0 would make no request good"},
		{name: "inf", args: []string{"ttft:inf"}, wantErr: `invalid goodput value for ttft: "inf" is not a number`},
		{name: "huge", args: []string{"ttft:1e300"}, wantErr: "invalid goodput value for ttft: 1e+300 ms is too large"},
		{name: "twice", args: []string{"ttft:1", "ttft:2"}, wantErr: `goodput key "ttft" given twice`},
		{name: "empty", args: []string{" "}, wantErr: "goodput needs at least one KEY:VALUE pair"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseGoodput(tc.args)
			if failedAsWanted(t, err, tc.wantErr) {
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseGoodput = %+v, %v; want %+v", got, err, tc.want)
			}
			if a := got.GoodputArgs(); a != tc.wantArgs {
				t.Fatalf("GoodputArgs = %q, want %q", a, tc.wantArgs)
			}
			if back, err := ParseGoodput([]string{got.GoodputArgs()}); err != nil || back != got {
				t.Fatalf("round trip = %+v, %v", back, err)
			}
		})
	}
}

func TestThresholdsAndString(t *testing.T) {
	s := SLO{TTFT: 800 * ms, E2EL: time.Second}
	want := []Threshold{{NameTTFT, 800 * ms}, {NameE2EL, time.Second}}
	if got := s.Thresholds(); !slices.Equal(got, want) {
		t.Fatalf("Thresholds = %v, want %v", got, want)
	}
	if got := (SLO{}).String(); got != "none" {
		t.Fatalf("zero String = %q", got)
	}
	if got := s.String(); got != "ttft:800 e2el:1000" {
		t.Fatalf("String = %q", got)
	}
}

// failedAsWanted holds err to wantErr: with wantErr set, err must contain
// it, and true ends the case; without, the caller checks err.
func failedAsWanted(t *testing.T, err error, wantErr string) bool {
	t.Helper()
	if wantErr == "" {
		return false
	}
	if err == nil || !strings.Contains(err.Error(), wantErr) {
		t.Fatalf("err = %v, want it to contain %q", err, wantErr)
	}
	return true
}
