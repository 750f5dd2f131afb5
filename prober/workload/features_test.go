package workload

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkValidate holds r.Validate to want: nil for "", else that error.
func checkValidate(t *testing.T, r Request, want string) {
	t.Helper()
	err := r.Validate()
	switch {
	case want == "" && err != nil:
		t.Errorf("unexpected error %v", err)
	case want != "" && (err == nil || err.Error() != want):
		t.Errorf("error %v, want %q", err, want)
	}
}

// TestRequestValidate pins the error of each invalid request spec: the
// field path and the reason.
func TestRequestValidate(t *testing.T) {
	f := func(r Request, want string) { t.Helper(); checkValidate(t, r, want) }
	schema := map[string]any{"type": "object"}
	f(Request{}, "")
	f(Request{Temperature: new(0.0), TopP: new(1.0), Seed: new(int64(-3)), Stop: []string{"\n"}, MinTokens: 4,
		ExtraBody: map[string]any{"repetition_penalty": 1.1},
		Features: []RequestFeature{{Kind: FeatureNoStream, Share: 0.1}, {Kind: FeatureLogprobs, Share: 1, TopLogprobs: 20},
			{Kind: FeatureJSONSchema, Share: 0.5, Schema: schema}, {Kind: FeatureJSONSchema, Share: 0.5, Name: "b", Schema: schema},
			{Kind: FeatureLoRA, Share: 0.3, Model: "sql-lora"}}}, "")
	f(Request{Temperature: new(-1.0)}, "temperature: must be a finite number >= 0, got -1")
	f(Request{Temperature: new(math.Inf(1))}, "temperature: must be a finite number >= 0, got +Inf")
	f(Request{TopP: new(0.0)}, "top_p: must be in (0, 1], got 0")
	f(Request{Stop: []string{"a", ""}}, "stop[1]: must be 1 to 1024 bytes, got 0")
	f(Request{Stop: make([]string, 17)}, "stop: at most 16 stop strings, got 17")
	f(Request{MinTokens: -1}, "min_tokens: must be in [0, 1048576], got -1")
	f(Request{ExtraBody: map[string]any{"stream": true}},
		"extra_body.stream: may not be set in extra_body (llmprobe sets it; use the request field or feature that sends it)")
	f(Request{ExtraBody: map[string]any{"temperature": 1}},
		"extra_body.temperature: may not be set in extra_body (llmprobe sets it; use the request field or feature that sends it)")
	// Keys that multiply the server's work per request or set the output
	// length under another name (issue 34: {"n": 1000} multiplied a
	// sweep's load past max_sweep_rate).
	f(Request{ExtraBody: map[string]any{"n": 1000}},
		"extra_body.n: may not be set in extra_body: it makes the server generate several sequences per request, work llmprobe neither measures nor counts against max_sweep_rate")
	f(Request{ExtraBody: map[string]any{"best_of": 5, "top_k": 3}}, "extra_body.best_of: may not be set in extra_body: it makes the server generate several sequences per request, work llmprobe neither measures nor counts against max_sweep_rate")
	f(Request{ExtraBody: map[string]any{"use_beam_search": true}}, "extra_body.use_beam_search: may not be set in extra_body: beam search generates several sequences per request, work llmprobe neither measures nor counts against max_sweep_rate")
	f(Request{ExtraBody: map[string]any{"max_new_tokens": 100000}}, "extra_body.max_new_tokens: may not be set in extra_body: it bounds the output under another server's name: llmprobe sets the output length as max_tokens (output_tokens)")
	f(Request{ExtraBody: map[string]any{"max_tokens": 100000}}, "extra_body.max_tokens: may not be set in extra_body (llmprobe sets it; use the request field or feature that sends it)")
	f(Request{ExtraBody: map[string]any{"x": math.NaN()}}, "extra_body.x: cannot be encoded as JSON: json: unsupported value: NaN")
	f(Request{ExtraBody: map[string]any{"x": strings.Repeat("a", MaxExtraBodyBytes)}}, "extra_body: encodes to 65543 bytes, more than 65536")
	f(Request{Features: []RequestFeature{{Kind: "beam", Share: 1}}},
		`features[0].kind: must be one of no_stream, logprobs, json_schema, lora, tools, images, got "beam"`)
	f(Request{Features: []RequestFeature{{Kind: FeatureNoStream, Share: 0}}}, "features[0].share: must be in (0, 1], got 0")
	f(Request{Features: []RequestFeature{{Kind: FeatureNoStream, Share: 1.5}}}, "features[0].share: must be in (0, 1], got 1.5")
	f(Request{Features: []RequestFeature{{Kind: FeatureNoStream, Share: math.NaN()}}}, "features[0].share: must be in (0, 1], got NaN")
	f(Request{Features: []RequestFeature{{Kind: FeatureNoStream, Share: 0.5}, {Kind: FeatureNoStream, Share: 0.5}}},
		"features[1].kind: no_stream is given twice")
	f(Request{Features: []RequestFeature{{Kind: FeatureNoStream, Share: 0.5, Model: "m"}}},
		"features[0].model: does not apply to kind no_stream")
	f(Request{Features: []RequestFeature{{Kind: FeatureLogprobs, Share: 0.5, TopLogprobs: 21}}},
		"features[0].top_logprobs: must be in [0, 20], got 21")
	f(Request{Features: []RequestFeature{{Kind: FeatureJSONSchema, Share: 0.5}}},
		"features[0].schema: required for kind json_schema (or schema_file)")
	f(Request{Features: []RequestFeature{{Kind: FeatureJSONSchema, Share: 0.5, Schema: schema, Name: "a b"}}},
		`features[0].name: must match [a-zA-Z0-9_-]{1,64}, got "a b"`)
	f(Request{Features: []RequestFeature{{Kind: FeatureJSONSchema, Share: 0.5, Schema: map[string]any{"type": "thing"}}}},
		"features[0].schema: invalid schema: not valid against the draft 2020-12 meta-schema: "+
			"enum: thing does not equal any of: [array boolean integer null number object string]")
	f(Request{Features: []RequestFeature{{Kind: FeatureJSONSchema, Share: 0.5, Schema: map[string]any{"$ref": "other.json"}}}},
		"features[0].schema: invalid schema: "+
			"$ref to another document (https://llmprobe.invalid/workload/other.json) is not supported: inline it")
	f(Request{Features: []RequestFeature{{Kind: FeatureJSONSchema, Share: 0.6, Schema: schema}, {Kind: FeatureJSONSchema, Share: 0.6, Schema: schema}}},
		"features[1].share: the shares of the json_schema features add up to 1.2, more than 1")
	f(Request{Features: []RequestFeature{{Kind: FeatureLoRA, Share: 0.5}}},
		"features[0].model: required for kind lora: the adapter's name as /v1/models lists it")
	f(Request{Features: []RequestFeature{{Kind: FeatureLoRA, Share: 0.5, Model: "a b"}}},
		`features[0].model: must not contain spaces or control characters, got "a b"`)
	f(Request{Features: make([]RequestFeature, 17)}, "features: at most 16 features, got 17")

	// Through Spec, the path starts at request.
	s := DefaultSpec()
	s.Request = &Request{TopP: new(2.0)}
	if err := s.Validate(); err == nil || err.Error() != "request.top_p: must be in (0, 1], got 2" {
		t.Errorf("Spec.Validate: %v", err)
	}
}

