package workload

import (
	"strings"
	"testing"
)

// TestSchemaRecursion: a schema whose $ref leads back to a schema on the
// same value is refused at compile time (issue 22 D2: {"$ref": "#"} was
// accepted and the first reply validated against it overflowed the stack,
// killing the daemon); recursion that descends into the value is a
// legitimate tree schema and is kept.
func TestSchemaRecursion(t *testing.T) {
	refused := func(schema, want string) {
		t.Helper()
		if _, err := CompileSchema([]byte(schema)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want it to contain %q", schema, err, want)
		}
	}
	refused(`{"$ref": "#"}`, `invalid schema: $ref "#" at the root leads back to the root on the same value`)
	refused(`{"allOf": [{"$ref": "#"}]}`, `invalid schema: $ref "#" at /allOf/0 leads back to the root on the same value`)
	refused(`{"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"anyOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"}`, "on the same value")
	refused(`{"$defs": {"a": {"$anchor": "x", "not": {"$ref": "#x"}}}, "$ref": "#x"}`, "on the same value")
	refused(`{"definitions": {"a": {"$ref": "#/definitions/a"}}, "$schema": "http://json-schema.org/draft-07/schema#", "properties": {"p": {"$ref": "#/definitions/a"}}}`,
		"$ref \"#/definitions/a\" at /definitions/a leads back to /definitions/a")
	deep := strings.Repeat(`{"items": `, MaxSchemaDepth+1) + `{}` + strings.Repeat(`}`, MaxSchemaDepth+1)
	refused(deep, "invalid schema: nested deeper than 64 levels")

	tree := `{"type": "object", "properties": {"name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#"}}}, "required": ["name"]}`
	s, err := CompileSchema([]byte(tree))
	if err != nil {
		t.Fatalf("a tree schema (recursion through properties/items) was refused: %v", err)
	}
	if err := s.Check([]byte(`{"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}]}`)); err != nil {
		t.Errorf("a conforming tree: %v", err)
	}
	if err := s.Check([]byte(`{"name": "a", "children": [{"children": []}]}`)); err == nil {
		t.Error("a tree node without its name passed")
	}
	shallow := strings.Repeat(`{"items": `, MaxSchemaDepth/2-1) + `{}` + strings.Repeat(`}`, MaxSchemaDepth/2-1)
	if _, err := CompileSchema([]byte(shallow)); err != nil {
		t.Errorf("a schema within the depth bound: %v", err)
	}
}
