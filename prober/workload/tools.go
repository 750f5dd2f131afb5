package workload

import (
	"encoding/json"
	"fmt"
	"slices"
)

// ReasoningEfforts are the values of Request.ReasoningEffort (OpenAI's
// reasoning effort; vLLM passes it to the chat template).
var ReasoningEfforts = []string{"none", "minimal", "low", "medium", "high", "xhigh"}

// Bounds of the tools feature.
const (
	// MaxTools bounds the tools of one tools feature.
	MaxTools = 64
	// MaxToolDescriptionBytes bounds a tool's description.
	MaxToolDescriptionBytes = 4 << 10
)

// ToolSpec is one tool (function) of a tools feature:
//
//   - {kind: tools, share: 0.2, tool_choice: auto, tools: [
//     {name: get_weather, description: "the weather of a city",
//     parameters: {type: object, properties: {city: {type: string}}, required: [city]}}]}
type ToolSpec struct {
	// Name is the function's name, [a-zA-Z0-9_-]{1,64}, unique in the
	// feature.
	Name string `yaml:"name" json:"name"`
	// Description is sent as the function's description (optional).
	Description string `yaml:"description,omitempty" json:"description,omitempty"`
	// Parameters is the JSON schema of the arguments (optional: any
	// object); the arguments of a call are checked against it.
	Parameters map[string]any `yaml:"parameters,omitempty" json:"parameters,omitempty"`
}

// ToolSet is a validated tools feature: the tools with their compiled
// parameter schemas and the tool_choice. It is immutable and safe for
// concurrent use.
type ToolSet struct {
	// Tools are the tools in order; Parameters is each one's schema as
	// JSON (nil: none).
	Tools []Tool
	// Choice is the tool_choice: auto, required, none or a tool's name.
	Choice  string
	schemas map[string]*Schema
}

// Tool is one tool of a ToolSet, ready to send.
type Tool struct {
	Name, Description string
	Parameters        json.RawMessage
}

// newToolSet validates the tools of a feature. Errors are *FieldError
// below the feature.
func newToolSet(specs []ToolSpec, choice string) (*ToolSet, error) {
	if len(specs) == 0 {
		return nil, fieldErr("tools", "required for kind tools: at least one tool")
	}
	if len(specs) > MaxTools {
		return nil, fieldErr("tools", "at most %d tools, got %d", MaxTools, len(specs))
	}
	ts := &ToolSet{Choice: choice, schemas: map[string]*Schema{}}
	if ts.Choice == "" {
		ts.Choice = "auto"
	}
	for i, sp := range specs {
		at := fmt.Sprintf("tools[%d]", i)
		if !schemaNameRE.MatchString(sp.Name) {
			return nil, fieldErr(at+".name", "must match [a-zA-Z0-9_-]{1,64}, got %q", sp.Name)
		}
		if slices.ContainsFunc(ts.Tools, func(t Tool) bool { return t.Name == sp.Name }) {
			return nil, fieldErr(at+".name", "%q is given twice", sp.Name)
		}
		if len(sp.Description) > MaxToolDescriptionBytes {
			return nil, fieldErr(at+".description", "must be at most %d bytes, got %d", MaxToolDescriptionBytes, len(sp.Description))
		}
		t := Tool{Name: sp.Name, Description: sp.Description}
		if sp.Parameters != nil {
			b, err := json.Marshal(sp.Parameters)
			if err != nil {
				return nil, fieldErr(at+".parameters", "cannot be encoded as JSON: %w", err)
			}
			if len(b) > MaxSchemaBytes {
				return nil, fieldErr(at+".parameters", "encodes to %d bytes, more than %d", len(b), MaxSchemaBytes)
			}
			sch, err := CompileSchema(b)
			if err != nil {
				return nil, &FieldError{Field: at + ".parameters", Err: err}
			}
			t.Parameters, ts.schemas[sp.Name] = b, sch
		}
		ts.Tools = append(ts.Tools, t)
	}
	switch ts.Choice {
	case "auto", "required", "none":
	default:
		if !slices.ContainsFunc(ts.Tools, func(t Tool) bool { return t.Name == ts.Choice }) {
			return nil, fieldErr("tool_choice", "must be auto, required, none or one of the tools' names, got %q", ts.Choice)
		}
	}
	return ts, nil
}

// Check checks the arguments of a call of the tool name against its
// parameter schema (a tool without one accepts any arguments).
func (ts *ToolSet) Check(name string, args []byte) error {
	s := ts.schemas[name]
	if s == nil {
		return nil
	}
	return s.Check(args)
}
