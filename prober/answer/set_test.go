package answer

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestParseErrors(t *testing.T) {
	long := strings.Repeat("a", MaxPromptBytes+1)
	for _, tc := range []struct {
		name, in, want string
	}{
		{"unknown key", `{"id":"a","prompt":"p","exact":"x","temperature":1}`, `t:1: temperature: unknown key`},
		{"no id", `{"prompt":"p","exact":"x"}`, `t:1: id: required`},
		{"bad id", `{"id":"a b","prompt":"p","exact":"x"}`, `t:1: id: must match`},
		{"long id", `{"id":"` + strings.Repeat("a", MaxIDBytes+1) + `","prompt":"p","exact":"x"}`, `id: longer than 64 bytes`},
		{"no prompt", `{"id":"a","exact":"x"}`, `t:1: prompt: required: a prompt or messages`},
		{"both", `{"id":"a","prompt":"p","messages":[{"role":"user","content":"c"}],"exact":"x"}`, `messages: set either prompt or messages`},
		{"long prompt", `{"id":"a","prompt":"` + long + `","exact":"x"}`, `prompt: longer than 16384 bytes`},
		{"bad role", `{"id":"a","messages":[{"role":"tool","content":"c"}],"exact":"x"}`, `messages[0].role: must be system, user or assistant`},
		{"assistant last", `{"id":"a","messages":[{"role":"user","content":"c"},{"role":"assistant","content":"d"}],"exact":"x"}`, `messages[1].role: the last message`},
		{"max_tokens", `{"id":"a","prompt":"p","max_tokens":0,"exact":"x"}`, `max_tokens: must be between 1 and 1024, got 0`},
		{"max_tokens type", `{"id":"a","prompt":"p","max_tokens":"8","exact":"x"}`, `max_tokens: must be a number, got string`},
		{"no expectation", `{"id":"a","prompt":"p"}`, `one expectation is required: exact, contains, regex, number, json_schema, stop, length`},
		{"two expectations", `{"id":"a","prompt":"p","exact":"x","contains":"y"}`, `t:1: contains: one expectation per check, got exact and contains`},
		{"empty exact", `{"id":"a","prompt":"p","exact":""}`, `exact: must not be empty`},
		{"bad regex", `{"id":"a","prompt":"p","regex":"("}`, `t:1: regex: error parsing regexp`},
		{"long regex", `{"id":"a","prompt":"p","regex":"` + strings.Repeat("a", MaxRegexBytes+1) + `"}`, `regex: longer than 1024 bytes`},
		{"tolerance alone", `{"id":"a","prompt":"p","exact":"x","tolerance":1}`, `tolerance: only a number expectation`},
		{"negative tolerance", `{"id":"a","prompt":"p","number":1,"tolerance":-1}`, `tolerance: must be >= 0`},
		{"bad schema", `{"id":"a","prompt":"p","json_schema":{"type":"nope"}}`, `json_schema: invalid schema`},
		{"length false", `{"id":"a","prompt":"p","length":false}`, `length: must be true`},
		{"not json", `{"id":"a",`, `t:1: invalid JSON`},
		{"two values", `{"id":"a","prompt":"p","exact":"x"} {}`, `more than one JSON value`},
		{"duplicate", "{\"id\":\"a\",\"prompt\":\"p\",\"exact\":\"x\"}\n\n{\"id\":\"a\",\"prompt\":\"p\",\"exact\":\"x\"}", `t:3: id: duplicate id "a" (also line 1)`},
		{"empty", "# only a comment\n\n", `t: no checks`},
		// Issue 34: the last of a key given twice won, while the API
		// refuses them.
		{"duplicate key", "# c\n" + `{"id":"a","prompt":"p","exact":"x","exact":"y"}`, `t:2: exact: given twice: give each key once`},
		{"duplicate key in a schema", `{"id":"a","prompt":"p","json_schema":{"type":"object","type":"string"}}`, `t:1: json_schema.type: given twice`},
		{"duplicate id key", `{"id":"a","id":"b","prompt":"p","exact":"x"}`, `t:1: id: given twice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t", strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestParseBounds(t *testing.T) {
	line := `{"id":"a%d","prompt":"p","exact":"x"}` + "\n"
	var b strings.Builder
	for i := range MaxChecks + 1 {
		b.WriteString(strings.Replace(line, "%d", strconv.Itoa(i), 1))
	}
	_, err := Parse("t", strings.NewReader(b.String()))
	var le *LineError
	if !errors.As(err, &le) || le.Line != MaxChecks+1 || !strings.Contains(err.Error(), "more than 256 checks") {
		t.Errorf("err = %v", err)
	}
	big := strings.Repeat("#"+strings.Repeat("x", 1000)+"\n", MaxSetBytes/1000+2)
	if _, err := Parse("t", strings.NewReader(big)); err == nil || !strings.Contains(err.Error(), "larger than 1048576 bytes") {
		t.Errorf("err = %v", err)
	}
}

func TestLoad(t *testing.T) {
	p := filepath.Join(t.TempDir(), "set.jsonl")
	if err := os.WriteFile(p, []byte("{\"id\":\"a\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"contains\":\"hello\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := LoadSet(p)
	if err != nil || len(s.Items) != 1 || s.Items[0].Kind != KindContains || s.Items[0].MaxTokens != DefaultMaxTokens {
		t.Fatalf("LoadSet = %+v, %v", s, err)
	}
	if _, err := LoadSet(filepath.Join(t.TempDir(), "missing.jsonl")); err == nil || !strings.Contains(err.Error(), "answer check set") {
		t.Errorf("missing file: %v", err)
	}
}

func TestBuiltin(t *testing.T) {
	s := Builtin()
	if len(s.Items) < 18 || len(s.Items) > 24 {
		t.Errorf("builtin has %d items, want about 20", len(s.Items))
	}
	kinds := map[Kind]bool{}
	for _, it := range s.Items {
		kinds[it.Kind] = true
		if it.Doc == "" {
			t.Errorf("%s: no doc", it.ID)
		}
		if it.Prompt == "" {
			t.Errorf("%s: builtin items are prompts (sent to either API)", it.ID)
		}
	}
	for _, k := range Kinds {
		if !kinds[k] {
			t.Errorf("no builtin item checks %s", k)
		}
	}
}

// TestDocsListBuiltin keeps docs/quality.md's table of the built-in set in
// step with builtin.jsonl.
func TestDocsListBuiltin(t *testing.T) {
	raw, err := os.ReadFile("../../docs/quality.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	s := Builtin()
	total := 0
	for _, it := range s.Items {
		total += it.MaxTokens
		if !strings.Contains(doc, "| `"+it.ID+"` | "+strings.ReplaceAll(it.Prompt, "|", `\|`)+" | "+strconv.Itoa(it.MaxTokens)+" | "+string(it.Kind)+": ") {
			t.Errorf("docs/quality.md has no row for %s with its prompt, max_tokens and expectation", it.ID)
		}
	}
	if want := strconv.Itoa(len(s.Items)) + " checks, " + strconv.Itoa(total) + " `max_tokens`"; !strings.Contains(doc, want) {
		t.Errorf("docs/quality.md does not say %q", want)
	}
}
