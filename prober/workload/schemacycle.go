package workload

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// MaxSchemaDepth bounds the nesting of a JSON schema document (objects and
// arrays): deeper schemas are refused before they are compiled.
const MaxSchemaDepth = 64

// checkDepth refuses a document nested deeper than MaxSchemaDepth.
func checkDepth(v any, depth int) error {
	if depth > MaxSchemaDepth {
		return fmt.Errorf("invalid schema: nested deeper than %d levels", MaxSchemaDepth)
	}
	switch x := v.(type) {
	case map[string]any:
		for _, sub := range x {
			if err := checkDepth(sub, depth+1); err != nil {
				return err
			}
		}
	case []any:
		for _, sub := range x {
			if err := checkDepth(sub, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkSchemaRecursion refuses a schema graph (resolveSchemaRefs' nodes)
// in which a $ref (alone or through allOf, anyOf, oneOf, not, if/then/else,
// dependentSchemas) leads back to a schema on the same value: validating
// any reply against it would recurse until the stack overflows, which
// kills the process ({"$ref": "#"} did, and so did a $ref reaching the
// root through a $id base URI). Recursion through properties or items
// descends into the value and ends with it: a tree schema is kept.
// Schema.Check's budget bounds validation even where this check would
// miss a cycle.
func checkSchemaRecursion(nodes map[string]*snode) error {
	const (
		unseen = iota
		active
		done
	)
	state := map[*snode]int{}
	var visit func(n *snode) error
	visit = func(n *snode) error {
		state[n] = active
		edges := n.same
		if n.ref != nil {
			edges = append([]sameEdge{{to: n.ref, via: "$ref " + strconv.Quote(n.origRef)}}, edges...)
		}
		for _, e := range edges {
			switch state[e.to] {
			case active:
				return fmt.Errorf("invalid schema: %s at %s leads back to %s on the same value: validating a reply would never end", e.via, pointerText(n.ptr), pointerText(e.to.ptr))
			case unseen:
				if err := visit(e.to); err != nil {
					return err
				}
			}
		}
		state[n] = done
		return nil
	}
	// In a fixed order (the root first, pointers sorted), so that the
	// cycle an error names is the same on every run.
	for _, p := range slices.Sorted(maps.Keys(nodes)) {
		if n := nodes[p]; state[n] == unseen {
			if err := visit(n); err != nil {
				return err
			}
		}
	}
	return nil
}
