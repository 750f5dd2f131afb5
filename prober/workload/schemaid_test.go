package workload

import (
	"strings"
	"testing"
)

// TestSchemaRecursionThroughID: a $ref that reaches a schema on the same
// value through the base URIs $id sets is refused like a "#" one (issue
// 34 N1: each of these passed the check and the first reply validated
// against it ran the daemon out of memory or overflowed its stack).
func TestSchemaRecursionThroughID(t *testing.T) {
	for _, c := range []struct{ schema, want string }{
		{`{"$id":"https://e.com/root","$defs":{"a":{"$id":"a","$ref":"root"}},"$ref":"a"}`, `$ref "root" at /$defs/a leads back to the root on the same value`},
		{`{"$id":"https://e.com/r","$ref":"r"}`, `$ref "r" at the root leads back to the root`},
		{`{"$id":"https://e.com/x#","$ref":"x"}`, `$ref "x" at the root leads back to the root`},
		{`{"$id":"https://e.com/d/x","$ref":"./x"}`, `$ref "./x" at the root leads back to the root`},
		{`{"$id":"https://e.com/d/r","$ref":"../d/r"}`, `$ref "../d/r" at the root leads back to the root`},
		{`{"$id":"https://e.com/r","$defs":{"a":{"$id":"sub/a","$ref":"../r"}},"$ref":"#/$defs/a"}`, `leads back to the root on the same value`},
		{`{"$id":"https://e.com/r","$ref":"https://e.com/r#"}`, `$ref "https://e.com/r#" at the root leads back to the root`},
		{`{"$id":"https://e.com/r","$ref":"https://llmprobe.invalid/workload/schema.json"}`, `leads back to the root`},
		{`{"$id":"https://e.com/r","allOf":[{"$ref":"r#/allOf/0"}]}`, `$ref "r#/allOf/0" at /allOf/0 leads back to /allOf/0`},
		{`{"$defs":{"a":{"$id":"https://f.org/a","anyOf":[{"$ref":"#"}]}},"$ref":"https://f.org/a"}`, `$ref "#" at /$defs/a/anyOf/0 leads back to /$defs/a on the same value`},
		{`{"$defs":{"a":{"$id":"https://f.org/a","$anchor":"x","not":{"$ref":"#x"}}},"$ref":"https://f.org/a#x"}`, `leads back to /$defs/a on the same value`},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","$id":"http://e.com/r","definitions":{"a":{"$id":"#a","allOf":[{"$ref":"r"}]}},"allOf":[{"$ref":"#a"}]}`, `leads back to`},
		// Draft-07 ignores $id beside $ref: "r" is then another document.
		{`{"$schema":"http://json-schema.org/draft-07/schema#","$id":"http://e.com/r","$ref":"r"}`, `$ref to another document (https://llmprobe.invalid/workload/r)`},
		// What the library would read ambiguously or not at all.
		{`{"$defs":{"a":{"$id":"https://e.com/x"},"b":{"$id":"https://e.com/x"}}}`, `$id "https://e.com/x" at /$defs/b names https://e.com/x, as /$defs/a does`},
		{`{"$id":"https://e.com/r","$defs":{"a":{"$id":"r"}}}`, `as the root does`},
		{`{"$defs":{"a":{"$anchor":"x"},"b":{"$anchor":"x"}}}`, `anchor "x" at /$defs/b is also at /$defs/a`},
		{`{"$defs":{"a":{"$id":"a#f"}}}`, `"a#f" does not match regular expression`},
		{`{"$id":"https://e.com/r","$ref":"s"}`, `$ref to another document (https://e.com/s) is not supported: inline it`},
		{`{"$ref":"#/$defs/nothing"}`, `$ref "#/$defs/nothing" at the root does not point to a schema of the document`},
		{`{"$ref":"#/properties","properties":{}}`, `does not point to a schema`},
		{`{"$ref":"#nope"}`, `no anchor "nope"`},
		{`{"$dynamicAnchor":"m","$dynamicRef":"#m"}`, `$dynamicRef at the root is not supported: use $ref`},
	} {
		_, err := CompileSchema([]byte(c.schema))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.schema, err, c.want)
		}
	}
}

