package workload

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Schema is a compiled JSON schema of a json_schema feature. It is
// immutable and safe for concurrent use.
type Schema struct {
	s *jsonschema.Schema
}

// schemaURL names the one resource of a compiled schema.
const schemaURL = "https://llmprobe.invalid/workload/schema.json"

// noLoader refuses every $ref to another document: a schema is checked on
// its own, and compiling it never reads a file or the network.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("$ref to another document (%s) is not supported: inline it", url)
}

// CompileSchema compiles a JSON schema (its JSON text) with
// santhosh-tekuri/jsonschema: the draft its $schema names, else 2020-12;
// references to other documents are refused.
func CompileSchema(text []byte) (*Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if _, ok := doc.(map[string]any); !ok {
		return nil, errors.New("must be a JSON object")
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("invalid schema: %w", err)
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("invalid schema: %s", oneLine(err.Error()))
	}
	return &Schema{s: s}, nil
}

// printer renders validation errors in English.
var printer = message.NewPrinter(language.English)

// Check parses text as one JSON value and validates it against the schema.
// The error is short: for text that is not JSON, the parser's reason; for
// a value that does not conform, the first violation found ("at '/a':
// got string, want number"). It may quote a bounded part of the text.
func (s *Schema) Check(text []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(text))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	err = s.s.Validate(v)
	if err == nil {
		return nil
	}
	if ve, ok := errors.AsType[*jsonschema.ValidationError](err); ok {
		leaf := ve
		for len(leaf.Causes) > 0 {
			leaf = leaf.Causes[0]
		}
		return fmt.Errorf("does not match the schema: at '/%s': %s",
			strings.Join(leaf.InstanceLocation, "/"), leaf.ErrorKind.LocalizedString(printer))
	}
	return fmt.Errorf("does not match the schema: %s", oneLine(err.Error()))
}

// oneLine joins the lines of a multi-line message with "; ".
func oneLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "- "))
	}
	return strings.Join(lines, "; ")
}
