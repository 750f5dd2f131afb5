package workload

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// snode is one schema of a compiled document: the keywords along which
// validation applies a subschema, resolved to their targets. It is the
// graph both the recursion check (checkSchemaRecursion) and the check's
// budget (Schema.Check, checkCost) walk, and the one the validator walks
// too: every $ref of the document the validator reads is rewritten to the
// JSON pointer of the snode it names here.
type snode struct {
	ptr string // JSON pointer from the document's root
	ref *snode // $ref's target

	// same are the subschemas applied to the same value (allOf, anyOf,
	// oneOf, not, if, then, else, dependentSchemas, dependencies), in
	// keyword order.
	same []sameEdge

	// Subschemas applied to an object's members.
	props         map[string]*snode
	patterns      []*snode // patternProperties
	additional    *snode   // additionalProperties
	names         *snode   // propertyNames (applied to each key)
	unevalProps   *snode   // unevaluatedProperties
	prefix        []*snode // prefixItems, or draft-07's items array
	items         *snode   // items (one schema)
	moreItems     *snode   // draft-07's additionalItems
	contains      *snode
	unevalItems   *snode
	obj           map[string]any // the rewritten copy of the schema (nil for a boolean one)
	origRef       string         // $ref as written
	hasDynamicRef bool
}

// sameEdge is an edge to a subschema on the same value, with its keyword
// (for the recursion check's error).
type sameEdge struct {
	to  *snode
	via string
}

// schemaKeywords are the keywords whose value is one subschema, a list of
// them or a map of them, as google/jsonschema-go reads them (its Schema
// fields of type *Schema, []*Schema and map[string]*Schema). Every other
// keyword's value is data ($ref cannot point into it).
var (
	oneSchemaKeywords = []string{"additionalItems", "additionalProperties", "contains", "contentSchema", "else", "if",
		"not", "propertyNames", "then", "unevaluatedItems", "unevaluatedProperties"}
	listSchemaKeywords = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
	mapSchemaKeywords  = []string{"$defs", "definitions", "dependentSchemas", "dependencies", "patternProperties", "properties"}
)

// resource is a schema resource of the document: the root, or a
// subschema whose $id sets a new base URI.
type resource struct {
	uri     *url.URL
	node    *snode
	anchors map[string]*snode
}

// refGraph resolves a schema document's references.
type refGraph struct {
	draft   string
	nodes   map[string]*snode    // by JSON pointer
	byURI   map[string]*resource // by absolute URI without fragment
	idAt    map[string]string    // URI -> the pointer of the $id that named it
	pending []pendingRef
}

type pendingRef struct {
	n   *snode
	ref string
	res *resource // the resource the $ref is in: its base URI resolves it
}

// resolveSchemaRefs builds the snode graph of a schema document (a JSON
// object decoded into any, already valid against its draft's meta-schema)
// and resolves every $ref as google/jsonschema-go does: against the base
// URI its $id keywords set (RFC 3986 reference resolution with net/url:
// "a", "./x", "../d/r", "x#" and "https://…" forms alike), the root's base
// being schemaURL. It returns the root and the document rewritten for the
// validator: every $ref is the JSON pointer "#/…" of its target from the
// root, and $id, $anchor and $dynamicAnchor are gone (nothing refers to
// them any more), so the validator cannot resolve a reference to anything
// else than what the recursion check and the budget saw.
//
// It refuses a $ref to another document, to no schema, or through an
// unknown anchor; two $id naming the same URI, and an anchor named twice
// in one resource (which one a $ref meant would depend on the library's
// walk order); and $dynamicRef, which llmprobe does not follow.
func resolveSchemaRefs(doc map[string]any, draft string) (root *snode, nodes map[string]*snode, resolved map[string]any, err error) {
	g := &refGraph{draft: draft, nodes: map[string]*snode{}, byURI: map[string]*resource{}, idAt: map[string]string{}}
	base, _ := url.Parse(schemaURL)
	rootRes := &resource{uri: base, anchors: map[string]*snode{}}
	g.byURI[base.String()] = rootRes
	root, err = g.walk(doc, "", rootRes)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, p := range g.pending {
		to, err := g.resolve(p)
		if err != nil {
			return nil, nil, nil, err
		}
		p.n.ref = to
		p.n.obj["$ref"] = (&url.URL{Fragment: to.ptr}).String()
		if to.ptr == "" {
			p.n.obj["$ref"] = "#"
		}
	}
	return root, g.nodes, root.obj, nil
}