// TestSchemaIDResolution: references through $id base URIs reach the
// subschema they name, and the validator checks against it.
func TestSchemaIDResolution(t *testing.T) {
	for _, c := range []struct{ schema, good, bad string }{
		{`{"$id":"https://e.com/r","$defs":{"n":{"$id":"n","type":"integer"}},"properties":{"x":{"$ref":"n"}}}`, `{"x":1}`, `{"x":"a"}`},
		{`{"$id":"https://e.com/d/r","$defs":{"n":{"$id":"../n","type":"integer"}},"properties":{"x":{"$ref":"https://e.com/n"}}}`, `{"x":1}`, `{"x":"a"}`},
		{`{"$id":"https://e.com/r","$defs":{"s":{"$id":"s/","$defs":{"t":{"$id":"t","type":"string"}}}},"properties":{"x":{"$ref":"s/t"}}}`, `{"x":"a"}`, `{"x":1}`},
		{`{"$defs":{"a":{"$id":"https://f.org/a","$anchor":"str","type":"string"}},"items":{"$ref":"https://f.org/a#str"}}`, `["a"]`, `[1]`},
		{`{"$defs":{"a":{"$id":"https://f.org/a","properties":{"k":{"type":"boolean"}}}},"items":{"$ref":"https://f.org/a#/properties/k"}}`, `[true]`, `[1]`},
		{`{"$defs":{"a b":{"type":"null"}},"items":{"$ref":"#/$defs/a%20b"}}`, `[null]`, `[0]`},
		// A tree through $id: recursion that descends into the value.
		{`{"$id":"https://e.com/tree","type":"object","properties":{"kids":{"type":"array","items":{"$ref":"tree"}}},"required":["kids"]}`, `{"kids":[{"kids":[]}]}`, `{"kids":[{}]}`},
		{`{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"a":{"$id":"#a","type":"string"}},"items":{"$ref":"#a"}}`, `["a"]`, `[1]`},
	} {
		s, err := CompileSchema([]byte(c.schema))
		if err != nil {
			t.Errorf("%s: %v", c.schema, err)
			continue
		}
		if err := s.Check([]byte(c.good)); err != nil {
			t.Errorf("%s: %s: %v", c.schema, c.good, err)
		}
		if err := s.Check([]byte(c.bad)); err == nil || !strings.Contains(err.Error(), "does not match the schema") {
			t.Errorf("%s: %s: %v, want a mismatch", c.schema, c.bad, err)
		}
	}
}

// TestSchemaCheckBudget: a check whose work would grow exponentially with
// the value's nesting (no cycle: each level applies two subschemas to the
// next) or pass the depth bound is refused as too costly before the
// validator runs; the same schema over a shallow value is checked.
func TestSchemaCheckBudget(t *testing.T) {
	s, err := CompileSchema([]byte(`{"$defs":{"a":{"allOf":[{"properties":{"x":{"$ref":"#/$defs/a"}}},{"properties":{"x":{"$ref":"#/$defs/a"}}}]}},"$ref":"#/$defs/a"}`))
	if err != nil {
		t.Fatal(err)
	}
	nest := func(n int) string { return strings.Repeat(`{"x":`, n) + `0` + strings.Repeat(`}`, n) }
	if err := s.Check([]byte(nest(5))); err != nil {
		t.Errorf("5 levels: %v", err)
	}
	if err := s.Check([]byte(nest(40))); err == nil || !strings.Contains(err.Error(), "too costly to check against the schema: more than 32 MiB of work") {
		t.Errorf("40 levels (2^40 applications): %v, want too costly", err)
	}
	tree, err := CompileSchema([]byte(`{"properties":{"x":{"$ref":"#"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	// Two applications a level: the property's $ref, then the root.
	if err := tree.Check([]byte(nest(MaxCheckDepth/2 - 1))); err != nil {
		t.Errorf("%d levels: %v", MaxCheckDepth/2-1, err)
	}
	if err := tree.Check([]byte(nest(MaxCheckDepth / 2))); err == nil || !strings.Contains(err.Error(), "nest deeper than 1000 levels") {
		t.Errorf("%d levels: %v, want too deep", MaxCheckDepth/2, err)
	}
}

// TestSchemaCheckBudgetWithoutRecursionCheck: with the recursion check
// off, the cyclic schemas compile, and checking a reply against
// them is refused by the budget instead of recursing until the process
// dies: the guard does not depend on the check seeing every cycle.
func TestSchemaCheckBudgetWithoutRecursionCheck(t *testing.T) {
	for _, schema := range []string{
		`{"$ref":"#"}`,
		`{"$id":"https://e.com/root","$defs":{"a":{"$id":"a","$ref":"root"}},"$ref":"a"}`,
		`{"$id":"https://e.com/r","$ref":"r"}`,
		`{"$id":"https://e.com/d/r","$ref":"../d/r"}`,
		`{"$id":"https://e.com/r","anyOf":[{"$ref":"r"},{"$ref":"r"}]}`,
	} {
		s, err := compileSchema([]byte(schema), false)
		if err != nil {
			t.Errorf("%s: %v", schema, err)
			continue
		}
		if err := s.Check([]byte(`{"a":[1,2,3]}`)); err == nil || !strings.Contains(err.Error(), "too costly to check against the schema") {
			t.Errorf("%s: %v, want too costly", schema, err)
		}
	}
}

// BenchmarkSchemaCheck: a check of an ordinary reply (an object of 50
// items) with its budget walk, and the validator alone: the walk's share
// of a check.
func BenchmarkSchemaCheck(b *testing.B) {
	s, err := CompileSchema([]byte(`{"type":"object","properties":{"items":{"type":"array","items":{"type":"object",` +
		`"properties":{"name":{"type":"string"},"qty":{"type":"integer","minimum":0}},"required":["name","qty"]}}},"required":["items"]}`))
	if err != nil {
		b.Fatal(err)
	}
	reply := []byte(`{"items":[` + strings.TrimSuffix(strings.Repeat(`{"name":"widget","qty":3},`, 50), ",") + `]}`)
	b.Run("check", func(b *testing.B) {
		for b.Loop() {
			if err := s.Check(reply); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("validator-only", func(b *testing.B) {
		v, _ := decodeOne(reply)
		for b.Loop() {
			if err := s.r.Validate(v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("budget-walk-only", func(b *testing.B) {
		v, _ := decodeOne(reply)
		for b.Loop() {
			if err := checkCost(s.root, sizeTree(v)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
