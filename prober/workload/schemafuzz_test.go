package workload

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

// The vocabularies of FuzzSchemaID's generated schemas: $id forms
// (absolute, relative, dot segments, an empty fragment, a trailing slash)
// and $ref forms that can meet them, so that references reach schemas
// through base URIs as well as through "#" pointers.
var (
	fuzzIDs = []string{"https://e.com/root", "a", "r", "./x", "../d/r", "x#", "sub/", "https://e.com/d/x",
		"d/r", "https://f.org/a", "root", "b/../a", "https://llmprobe.invalid/workload/x"}
	fuzzRefs = []string{"#", "root", "a", "r", "x", "./x", "../d/r", "#/$defs/a", "#/$defs/b", "https://e.com/root",
		"#/allOf/0", "#anc", "a#anc", "a#/properties/x", "https://llmprobe.invalid/workload/schema.json", "sub/a",
		"https://e.com/d/x#", "d/r#/$defs/a", "#/properties/x", "#/items", "x#/anyOf/1", "https://f.org/a"}
	fuzzTypes     = []string{"object", "array", "string", "integer", "null"}
	fuzzInstances = []string{`{"x":{"x":{"x":1}}}`, `[1,[2,[3]],{"x":[]}]`, `"s"`, `1`, `{}`, `{"x":"a","y":[{"x":null}]}`}
)

// schemaGen builds a schema document from fuzz bytes.
type schemaGen struct{ b []byte }

func (g *schemaGen) next() int {
	if len(g.b) == 0 {
		return 0
	}
	c := int(g.b[0])
	g.b = g.b[1:]
	return c
}

func (g *schemaGen) schema(depth int) any {
	if depth > 6 {
		return map[string]any{}
	}
	s := map[string]any{}
	for n := g.next() % 4; n > 0 && len(g.b) > 0; n-- {
		switch g.next() % 12 {
		case 0:
			s["$id"] = fuzzIDs[g.next()%len(fuzzIDs)]
		case 1, 2:
			s["$ref"] = fuzzRefs[g.next()%len(fuzzRefs)]
		case 3:
			s["$anchor"] = "anc"
		case 4:
			s["type"] = fuzzTypes[g.next()%len(fuzzTypes)]
		case 5:
			s["$defs"] = map[string]any{"a": g.schema(depth + 1), "b": g.schema(depth + 1)}
		case 6:
			s["allOf"] = []any{g.schema(depth + 1)}
		case 7:
			s["anyOf"] = []any{g.schema(depth + 1), g.schema(depth + 1)}
		case 8:
			s["not"] = g.schema(depth + 1)
		case 9:
			s["properties"] = map[string]any{"x": g.schema(depth + 1)}
		case 10:
			s["items"] = g.schema(depth + 1)
		case 11:
			s["if"], s["then"] = g.schema(depth+1), g.schema(depth+1)
		}
	}
	return s
}

// FuzzSchemaID: CompileSchema never panics on schemas that reach each
// other through $id base URIs, and a schema it accepts checks every value
// without recursing without end (the fuzzer's process would die of a
// stack overflow or run out of memory). Where the budget lets a check
// run, the library validating the original document (its own $id
// resolution, nothing rewritten) gives the same verdict: the rewritten
// references point where the library's would. Inputs are the generator's
// bytes or, when raw is not empty, a schema's text; the corpus in
// testdata/fuzz/FuzzSchemaID holds the $id forms of issue 34 N1.
func FuzzSchemaID(f *testing.F) {
	f.Add([]byte{3, 0, 0, 1, 2, 5, 2, 0, 1, 1, 1, 2, 0, 2, 0}, "")
	f.Add([]byte{2, 0, 2, 1, 3}, "")
	f.Add([]byte{3, 9, 1, 0, 0, 0, 2, 1, 2}, "")
	f.Add([]byte(nil), `{"$id":"https://e.com/root","$defs":{"a":{"$id":"a","$ref":"root"}},"$ref":"a"}`)
	f.Add([]byte(nil), `{"$id":"https://e.com/d/r","properties":{"x":{"$ref":"../d/r"}}}`)
	f.Fuzz(func(t *testing.T, gen []byte, raw string) {
		text := []byte(raw)
		if raw == "" {
			var err error
			if text, err = json.Marshal((&schemaGen{b: gen}).schema(0)); err != nil {
				t.Fatal(err)
			}
		}
		done := make(chan struct{})
		defer close(done)
		go func() {
			select {
			case <-done:
			case <-time.After(time.Minute):
				// A hang (the inputs are a few hundred bytes): panic
				// here so the fuzzer reports and keeps the input.
				panic(fmt.Sprintf("compiling or checking %s took over a minute", text))
			}
		}()
		s, err := CompileSchema(text)
		if err != nil {
			return
		}
		var orig jsonschema.Schema
		var lib *jsonschema.Resolved
		if json.Unmarshal(text, &orig) == nil {
			lib, _ = orig.Resolve(&jsonschema.ResolveOptions{BaseURI: schemaURL, Loader: refuseRemote})
		}
		for _, inst := range fuzzInstances {
			err := s.Check([]byte(inst))
			var costly errTooCostly
			if errors.As(err, &costly) || lib == nil {
				continue
			}
			v, _ := decodeOne([]byte(inst))
			if libErr := lib.Validate(v); (libErr == nil) != (err == nil) {
				t.Fatalf("%s on %s: Check says %v, the library on the original document %v", text, inst, err, libErr)
			}
		}
	})
}
