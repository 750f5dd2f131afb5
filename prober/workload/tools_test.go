package workload

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// TestReasoningAndToolsValidate pins the errors of the reasoning options and
// the tools feature.
func TestReasoningAndToolsValidate(t *testing.T) {
	f := func(r Request, want string) { t.Helper(); checkValidate(t, r, want) }
	weather := ToolSpec{Name: "get_weather", Parameters: map[string]any{"type": "object",
		"properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []any{"city"}}}
	f(Request{ReasoningEffort: "low", ChatTemplateKwargs: map[string]any{"enable_thinking": false},
		Features: []RequestFeature{{Kind: FeatureTools, Share: 0.5, Tools: []ToolSpec{weather, {Name: "noop"}}, ToolChoice: "get_weather"}}}, "")
	f(Request{ReasoningEffort: "max"}, `reasoning_effort: must be one of none, minimal, low, medium, high, xhigh, got "max"`)
	f(Request{ChatTemplateKwargs: map[string]any{"x": math.Inf(1)}},
		"chat_template_kwargs: cannot be encoded as JSON: json: unsupported value: +Inf")
	f(Request{ChatTemplateKwargs: map[string]any{"x": strings.Repeat("a", MaxExtraBodyBytes)}},
		"chat_template_kwargs: encodes to 65568 bytes, more than 65536")
	f(Request{ExtraBody: map[string]any{"chat_template_kwargs": map[string]any{}}},
		"extra_body.chat_template_kwargs: may not be set in extra_body (llmprobe sets it; use the request field or feature that sends it)")
	f(Request{Features: []RequestFeature{{Kind: FeatureTools, Share: 0.5}}}, "features[0].tools: required for kind tools: at least one tool")
	f(Request{Features: []RequestFeature{{Kind: FeatureTools, Share: 0.5, Tools: make([]ToolSpec, MaxTools+1)}}},
		"features[0].tools: at most 64 tools, got 65")
	f(Request{Features: []RequestFeature{{Kind: FeatureTools, Share: 0.5, Tools: []ToolSpec{{Name: "a b"}}}}},
		`features[0].tools[0].name: must match [a-zA-Z0-9_-]{1,64}, got "a b"`)
	f(Request{Features: []RequestFeature{{Kind: FeatureTools, Share: 0.5, Tools: []ToolSpec{weather, weather}}}},
		`features[0].tools[1].name: "get_weather" is given twice`)
	f(Request{Features: []RequestFeature{{Kind: FeatureTools, Share: 0.5, Tools: []ToolSpec{weather}, ToolChoice: "other"}}},
		`features[0].tool_choice: must be auto, required, none or one of the tools' names, got "other"`)
	f(Request{Features: []RequestFeature{{Kind: FeatureTools, Share: 0.5, Tools: []ToolSpec{{Name: "t", Parameters: map[string]any{"type": "thing"}}}}}},
		"features[0].tools[0].parameters: invalid schema: not valid against the draft 2020-12 meta-schema: "+
			"enum: thing does not equal any of: [array boolean integer null number object string]")
	f(Request{Features: []RequestFeature{{Kind: FeatureTools, Share: 0.5, Tools: []ToolSpec{weather}},
		{Kind: FeatureTools, Share: 0.5, Tools: []ToolSpec{weather}}}}, "features[1].kind: tools is given twice")
	f(Request{Features: []RequestFeature{{Kind: FeatureLoRA, Share: 0.5, Model: "m", ToolChoice: "auto"}}},
		"features[0].tool_choice: does not apply to kind lora")
}

// TestToolsDraw draws the tools feature at its share, with the reasoning
// effort and chat_template_kwargs on every request, and checks arguments
// against the tool's schema.
func TestToolsDraw(t *testing.T) {
	r := &Request{ReasoningEffort: "high", ChatTemplateKwargs: map[string]any{"enable_thinking": true},
		Features: []RequestFeature{{Kind: FeatureTools, Share: 0.25, Tools: []ToolSpec{{Name: "get_weather",
			Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}},
				"required": []any{"city"}}}}}}}
	p, err := NewRequestPlan(r)
	if err != nil {
		t.Fatal(err)
	}
	const n = 4000
	drawn := 0
	for i := range int64(n) {
		d := p.Draw(7, i)
		if d.ReasoningEffort != "high" || string(d.Body) != `,"chat_template_kwargs":{"enable_thinking":true}` {
			t.Fatalf("draw %d: effort %q, body %s", i, d.ReasoningEffort, d.Body)
		}
		if d.Tools != nil {
			drawn++
			if !slices.Equal(d.Names, []string{FeatureTools}) || d.Tools.Choice != "auto" {
				t.Fatalf("draw %d: names %v, choice %q", i, d.Names, d.Tools.Choice)
			}
		}
	}
	// 0.25 * 4000 = 1000, sd = sqrt(4000*0.25*0.75) = 27.4: 5 sd either side.
	if drawn < 863 || drawn > 1137 {
		t.Errorf("tools drawn %d times of %d, want about 1000", drawn, n)
	}
	ts := p.toolSet
	if err := ts.Check("get_weather", []byte(`{"city":"Paris"}`)); err != nil {
		t.Errorf("valid arguments: %v", err)
	}
	if err := ts.Check("get_weather", []byte(`{"town":"Paris"}`)); err == nil || !strings.Contains(err.Error(), "does not match the schema") {
		t.Errorf("arguments without city: %v", err)
	}
}
