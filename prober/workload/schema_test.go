package workload

import (
	"strings"
	"testing"
)

// TestCompileSchema checks schemas against their draft's meta-schema
// (2020-12 by default, draft-07 when named) and refuses what cannot be
// checked on its own.
func TestCompileSchema(t *testing.T) {
	for _, c := range []struct{ schema, err string }{
		{`{"type":"object","properties":{"qty":{"type":"integer","minimum":0}},"required":["qty"]}`, ""},
		{`{"$defs":{"n":{"type":"integer"}},"properties":{"x":{"$ref":"#/$defs/n"}}}`, ""},
		{`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"string"}`, ""},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"a":{"type":"string"}}}`, ""},
		{`{"type":"thing"}`, "invalid schema: not valid against the draft 2020-12 meta-schema: enum: thing does not equal any of: [array boolean integer null number object string]"},
		{`{"minLength":-1}`, "invalid schema: not valid against the draft 2020-12 meta-schema: minimum: -1/1 is less than 0"},
		{`{"required":"a"}`, "invalid schema: not valid against the draft 2020-12 meta-schema: type: a has type \"string\", want \"array\""},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","type":"thing"}`, "invalid schema: not valid against the draft-07 meta-schema: enum: thing"},
		{`{"$schema":"http://json-schema.org/draft-04/schema#"}`, `$schema "http://json-schema.org/draft-04/schema#" is not supported: llmprobe checks draft 2020-12 (the default) and draft-07`},
		{`{"$ref":"https://example.com/s.json"}`, "$ref to another document (https://example.com/s.json) is not supported: inline it"},
		{`{"pattern":"("}`, "invalid schema: <anonymous schema>: pattern: error parsing regexp: missing closing )"},
		{`[{"type":"object"}]`, "must be a JSON object"},
		{`{"type":"object"} {}`, "not JSON: more than one value"},
		{`{"type":`, "not JSON: unexpected EOF"},
	} {
		_, err := CompileSchema([]byte(c.schema))
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.schema, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: got %v, want an error containing %q", c.schema, err, c.err)
		}
	}
}

// TestSchemaCheck validates values against a compiled schema; the error
// says what is wrong and stays bounded whatever the value quotes.
func TestSchemaCheck(t *testing.T) {
	s, err := CompileSchema([]byte(`{"type":"object","required":["qty"],"properties":{"qty":{"type":"integer"},"name":{"type":"string","maxLength":3}},"additionalProperties":false}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ text, err string }{
		{`{"qty":2}`, ""},
		{` {"qty":2,"name":"abc"} `, ""},
		{`{"name":"a"}`, `does not match the schema: required: missing properties: ["qty"]`},
		{`{"qty":"2"}`, `does not match the schema: validating /properties/qty: type: 2 has type "string", want "integer"`},
		{`{"qty":1,"x":0}`, `does not match the schema: unexpected additional properties ["x"]`},
		{`{"qty":1,"name":"` + strings.Repeat("long ", 500) + `"}`, "does not match the schema: validating /properties/name: maxLength:"},
		{`{"qty":1`, "not JSON: unexpected EOF"},
		{`{"qty":1}{"qty":1}`, "not JSON: more than one value"},
	} {
		err := s.Check([]byte(c.text))
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%.40s: %v", c.text, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%.40s: got %v, want an error containing %q", c.text, err, c.err)
		case err != nil && len(err.Error()) > maxErr+100:
			t.Errorf("%.40s: error of %d bytes", c.text, len(err.Error()))
		}
	}
}
