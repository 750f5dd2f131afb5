package conformance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
)

// unknownModel is the model name the corpus's 404 bodies were written for.
const unknownModel = "gpt-4"

// errorDiffs is the drift alarm's error-body check: for each corpus error
// of m it gives the persona (cfg, with the corpus's context length) the
// error's condition over HTTP and lists where the answer differs from the
// corpus body: the status, the JSON shape (key paths, value types, key
// order) and, unless the case says any_message, whether the message holds
// the manifest's. A case with a route also needs the persona's chat to
// answer the condition without an error, as the engine's does.
func errorDiffs(t *testing.T, cfg simulator.Config, m *manifest) []string {
	t.Helper()
	if len(m.Errors) == 0 {
		return nil
	}
	if m.Expect.MaxModelLen > 0 {
		cfg.MaxModelLen = m.Expect.MaxModelLen
	}
	var diffs []string
	for _, e := range m.Errors {
		c := cfg
		switch e.Condition {
		case "overloaded":
			c.Faults.HTTP429 = 1
		case "loading":
			c.Faults.HTTP503 = 1
		}
		base, _ := simtest.Start(t, c)
		method, path, body := personaErrorRequest(t, c, e)
		status, got := personaDo(t, method, base+path, body)
		diffs = append(diffs, bodyDiffs(t, m, e, status, got)...)
		if e.Route != "" {
			_, _, chat := personaErrorRequest(t, c, errorCase{Condition: e.Condition})
			if status, got := personaDo(t, http.MethodPost, base+"/v1/chat/completions", chat); status != http.StatusOK {
				diffs = append(diffs, fmt.Sprintf("error %s: the persona's chat refuses the %s condition (HTTP %d: %.80s), "+
					"the engine answers it", e.File, e.Condition, status, got))
			}
		}
	}
	return diffs
}

// personaErrorRequest is the request that meets e's condition for a
// persona configured as cfg: method, path and JSON body (nil for a GET).
func personaErrorRequest(t *testing.T, cfg simulator.Config, e errorCase) (method, path string, body any) {
	t.Helper()
	msgs := []map[string]string{{"role": "user", "content": "What is the capital of France?"}}
	req := map[string]any{"model": cfg.Model, "max_tokens": 8, "messages": msgs}
	switch e.Condition {
	case "too-long-prompt": // a prompt one word (a token) past the context; no output limit asked
		delete(req, "max_tokens")
		req["messages"] = []map[string]string{{"role": "user", "content": strings.Repeat("w ", cfg.MaxModelLen+1)}}
	case "unknown-model":
		req["model"] = unknownModel
	case "empty-messages":
		req["messages"] = []map[string]string{}
	case "overloaded", "loading": // the persona's fault answers every request
	default:
		t.Fatalf("error %s: unknown condition %q", e.File, e.Condition)
	}
	if e.Route == "" {
		return http.MethodPost, "/v1/chat/completions", req
	}
	method, path, ok := strings.Cut(e.Route, " ")
	if !ok || method != http.MethodGet || !strings.HasPrefix(path, "/") {
		t.Fatalf("error %s: route %q is not \"GET /path\"", e.File, e.Route)
	}
	return method, strings.ReplaceAll(path, "{model}", fmt.Sprint(req["model"])), nil
}

// personaDo sends the request and returns the answer's status and body.
func personaDo(t *testing.T, method, url string, body any) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

// bodyDiffs compares the persona's answer (status, body) to e with the
// corpus file.
func bodyDiffs(t *testing.T, m *manifest, e errorCase, status int, body []byte) []string {
	t.Helper()
	want, err := jsonShape(m.read(t, e.File))
	if err != nil {
		t.Fatalf("%s: %v", e.File, err)
	}
	var diffs []string
	if status != e.Status {
		diffs = append(diffs, fmt.Sprintf("error %s: status %d, engine %d", e.File, status, e.Status))
	}
	got, err := jsonShape(body)
	if err != nil {
		return append(diffs, fmt.Sprintf("error %s: the persona's body is not JSON (%v): %.80s", e.File, err, body))
	}
	diffs = append(diffs, shapeDiffs(e.File, got, want)...)
	if !e.AnyMessage {
		if msg := errorMessage(body); !strings.Contains(msg, e.Message) {
			diffs = append(diffs, fmt.Sprintf("error %s: message %q does not hold the engine's %q", e.File, msg, e.Message))
		}
	}
	return diffs
}

