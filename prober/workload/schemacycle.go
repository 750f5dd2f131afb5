package workload

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// MaxSchemaDepth bounds the nesting of a JSON schema document (objects and
// arrays): deeper schemas are refused before they are compiled.
const MaxSchemaDepth = 64

// sameInstance lists the keywords whose subschemas apply to the same
// instance as their parent (no descent into the value): a cycle through
// them and $ref never ends, whatever the reply. Keywords such as
// properties or items descend into the value, so recursion through them
// ends with the reply.
var sameInstance = map[string]bool{
	"allOf": true, "anyOf": true, "oneOf": true, "not": true,
	"if": true, "then": true, "else": true,
	"dependentSchemas": true, "dependencies": true,
}

// refKeywords are the keywords that refer to another schema of the
// document, applied to the same instance.
var refKeywords = []string{"$ref", "$dynamicRef", "$recursiveRef"}

// schemaGraph is a schema document's objects by JSON pointer, with the
// edges along which validation stays on the same instance.
type schemaGraph struct {
	nodes   map[string]map[string]any
	anchors map[string]string // "#name" and $id values -> pointer
	edges   map[string][]edge
}

type edge struct {
	to  string
	via string // the keyword, for the error
}

// checkSchemaRecursion refuses a schema document nested deeper than
// MaxSchemaDepth, or one in which a $ref (alone or through allOf, anyOf,
// oneOf, not, if/then/else, dependentSchemas) leads back to a schema on the
// same instance: validating any reply against it would recurse until the
// stack overflows, which kills the process ({"$ref": "#"} did).
func checkSchemaRecursion(doc any) error {
	g := &schemaGraph{nodes: map[string]map[string]any{}, anchors: map[string]string{}, edges: map[string][]edge{}}
	if err := g.collect(doc, "", 0); err != nil {
		return err
	}
	// In a fixed order (the root first, keys sorted), so that the cycle an
	// error names is the same on every run.
	ptrs := slices.Sorted(maps.Keys(g.nodes))
	for _, ptr := range ptrs {
		obj := g.nodes[ptr]
		for _, kw := range refKeywords {
			ref, ok := obj[kw].(string)
			if !ok {
				continue
			}
			if to, ok := g.resolve(ref); ok {
				g.edges[ptr] = append(g.edges[ptr], edge{to: to, via: kw + " " + strconv.Quote(ref)})
			}
		}
		for _, kw := range slices.Sorted(maps.Keys(obj)) {
			v := obj[kw]
			if !sameInstance[kw] {
				continue
			}
			switch x := v.(type) {
			case map[string]any:
				if kw == "dependentSchemas" || kw == "dependencies" {
					for _, k := range slices.Sorted(maps.Keys(x)) {
						if _, ok := x[k].(map[string]any); ok {
							g.edges[ptr] = append(g.edges[ptr], edge{to: ptr + "/" + escapePointer(kw) + "/" + escapePointer(k), via: kw})
						}
					}
					continue
				}
				g.edges[ptr] = append(g.edges[ptr], edge{to: ptr + "/" + kw, via: kw})
			case []any:
				for i, sub := range x {
					if _, ok := sub.(map[string]any); ok {
						g.edges[ptr] = append(g.edges[ptr], edge{to: ptr + "/" + kw + "/" + strconv.Itoa(i), via: kw})
					}
				}
			}
		}
	}
	const (
		unseen = iota
		active
		done
	)
	state := map[string]int{}
	var visit func(p string) error
	visit = func(p string) error {
		state[p] = active
		for _, e := range g.edges[p] {
			switch state[e.to] {
			case active:
				return fmt.Errorf("invalid schema: %s at %s leads back to %s on the same value: validating a reply would never end", e.via, pointerText(p), pointerText(e.to))
			case unseen:
				if err := visit(e.to); err != nil {
					return err
				}
			}
		}
		state[p] = done
		return nil
	}
	for _, p := range ptrs {
		if state[p] == unseen {
			if err := visit(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// collect records every object of the document under its JSON pointer,
// and its anchors and ids; it refuses nesting over MaxSchemaDepth.
func (g *schemaGraph) collect(v any, ptr string, depth int) error {
	if depth > MaxSchemaDepth {
		return fmt.Errorf("invalid schema: nested deeper than %d levels", MaxSchemaDepth)
	}
	switch x := v.(type) {
	case map[string]any:
		g.nodes[ptr] = x
		for _, kw := range []string{"$anchor", "$dynamicAnchor"} {
			if a, ok := x[kw].(string); ok {
				g.anchors["#"+a] = ptr
			}
		}
		if id, ok := x["$id"].(string); ok && id != "" {
			g.anchors[id] = ptr
		}
		for k, sub := range x {
			if err := g.collect(sub, ptr+"/"+escapePointer(k), depth+1); err != nil {
				return err
			}
		}
	case []any:
		for i, sub := range x {
			if err := g.collect(sub, ptr+"/"+strconv.Itoa(i), depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// resolve maps a reference within the document to a JSON pointer: "#" (the
// root), "#/json/pointer", "#anchor", or a subschema's $id; ok is false for
// anything else (a reference to another document is refused when the
// schema is resolved).
func (g *schemaGraph) resolve(ref string) (string, bool) {
	if p, ok := g.anchors[ref]; ok {
		return p, true
	}
	if !strings.HasPrefix(ref, "#") {
		return "", false
	}
	frag, err := url.PathUnescape(ref[1:])
	if err != nil {
		return "", false
	}
	if frag == "" {
		return "", true
	}
	if !strings.HasPrefix(frag, "/") {
		p, ok := g.anchors["#"+frag]
		return p, ok
	}
	if _, ok := g.nodes[frag]; ok {
		return frag, true
	}
	return "", false
}

// escapePointer escapes one JSON pointer token (RFC 6901).
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// pointerText is how errors name a pointer: "the root" or "/$defs/a".
func pointerText(p string) string {
	if p == "" {
		return "the root"
	}
	return p
}
