package jsonkind

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// DuplicateKey returns an error naming the first key given twice in one
// object of body, at any depth ("rates: given twice", "workload.
// input_tokens.value: given twice"): encoding/json keeps the last of
// duplicates silently, so a body could say one thing to a reader and
// another to the daemon (issue 22). The sweep API and answer check sets
// refuse such input with it. body is valid JSON (the caller decoded
// it), so nesting is within encoding/json's depth limit; the walk keeps its
// own stack, not the goroutine's.
func DuplicateKey(body []byte) error {
	type frame struct {
		path   string
		object bool
		keys   map[string]bool
		index  int  // the next element of an array
		key    bool // an object expects a key next
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var stack []*frame
	// child is the path of the value that comes next in the innermost
	// frame.
	var pending string
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // the end (or an error the caller's decode reported)
		}
		top := (*frame)(nil)
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.key {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				continue
			}
			k, _ := tok.(string)
			at := joinPath(top.path, k)
			if top.keys[k] {
				return fmt.Errorf("%s: given twice: give each key once (a JSON decoder keeps one of them silently)", at)
			}
			top.keys[k] = true
			top.key, pending = false, at
			continue
		}
		// A value: of the innermost object (its key read) or array.
		at := pending
		if top != nil && !top.object {
			if d, ok := tok.(json.Delim); ok && d == ']' {
				stack = stack[:len(stack)-1]
				continue
			}
			at = top.path + "[" + strconv.Itoa(top.index) + "]"
			top.index++
		}
		if top != nil && top.object {
			top.key = true
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{path: at, object: true, keys: map[string]bool{}, key: true})
		case json.Delim('['):
			stack = append(stack, &frame{path: at})
		}
	}
}

func joinPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}