// walk makes the snode of the schema v at ptr within resource res.
func (g *refGraph) walk(v any, ptr string, res *resource) (*snode, error) {
	n := &snode{ptr: ptr}
	g.nodes[ptr] = n
	obj, ok := v.(map[string]any)
	if !ok {
		if b, isBool := v.(bool); isBool && !b {
			// false is {"not": {}} to the validator.
			n.same = []sameEdge{{to: &snode{ptr: ptr + "/not"}, via: "not"}}
		}
		return n, nil
	}
	if res.node == nil {
		res.node = n
	}
	if _, ok := obj["$dynamicRef"]; ok {
		return nil, fmt.Errorf("invalid schema: $dynamicRef at %s is not supported: use $ref", pointerText(ptr))
	}
	_, hasRef := obj["$ref"]
	if id, ok := obj["$id"].(string); ok && id != "" && !(g.draft == draft07 && hasRef) {
		u, err := url.Parse(id)
		if err != nil {
			return nil, fmt.Errorf("invalid schema: $id %q at %s: %w", id, pointerText(ptr), err)
		}
		switch {
		case u.Fragment != "" && g.draft != draft07:
			return nil, fmt.Errorf("invalid schema: $id %q at %s must not have a fragment", id, pointerText(ptr))
		case u.Fragment != "":
			// Draft-07's plain-name fragment: an anchor.
			if err := g.anchor(res, strings.TrimPrefix(id, "#"), n); err != nil {
				return nil, err
			}
		default:
			abs := res.uri.ResolveReference(u)
			if !abs.IsAbs() {
				return nil, fmt.Errorf("invalid schema: $id %q at %s does not resolve to an absolute URI", id, pointerText(ptr))
			}
			key := abs.String()
			if at, dup := g.idAt[key]; dup || (g.byURI[key] != nil && ptr != "") {
				if !dup {
					at = ""
				}
				return nil, fmt.Errorf("invalid schema: $id %q at %s names %s, as %s does: a $ref to it would be ambiguous", id, pointerText(ptr), key, pointerText(at))
			}
			g.idAt[key] = ptr
			if ptr == "" {
				// The root answers to both its base and its $id.
				res.uri = abs
				g.byURI[key] = res
			} else {
				res = &resource{uri: abs, node: n, anchors: map[string]*snode{}}
				g.byURI[key] = res
			}
		}
	}
	if g.draft != draft07 {
		for _, kw := range []string{"$anchor", "$dynamicAnchor"} {
			if a, ok := obj[kw].(string); ok && a != "" {
				if err := g.anchor(res, a, n); err != nil {
					return nil, err
				}
			}
		}
	}
	n.obj = make(map[string]any, len(obj))
	for k, val := range obj {
		switch k {
		case "$id", "$anchor", "$dynamicAnchor":
			continue
		}
		n.obj[k] = val
	}
	if ref, ok := obj["$ref"].(string); ok {
		n.origRef = ref
		g.pending = append(g.pending, pendingRef{n: n, ref: ref, res: res})
	}
	sub := func(v any, at string) (*snode, error) { return g.walk(v, at, res) }
	for _, kw := range oneSchemaKeywords {
		v, ok := obj[kw]
		if !ok {
			continue
		}
		c, err := sub(v, ptr+"/"+escapePointer(kw))
		if err != nil {
			return nil, err
		}
		n.obj[kw] = copyOf(c, v)
		switch kw {
		case "additionalItems":
			n.moreItems = c
		case "additionalProperties":
			n.additional = c
		case "contains":
			n.contains = c
		case "propertyNames":
			n.names = c
		case "unevaluatedItems":
			n.unevalItems = c
		case "unevaluatedProperties":
			n.unevalProps = c
		case "if", "then", "else", "not":
			n.same = append(n.same, sameEdge{to: c, via: kw})
		}
	}
	if v, ok := obj["items"]; ok {
		if list, isList := v.([]any); isList {
			cs, err := g.list(list, ptr+"/items", res)
			if err != nil {
				return nil, err
			}
			n.prefix = append(n.prefix, cs...)
			n.obj["items"] = copies(cs, list)
		} else {
			c, err := sub(v, ptr+"/items")
			if err != nil {
				return nil, err
			}
			n.items, n.obj["items"] = c, copyOf(c, v)
		}
	}
	for _, kw := range listSchemaKeywords {
		list, ok := obj[kw].([]any)
		if !ok {
			continue
		}
		cs, err := g.list(list, ptr+"/"+kw, res)
		if err != nil {
			return nil, err
		}
		n.obj[kw] = copies(cs, list)
		if kw == "prefixItems" {
			n.prefix = cs
			continue
		}
		for _, c := range cs {
			n.same = append(n.same, sameEdge{to: c, via: kw})
		}
	}
	for _, kw := range mapSchemaKeywords {
		m, ok := obj[kw].(map[string]any)
		if !ok {
			continue
		}
		out := make(map[string]any, len(m))
		for _, k := range slices.Sorted(maps.Keys(m)) {
			v := m[k]
			if _, isList := v.([]any); isList && kw == "dependencies" {
				out[k] = v // draft-07's property dependencies: names, not a schema
				continue
			}
			c, err := sub(v, ptr+"/"+escapePointer(kw)+"/"+escapePointer(k))
			if err != nil {
				return nil, err
			}
			out[k] = copyOf(c, v)
			switch kw {
			case "properties":
				if n.props == nil {
					n.props = map[string]*snode{}
				}
				n.props[k] = c
			case "patternProperties":
				n.patterns = append(n.patterns, c)
			case "dependentSchemas", "dependencies":
				n.same = append(n.same, sameEdge{to: c, via: kw})
			}
		}
		n.obj[kw] = out
	}
	slices.SortStableFunc(n.same, func(a, b sameEdge) int { return strings.Compare(a.via, b.via) })
	return n, nil
}

