package config

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"
)

// yaml decodes a float into an integer field by truncating it
// (max_concurrency: 1.9 becomes 1). integerProblems finds those values
// first, so that they are errors instead.

var (
	nodeUnmarshaler = reflect.TypeFor[yaml.Unmarshaler]()
	durationType    = reflect.TypeFor[time.Duration]()
)

// maxIntegerVisits bounds the nodes integerProblems visits: aliases are
// followed, so a document of nested aliases (a "billion laughs") would
// otherwise be walked exponentially, before yaml's decoder refuses it.
const maxIntegerVisits = 1 << 20

// integerProblems walks the document beside the Go type it decodes into
// and returns an *Error for every integer field written as a float. Types
// with their own node decoder (sizes, SLOs) check their values themselves.
func integerProblems(file string, data []byte) []*Error {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 {
		return nil
	}
	var es []*Error
	visits := 0
	walkIntegers(doc.Content[0], reflect.TypeFor[Config](), "", &visits, func(path string, n *yaml.Node, t reflect.Type) {
		es = append(es, &Error{File: file, Line: n.Line, Path: path,
			Err: fmt.Errorf("want %s, got %s", describeGoType(t.Kind().String()), strconv.Quote(n.Value))})
	})
	return es
}

func walkIntegers(n *yaml.Node, t reflect.Type, path string, visits *int, bad func(string, *yaml.Node, reflect.Type)) {
	if *visits++; *visits > maxIntegerVisits {
		return
	}
	n = resolveAlias(n)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n == nil || reflect.PointerTo(t).Implements(nodeUnmarshaler) {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return
		}
		fields := yamlFields(t)
		walkMapping(n, path, nil, func(key string, v *yaml.Node, p string) {
			if ft, ok := fields[key]; ok {
				walkIntegers(v, ft, p, visits, bad)
			}
		})
	case reflect.Map:
		if n.Kind == yaml.MappingNode {
			walkMapping(n, path, nil, func(_ string, v *yaml.Node, p string) { walkIntegers(v, t.Elem(), p, visits, bad) })
		}
	case reflect.Slice, reflect.Array:
		if n.Kind == yaml.SequenceNode {
			for i, item := range n.Content {
				walkIntegers(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i), visits, bad)
			}
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if t != durationType && n.Kind == yaml.ScalarNode && n.ShortTag() == "!!float" {
			bad(path, n, t)
		}
	}
}

// fieldCache maps a struct type to its fields' types by YAML key.
var fieldCache sync.Map // reflect.Type -> map[string]reflect.Type

func yamlFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	fields := map[string]reflect.Type{}
	for i := range t.NumField() {
		name, opts, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		switch {
		case name == "" && opts == "inline" && t.Field(i).Type.Kind() == reflect.Struct:
			for k, ft := range yamlFields(t.Field(i).Type) {
				fields[k] = ft
			}
		case name != "" && name != "-":
			fields[name] = t.Field(i).Type
		}
	}
	fieldCache.Store(t, fields)
	return fields
}

// walkMapping calls f for each key of mapping n and its value, with merge
// keys (<<) expanded; a merged key that the mapping (or an earlier merge)
// sets itself is skipped, as yaml does. A merge that leads back to a
// mapping being expanded (`a: &a {<<: *a}`) is not followed again: without
// that a recursive alias overflowed the stack and killed the process.
func walkMapping(n *yaml.Node, path string, seen map[string]bool, f func(key string, v *yaml.Node, path string)) {
	if seen == nil {
		seen = map[string]bool{}
	}
	expandMapping(n, path, seen, map[*yaml.Node]bool{}, f)
}

func expandMapping(n *yaml.Node, path string, seen map[string]bool, active map[*yaml.Node]bool, f func(key string, v *yaml.Node, path string)) {
	if active[n] || len(active) > maxMergeDepth {
		return
	}
	active[n] = true
	defer delete(active, n)
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.ShortTag() == "!!merge" {
			merges = append(merges, v)
			continue
		}
		if !seen[k.Value] {
			seen[k.Value] = true
			f(k.Value, v, joinPath(path, k.Value))
		}
	}
	for _, m := range merges {
		m = resolveAlias(m)
		if m == nil {
			continue
		}
		items := []*yaml.Node{m}
		if m.Kind == yaml.SequenceNode {
			items = m.Content
		}
		for _, it := range items {
			if it = resolveAlias(it); it != nil && it.Kind == yaml.MappingNode {
				expandMapping(it, path, seen, active, f)
			}
		}
	}
}

// maxMergeDepth bounds a chain of merge keys walkMapping follows.
const maxMergeDepth = 64