// TestReadSchemaFiles reads a schema file relative to a directory, and
// names the field of every failure.
func TestReadSchemaFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "s.json"), []byte(`{"type":"object","required":["a"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "big.json"), []byte(`{"x":"`+strings.Repeat("a", MaxSchemaBytes)+`"}`), 0o600)
	os.WriteFile(filepath.Join(dir, "list.json"), []byte(`[1]`), 0o600)
	r := &Request{Features: []RequestFeature{{Kind: FeatureJSONSchema, Share: 1, SchemaFile: "s.json"}}}
	if err := r.Validate(); err == nil || err.Error() != "features[0].schema_file: not read (ReadSchemaFiles)" {
		t.Errorf("unread: %v", err)
	}
	if err := r.ReadSchemaFiles(dir); err != nil {
		t.Fatal(err)
	}
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
	p, _ := NewRequestPlan(r)
	d := p.Draw(1, 1)
	if d.Schema == nil || d.Schema.Check([]byte(`{"a":1}`)) != nil || d.Schema.Check([]byte(`{}`)) == nil {
		t.Errorf("schema from file not in force")
	}
	if !strings.Contains(string(d.Body), `"response_format":{"json_schema":{"name":"llmprobe","schema":{"required":["a"],"type":"object"}},"type":"json_schema"}`) {
		t.Errorf("body %s", d.Body)
	}
	for _, tc := range []struct {
		f    RequestFeature
		want string
	}{
		{RequestFeature{Kind: FeatureJSONSchema, Share: 1, SchemaFile: "none.json"}, "features[0].schema_file: open " + filepath.Join(dir, "none.json") + ": no such file or directory"},
		{RequestFeature{Kind: FeatureJSONSchema, Share: 1, SchemaFile: "big.json"}, "features[0].schema_file: " + filepath.Join(dir, "big.json") + " is larger than 1048576 bytes"},
		{RequestFeature{Kind: FeatureJSONSchema, Share: 1, SchemaFile: "list.json"}, "features[0].schema_file: " + filepath.Join(dir, "list.json") + ": not a JSON object: json: cannot unmarshal array into Go value of type map[string]interface {}"},
		{RequestFeature{Kind: FeatureJSONSchema, Share: 1, SchemaFile: "s.json", Schema: map[string]any{}}, "features[0].schema_file: give schema or schema_file, not both"},
	} {
		r := &Request{Features: []RequestFeature{tc.f}}
		if err := r.ReadSchemaFiles(dir); err == nil || err.Error() != tc.want {
			t.Errorf("%+v: %v, want %q", tc.f, err, tc.want)
		}
	}
}

// TestDrawShares draws 4000 items and holds each feature's count within
// five binomial standard deviations of its share; the draws are a pure
// function of (seed, index) and the json_schema and lora alternatives never
// overlap.
func TestDrawShares(t *testing.T) {
	schema := map[string]any{"type": "object"}
	r := &Request{Temperature: new(0.5), Features: []RequestFeature{
		{Kind: FeatureNoStream, Share: 0.1}, {Kind: FeatureLogprobs, Share: 0.2, TopLogprobs: 5},
		{Kind: FeatureJSONSchema, Share: 0.1, Schema: schema}, {Kind: FeatureJSONSchema, Share: 0.05, Name: "b", Schema: schema},
		{Kind: FeatureLoRA, Share: 0.3, Model: "a"}, {Kind: FeatureLoRA, Share: 0.6, Model: "b"},
	}}
	p, err := NewRequestPlan(r)
	if err != nil {
		t.Fatal(err)
	}
	const n = 4000
	count := map[string]int{}
	for i := range int64(n) {
		d := p.Draw(42, i)
		if d2 := p.Draw(42, i); d2.NoStream != d.NoStream || d2.Model != d.Model || d2.Schema != d.Schema || d2.Logprobs != d.Logprobs {
			t.Fatalf("item %d: draws differ", i)
		}
		if !strings.HasPrefix(string(d.Body), `,"temperature":0.5`) {
			t.Fatalf("body %s", d.Body)
		}
		if d.NoStream {
			count["no_stream"]++
		}
		if d.Logprobs {
			count["logprobs"]++
			if d.TopLogprobs != 5 {
				t.Fatalf("top_logprobs %d", d.TopLogprobs)
			}
		}
		if d.Schema != nil {
			count["schema:"+string(d.Body[len(d.Body)-40:])]++
			count["json_schema"]++
		}
		if d.Model != "" {
			count["lora:"+d.Model]++
		}
		if len(d.Names) != len(nonEmpty(d)) {
			t.Fatalf("names %v for %+v", d.Names, d)
		}
	}
	check := func(key string, share float64) {
		t.Helper()
		mean, sd := n*share, math.Sqrt(n*share*(1-share))
		if got := float64(count[key]); math.Abs(got-mean) > 5*sd {
			t.Errorf("%s: %v of %d, want %v ± %.0f", key, got, n, mean, 5*sd)
		}
	}
	check("no_stream", 0.1)
	check("logprobs", 0.2)
	check("json_schema", 0.15)
	check("lora:a", 0.3)
	check("lora:b", 0.6)
	// Another seed draws other items.
	same := 0
	for i := range int64(200) {
		if p.Draw(42, i).Model == p.Draw(43, i).Model {
			same++
		}
	}
	if same == 200 {
		t.Errorf("seed does not change the draws")
	}
	var nilPlan *RequestPlan
	if d := nilPlan.Draw(1, 1); d.Body != nil || d.Names != nil || d.NoStream {
		t.Errorf("nil plan drew %+v", d)
	}
}

func nonEmpty(d RequestDraw) []string {
	var out []string
	if d.NoStream {
		out = append(out, FeatureNoStream)
	}
	if d.Logprobs {
		out = append(out, FeatureLogprobs)
	}
	if d.Schema != nil {
		out = append(out, FeatureJSONSchema)
	}
	if d.Model != "" {
		out = append(out, FeatureLoRA)
	}
	return out
}
