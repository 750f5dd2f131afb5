package workload

import (
	"fmt"
	"strconv"
)

// The bounds of one Schema.Check, whatever the schema and the value: the
// validator (google/jsonschema-go) recurses once per subschema applied to
// a part of the value, and a failed application may quote that part in
// its error. Before validating, Check walks the same graph over the value
// (checkCost) and refuses a check that would exceed either bound.
const (
	// MaxCheckCost bounds the work of one check: each application of a
	// subschema to a part of the value counts 64 plus the part's size in
	// bytes. A reply of 100 KiB nested 10 levels costs about 1 MiB.
	MaxCheckCost = 32 << 20
	// MaxCheckDepth bounds the nesting of applications (subschema within
	// subschema, through $ref or descending into the value).
	MaxCheckDepth = 1000
)

// applyCost is the fixed cost of one application of a subschema.
const applyCost = 64

// inode is a part of the decoded value with its size.
type inode struct {
	size  int
	keys  []string // an object's members, in the order of kids
	kids  []*inode // an object's member values or an array's items
	isObj bool
}

// sizeTree is v's inode tree. Sizes are those of v's compact JSON text,
// numbers counted as 8 bytes.
func sizeTree(v any) *inode {
	switch x := v.(type) {
	case map[string]any:
		n := &inode{size: 2, isObj: true}
		for k, sub := range x {
			c := sizeTree(sub)
			n.keys, n.kids = append(n.keys, k), append(n.kids, c)
			n.size += len(k) + 4 + c.size
		}
		return n
	case []any:
		n := &inode{size: 2}
		for _, sub := range x {
			c := sizeTree(sub)
			n.kids = append(n.kids, c)
			n.size += c.size + 1
		}
		return n
	case string:
		return &inode{size: len(x) + 2}
	default:
		return &inode{size: 8}
	}
}

// errTooCostly is checkCost's error.
type errTooCostly struct{ what string }

func (e errTooCostly) Error() string { return e.what }

// checkCost walks the applications validating v against root would make,
// an upper bound of them (every branch of anyOf, if/then/else,
// patternProperties and additionalProperties counted), and refuses the
// check when their cost passes MaxCheckCost or their nesting
// MaxCheckDepth. It stops as soon as a bound is passed, so its own work
// is bounded the same way.
func checkCost(root *snode, v *inode) error {
	c := &costWalk{}
	return c.apply(root, v, 1)
}

type costWalk struct{ cost int }

func (c *costWalk) apply(s *snode, v *inode, depth int) error {
	if depth > MaxCheckDepth {
		return errTooCostly{fmt.Sprintf("too costly to check against the schema: subschemas nest deeper than %d levels over this value", MaxCheckDepth)}
	}
	c.cost += applyCost + v.size
	if c.cost > MaxCheckCost {
		return errTooCostly{"too costly to check against the schema: more than " + strconv.Itoa(MaxCheckCost>>20) + " MiB of work (subschema applications weighed by the size of the value they apply to)"}
	}
	if s.ref != nil {
		if err := c.apply(s.ref, v, depth+1); err != nil {
			return err
		}
	}
	for _, e := range s.same {
		if err := c.apply(e.to, v, depth+1); err != nil {
			return err
		}
	}
	each := func(sub *snode, kids []*inode) error {
		if sub == nil {
			return nil
		}
		for _, k := range kids {
			if err := c.apply(sub, k, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if v.isObj {
		for i, k := range v.keys {
			if p := s.props[k]; p != nil {
				if err := c.apply(p, v.kids[i], depth+1); err != nil {
					return err
				}
			}
			for _, p := range s.patterns {
				if err := c.apply(p, v.kids[i], depth+1); err != nil {
					return err
				}
			}
			if s.names != nil {
				if err := c.apply(s.names, &inode{size: len(k) + 2}, depth+1); err != nil {
					return err
				}
			}
		}
		for _, sub := range []*snode{s.additional, s.unevalProps} {
			if err := each(sub, v.kids); err != nil {
				return err
			}
		}
		return nil
	}
	for i, k := range v.kids {
		if i < len(s.prefix) {
			if err := c.apply(s.prefix[i], k, depth+1); err != nil {
				return err
			}
		}
	}
	for _, sub := range []*snode{s.items, s.moreItems, s.contains, s.unevalItems} {
		if err := each(sub, v.kids); err != nil {
			return err
		}
	}
	return nil
}