// shapeDiffs lists the key paths the persona's body (got) lacks, adds or
// types otherwise than the engine's (want), and a different key order
// when the paths agree.
func shapeDiffs(file string, got, want []shapeEntry) []string {
	types := func(s []shapeEntry) map[string]string {
		m := map[string]string{}
		for _, e := range s {
			m[e.path] = e.kind
		}
		return m
	}
	gt, wt := types(got), types(want)
	var diffs []string
	for _, w := range want {
		switch g, ok := gt[w.path]; {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("error %s: no %s (engine: %s)", file, w.path, w.kind))
		case g != w.kind:
			diffs = append(diffs, fmt.Sprintf("error %s: %s %s, engine %s", file, w.path, g, w.kind))
		}
	}
	for _, g := range got {
		if _, ok := wt[g.path]; !ok {
			diffs = append(diffs, fmt.Sprintf("error %s: %s (%s) not in the engine's body", file, g.path, g.kind))
		}
	}
	if len(diffs) == 0 && !slices.Equal(got, want) {
		diffs = append(diffs, fmt.Sprintf("error %s: key order %v, engine %v", file, got, want))
	}
	return diffs
}

// shapeEntry is one value of a JSON document: its key path ("." the
// root, "error.message", "a[]" an array's elements) and its JSON type.
type shapeEntry struct{ path, kind string }

func (e shapeEntry) String() string { return e.path }

// jsonShape lists every value of the JSON document b in document order.
func jsonShape(b []byte) ([]shapeEntry, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	var out []shapeEntry
	var walk func(path string) error
	walk = func(path string) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		kind := ""
		switch v := tok.(type) {
		case json.Delim:
			kind = map[json.Delim]string{'{': "object", '[': "array"}[v]
			out = append(out, shapeEntry{path, kind})
			for dec.More() {
				sub := path + "[]"
				if v == '{' {
					k, err := dec.Token()
					if err != nil {
						return err
					}
					sub = strings.TrimPrefix(path+"."+k.(string), "..")
				}
				if err := walk(sub); err != nil {
					return err
				}
			}
			_, err = dec.Token() // the closing delimiter
			return err
		case string:
			kind = "string"
		case float64:
			kind = "number"
		case bool:
			kind = "bool"
		case nil:
			kind = "null"
		}
		out = append(out, shapeEntry{path, kind})
		return nil
	}
	if err := walk("."); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return out, nil
}

// errorMessage is the message of an error body, wherever the engine puts
// it: error.message, a flat message, or error itself as a string.
func errorMessage(body []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	var s string
	if json.Unmarshal(v.Error, &s) == nil {
		return s
	}
	var nested struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(v.Error, &nested) == nil && nested.Message != "" {
		return nested.Message
	}
	return v.Message
}

// TestJSONShape holds the shape reader the error check relies on: paths,
// types and order, nested objects and arrays.
func TestJSONShape(t *testing.T) {
	got, err := jsonShape([]byte(`{"error":{"code":400,"message":"m","param":null,"ok":true},"a":[{"b":"x"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []shapeEntry{{".", "object"}, {"error", "object"}, {"error.code", "number"}, {"error.message", "string"},
		{"error.param", "null"}, {"error.ok", "bool"}, {"a", "array"}, {"a[]", "object"}, {"a[].b", "string"}}
	if !slices.Equal(got, want) {
		t.Errorf("shape %v, want %v", got, want)
	}
	if d := shapeDiffs("f", want[:5], want[:4]); len(d) != 1 || !strings.Contains(d[0], "error.param (null) not in") {
		t.Errorf("an extra key: %q", d)
	}
	if d := shapeDiffs("f", []shapeEntry{{".", "object"}, {"error.param", "string"}}, []shapeEntry{{".", "object"},
		{"error.param", "null"}}); len(d) != 1 || !strings.Contains(d[0], "error.param string, engine null") {
		t.Errorf("a type: %q", d)
	}
	swapped := []shapeEntry{want[0], want[1], want[3], want[2], want[4]}
	if d := shapeDiffs("f", swapped, want[:5]); len(d) != 1 || !strings.Contains(d[0], "key order") {
		t.Errorf("the order: %q", d)
	}
}