func (g *refGraph) list(list []any, at string, res *resource) ([]*snode, error) {
	cs := make([]*snode, len(list))
	for i, v := range list {
		c, err := g.walk(v, at+"/"+strconv.Itoa(i), res)
		if err != nil {
			return nil, err
		}
		cs[i] = c
	}
	return cs, nil
}

// copyOf is the rewritten copy of subschema c (its value v as is when a
// boolean schema).
func copyOf(c *snode, v any) any {
	if c.obj != nil {
		return c.obj
	}
	return v
}

func copies(cs []*snode, list []any) []any {
	out := make([]any, len(cs))
	for i, c := range cs {
		out[i] = copyOf(c, list[i])
	}
	return out
}

// anchor records anchor name for n in resource res.
func (g *refGraph) anchor(res *resource, name string, n *snode) error {
	if prev, dup := res.anchors[name]; dup && prev != n {
		return fmt.Errorf("invalid schema: anchor %q at %s is also at %s", name, pointerText(n.ptr), pointerText(prev.ptr))
	}
	res.anchors[name] = n
	return nil
}

// resolve finds the target of one $ref.
func (g *refGraph) resolve(p pendingRef) (*snode, error) {
	at := pointerText(p.n.ptr)
	u, err := url.Parse(p.ref)
	if err != nil {
		return nil, fmt.Errorf("invalid schema: $ref %q at %s: %w", p.ref, at, err)
	}
	abs := p.res.uri.ResolveReference(u)
	frag := abs.Fragment
	doc := *abs
	doc.Fragment, doc.RawFragment = "", ""
	res := g.byURI[doc.String()]
	if res == nil || res.node == nil {
		return nil, fmt.Errorf("invalid schema: $ref to another document (%s) is not supported: inline it", doc.String())
	}
	if frag != "" && !strings.HasPrefix(frag, "/") {
		to, ok := res.anchors[frag]
		if !ok {
			return nil, fmt.Errorf("invalid schema: $ref %q at %s: no anchor %q in %s", p.ref, at, frag, doc.String())
		}
		return to, nil
	}
	to, ok := g.nodes[res.node.ptr+frag]
	if !ok {
		return nil, fmt.Errorf("invalid schema: $ref %q at %s does not point to a schema of the document", p.ref, at)
	}
	return to, nil
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
