package client

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Tool is one function a request offers the model (Request.Tools). The
// client writes it in the shape of the request's API: chat's
// {"type":"function","function":{name, description, parameters}}, the
// Responses API's {"type":"function", name, description, parameters}.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON schema of the arguments (nil: none).
	Parameters json.RawMessage
}

// Bounds of the tool calls a response may make.
const (
	// MaxToolCalls bounds the tool calls assembled from one response; a
	// response with more is invalid_response, ended (its stream no longer
	// read) as soon as the cap is passed.
	MaxToolCalls = 64
	// MaxToolCallBytes bounds the arguments of all the tool calls of one
	// response together (bytes, unescaped); past it, as MaxToolCalls.
	MaxToolCallBytes = 1 << 20
)

// toolCall is one tool call assembled from its deltas.
type toolCall struct {
	key  int // chat: tool_calls[].index; Responses API: output_index
	name string
	args []byte
}

// toolCalls assembles the tool calls of one response from their deltas (a
// request with tools only: it allocates) and checks them at the end.
type toolCalls struct {
	calls []toolCall
	bytes int
	err   string // the first assembly error ("": none)
}

// chatToolDelta is one element of a chat delta's tool_calls.
type chatToolDelta struct {
	Index    *int `json:"index"`
	Function *struct {
		Name      *string `json:"name"`
		Arguments *string `json:"arguments"`
	} `json:"function"`
}

// addChat adds a chat delta's tool_calls array (raw JSON, still valid:
// the chunk decoder checked it). An element without an index continues the
// last call (servers that stream one call at a time omit it).
func (t *toolCalls) addChat(raw []byte) {
	if t.err != "" {
		return
	}
	var ds []chatToolDelta
	if err := json.Unmarshal(raw, &ds); err != nil {
		t.fail("tool_calls delta: " + err.Error())
		return
	}
	for _, d := range ds {
		key := -1
		if d.Index != nil {
			key = *d.Index
		} else if n := len(t.calls); n > 0 {
			key = t.calls[n-1].key
		}
		var name, args string
		if d.Function != nil {
			if d.Function.Name != nil {
				name = *d.Function.Name
			}
			if d.Function.Arguments != nil {
				args = *d.Function.Arguments
			}
		}
		t.add(key, name, args)
	}
}

// add appends a fragment to the call with key, starting it when new.
func (t *toolCalls) add(key int, name, args string) {
	if t.err != "" {
		return
	}
	i := len(t.calls) - 1
	for ; i >= 0 && t.calls[i].key != key; i-- {
	}
	if i < 0 {
		if len(t.calls) == MaxToolCalls {
			t.fail("more than " + strconv.Itoa(MaxToolCalls) + " tool calls")
			return
		}
		t.calls = append(t.calls, toolCall{key: key})
		i = len(t.calls) - 1
	}
	c := &t.calls[i]
	if name != "" {
		c.name += name
	}
	t.bytes += len(args) + len(name)
	if t.bytes > MaxToolCallBytes {
		t.fail("tool call arguments larger than " + strconv.Itoa(MaxToolCallBytes) + " bytes")
		return
	}
	c.args = append(c.args, args...)
}

func (t *toolCalls) fail(msg string) {
	if t.err == "" {
		t.err = msg
	}
}

// check returns why the assembled calls are malformed ("" when they are
// fine): each must name one of the request's tools and carry arguments
// that are one JSON object, valid against the tool's schema (check).
func (t *toolCalls) check(tools []Tool, check func(name string, args []byte) error) string {
	if t.err != "" {
		return t.err
	}
	for i, c := range t.calls {
		at := fmt.Sprintf("tool call %d", i)
		if c.name == "" {
			return at + ": no function name"
		}
		known := false
		for _, tl := range tools {
			known = known || tl.Name == c.name
		}
		if !known {
			return fmt.Sprintf("%s: function %q is not one of the request's tools", at, trimTo(c.name, 64))
		}
		var v any
		if err := json.Unmarshal(c.args, &v); err != nil {
			return fmt.Sprintf("%s (%s): arguments are not JSON: %v", at, c.name, err)
		}
		if _, ok := v.(map[string]any); !ok {
			return fmt.Sprintf("%s (%s): arguments are not a JSON object", at, c.name)
		}
		if check != nil {
			if err := check(c.name, c.args); err != nil {
				return fmt.Sprintf("%s (%s): arguments: %v", at, c.name, err)
			}
		}
	}
	return ""
}
