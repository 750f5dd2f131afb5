// Package answer owns answer checks: short prompts whose replies are judged
// against an expectation, sent continuously by the daemon so that a deploy
// that is fast but wrong (a broken chat template, a mismatched tokenizer,
// replies cut short, the wrong model behind the served name) shows up in
// metrics and alerts. It owns the check-set format (JSONL, strictly
// decoded and bounded: Parse, Load), the embedded built-in set (Builtin),
// the request of a check (Item.Request: greedy, seeded, streaming, through
// prober/endpoint's one request path), the judge of a reply (Judge: pure),
// and the record of one check (Result: outcome, bounded reply, reply hash,
// the first tokens' top-2 log-probabilities when the server gave them).
// It is not a model-quality benchmark; docs/quality.md says what it catches.
package answer

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/llmprobe/llmprobe/prober/capfile"
	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/jsonkind"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// Bounds of a check set.
const (
	// MaxSetBytes bounds a check-set file.
	MaxSetBytes = 1 << 20
	// MaxChecks bounds the items of a set.
	MaxChecks = 256
	// MaxIDBytes bounds an item's id (a label value).
	MaxIDBytes = 64
	// MaxPromptBytes bounds an item's prompt, or its messages' contents
	// together.
	MaxPromptBytes = 16 << 10
	// MaxMessages bounds an item's messages.
	MaxMessages = 32
	// MaxCheckTokens bounds an item's max_tokens.
	MaxCheckTokens = 1024
	// MaxExpectBytes bounds the string of an exact, contains or stop
	// expectation.
	MaxExpectBytes = 4 << 10
	// MaxRegexBytes bounds a regex expectation's source.
	MaxRegexBytes = 1 << 10
	// MaxSchemaBytes bounds a json_schema expectation.
	MaxSchemaBytes = 16 << 10
	// MaxDocBytes bounds an item's doc.
	MaxDocBytes = 512
)

// DefaultMaxTokens is an item's max_tokens when it leaves it out.
const DefaultMaxTokens = 32

// Kind names an expectation.
type Kind string

// The expectations an item may hold (exactly one).
const (
	KindExact      Kind = "exact"
	KindContains   Kind = "contains"
	KindRegex      Kind = "regex"
	KindNumber     Kind = "number"
	KindJSONSchema Kind = "json_schema"
	KindStop       Kind = "stop"
	KindLength     Kind = "length"
)

// Kinds lists the expectations in the order the docs give them.
var Kinds = []Kind{KindExact, KindContains, KindRegex, KindNumber, KindJSONSchema, KindStop, KindLength}

// Item is one answer check. It is immutable after Parse.
type Item struct {
	// ID names the check (the check label): [a-zA-Z0-9_.:-]+, unique in
	// its set, at most MaxIDBytes.
	ID string
	// Doc says what the check tests (optional, shown in docs).
	Doc string
	// Prompt or Messages (exactly one) is what is sent.
	Prompt   string
	Messages []client.Message
	// MaxTokens is sent as max_tokens (DefaultMaxTokens when left out).
	MaxTokens int
	// Kind is the expectation; the fields below hold its value.
	Kind      Kind
	Text      string  // exact, contains, stop
	Number    float64 // number
	Tolerance float64 // number: the largest accepted |reply - Number|
	re        *regexp.Regexp
	reBytes   int // regex: how much of a reply re matches (regexBudget)
	schema    *workload.Schema
}

// Set is a named list of checks.
type Set struct {
	// Name is "builtin" or the file's path.
	Name  string
	Items []*Item
	// SHA256 is the hex SHA-256 of the file Load read (empty for Parse).
	SHA256 string
}

// itemJSON is an item as written in a JSONL line.
type itemJSON struct {
	ID         string           `json:"id"`
	Doc        string           `json:"doc"`
	Prompt     *string          `json:"prompt"`
	Messages   []client.Message `json:"messages"`
	MaxTokens  *int             `json:"max_tokens"`
	Exact      *string          `json:"exact"`
	Contains   *string          `json:"contains"`
	Regex      *string          `json:"regex"`
	Number     *float64         `json:"number"`
	Tolerance  *float64         `json:"tolerance"`
	JSONSchema json.RawMessage  `json:"json_schema"`
	Stop       *string          `json:"stop"`
	Length     *bool            `json:"length"`
}

var idRE = regexp.MustCompile(`^[a-zA-Z0-9_.:-]+$`)

// LineError is a problem of one line of a check set: the line (1-based),
// the field at fault ("" for the line as a whole) and why.
type LineError struct {
	Set   string
	Line  int
	Field string
	Err   error
}

func (e *LineError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s:%d: %v", e.Set, e.Line, e.Err)
	}
	return fmt.Sprintf("%s:%d: %s: %v", e.Set, e.Line, e.Field, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

// Load reads a check-set file (at most MaxSetBytes; FIFOs and devices
// refused) and parses it.
func Load(path string) (*Set, error) {
	b, err := capfile.ReadRegular(path, MaxSetBytes)
	if err != nil {
		return nil, fmt.Errorf("answer check set: %w", err)
	}
	s, err := Parse(path, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b)
	s.SHA256 = hex.EncodeToString(sum[:])
	return s, nil
}

// Parse reads a check set in JSONL: one JSON object per line (blank lines
// and lines starting with # are skipped), unknown keys refused, every
// field bounded. name names the set in errors. The first problem is
// returned as a *LineError.
func Parse(name string, r io.Reader) (*Set, error) {
	s := &Set{Name: name}
	sc := bufio.NewScanner(io.LimitReader(r, MaxSetBytes+1))
	sc.Buffer(make([]byte, 0, 64<<10), MaxSetBytes+1)
	seen := map[string]int{}
	total := 0
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		total += len(b) + 1
		if total > MaxSetBytes+1 {
			return nil, &LineError{Set: name, Line: line, Err: fmt.Errorf("the set is larger than %d bytes", MaxSetBytes)}
		}
		t := bytes.TrimSpace(b)
		if len(t) == 0 || t[0] == '#' {
			continue
		}
		if len(s.Items) == MaxChecks {
			return nil, &LineError{Set: name, Line: line, Err: fmt.Errorf("more than %d checks", MaxChecks)}
		}
		it, field, err := parseItem(t)
		if err != nil {
			return nil, &LineError{Set: name, Line: line, Field: field, Err: err}
		}
		// As the sweep API does: encoding/json keeps the last of a key
		// given twice, so the line could say one thing to a reader and
		// another to the judge.
		if err := jsonkind.DuplicateKey(t); err != nil {
			return nil, &LineError{Set: name, Line: line, Err: err}
		}
		if first, dup := seen[it.ID]; dup {
			return nil, &LineError{Set: name, Line: line, Field: "id", Err: fmt.Errorf("duplicate id %q (also line %d)", it.ID, first)}
		}
		seen[it.ID] = line
		s.Items = append(s.Items, it)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &LineError{Set: name, Line: line + 1, Err: fmt.Errorf("the set is larger than %d bytes", MaxSetBytes)}
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(s.Items) == 0 {
		return nil, fmt.Errorf("%s: no checks (one JSON object per line)", name)
	}
	return s, nil
}

// parseItem decodes and validates one line; field names the key at fault.
func parseItem(b []byte) (*Item, string, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var j itemJSON
	if err := dec.Decode(&j); err != nil {
		return nil, jsonField(err), jsonErr(err)
	}
	if dec.More() {
		return nil, "", errors.New("more than one JSON value on the line")
	}
	it := &Item{ID: j.ID, Doc: j.Doc, MaxTokens: DefaultMaxTokens}
	switch {
	case j.ID == "":
		return nil, "id", errors.New("required")
	case len(j.ID) > MaxIDBytes:
		return nil, "id", fmt.Errorf("longer than %d bytes", MaxIDBytes)
	case !idRE.MatchString(j.ID):
		return nil, "id", fmt.Errorf("must match %s, got %q", idRE, j.ID)
	}
	if len(j.Doc) > MaxDocBytes {
		return nil, "doc", fmt.Errorf("longer than %d bytes", MaxDocBytes)
	}
	switch {
	case j.Prompt != nil && j.Messages != nil:
		return nil, "messages", errors.New("set either prompt or messages, not both")
	case j.Prompt != nil:
		if *j.Prompt == "" {
			return nil, "prompt", errors.New("must not be empty")
		}
		if len(*j.Prompt) > MaxPromptBytes {
			return nil, "prompt", fmt.Errorf("longer than %d bytes", MaxPromptBytes)
		}
		it.Prompt = *j.Prompt
	case j.Messages != nil:
		if field, err := checkMessages(j.Messages); err != nil {
			return nil, field, err
		}
		it.Messages = j.Messages
	default:
		return nil, "prompt", errors.New("required: a prompt or messages")
	}
	if j.MaxTokens != nil {
		if *j.MaxTokens < 1 || *j.MaxTokens > MaxCheckTokens {
			return nil, "max_tokens", fmt.Errorf("must be between 1 and %d, got %d", MaxCheckTokens, *j.MaxTokens)
		}
		it.MaxTokens = *j.MaxTokens
	}
	if field, err := it.setExpectation(&j); err != nil {
		return nil, field, err
	}
	return it, "", nil
}

func checkMessages(ms []client.Message) (string, error) {
	if len(ms) == 0 {
		return "messages", errors.New("must not be empty")
	}
	if len(ms) > MaxMessages {
		return "messages", fmt.Errorf("more than %d messages", MaxMessages)
	}
	size := 0
	for i, m := range ms {
		switch m.Role {
		case "system", "user", "assistant":
		default:
			return fmt.Sprintf("messages[%d].role", i), fmt.Errorf("must be system, user or assistant, got %q", trim(m.Role, 32))
		}
		size += len(m.Content)
	}
	if size > MaxPromptBytes {
		return "messages", fmt.Errorf("contents longer than %d bytes together", MaxPromptBytes)
	}
	if ms[len(ms)-1].Role == "assistant" {
		return fmt.Sprintf("messages[%d].role", len(ms)-1), errors.New("the last message must not be the assistant's")
	}
	return "", nil
}

// setExpectation checks that exactly one expectation is set and records it.
func (it *Item) setExpectation(j *itemJSON) (string, error) {
	var set []Kind
	add := func(k Kind, ok bool) {
		if ok {
			set = append(set, k)
		}
	}
	add(KindExact, j.Exact != nil)
	add(KindContains, j.Contains != nil)
	add(KindRegex, j.Regex != nil)
	add(KindNumber, j.Number != nil)
	add(KindJSONSchema, len(j.JSONSchema) > 0 && string(j.JSONSchema) != "null")
	add(KindStop, j.Stop != nil)
	add(KindLength, j.Length != nil)
	if len(set) == 0 {
		return "", fmt.Errorf("one expectation is required: %s", kindList())
	}
	if len(set) > 1 {
		return string(set[1]), fmt.Errorf("one expectation per check, got %s and %s", set[0], set[1])
	}
	it.Kind = set[0]
	if j.Tolerance != nil && it.Kind != KindNumber {
		return "tolerance", errors.New("only a number expectation takes a tolerance")
	}
	str := func(p *string) (string, error) {
		switch {
		case *p == "":
			return string(it.Kind), errors.New("must not be empty")
		case len(*p) > MaxExpectBytes:
			return string(it.Kind), fmt.Errorf("longer than %d bytes", MaxExpectBytes)
		}
		it.Text = *p
		return "", nil
	}
	switch it.Kind {
	case KindExact:
		return str(j.Exact)
	case KindContains:
		return str(j.Contains)
	case KindStop:
		return str(j.Stop)
	case KindRegex:
		if len(*j.Regex) > MaxRegexBytes {
			return "regex", fmt.Errorf("longer than %d bytes", MaxRegexBytes)
		}
		re, err := regexp.Compile(*j.Regex)
		if err != nil {
			return "regex", err
		}
		it.re, it.reBytes, it.Text = re, regexBudget(regexInsts(re)), *j.Regex
	case KindNumber:
		it.Number = *j.Number
		if j.Tolerance != nil {
			if !(*j.Tolerance >= 0) {
				return "tolerance", fmt.Errorf("must be >= 0, got %v", *j.Tolerance)
			}
			it.Tolerance = *j.Tolerance
		}
	case KindJSONSchema:
		if len(j.JSONSchema) > MaxSchemaBytes {
			return "json_schema", fmt.Errorf("longer than %d bytes", MaxSchemaBytes)
		}
		sch, err := workload.CompileSchema(j.JSONSchema)
		if err != nil {
			return "json_schema", err
		}
		it.schema, it.Text = sch, string(j.JSONSchema)
	case KindLength:
		if !*j.Length {
			return "length", errors.New("must be true (leave it out for no length expectation)")
		}
	}
	return "", nil
}

func kindList() string {
	s := make([]string, len(Kinds))
	for i, k := range Kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// jsonField is the key a decoding error names, when it names one.
func jsonField(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return te.Field
	}
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return strings.Trim(f, `"`)
	}
	return ""
}

// jsonErr is a decoding error without encoding/json's prefix.
func jsonErr(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("must be %s, got %s", jsonType(te.Type.String()), te.Value)
	}
	if strings.HasPrefix(err.Error(), "json: unknown field ") {
		return errors.New("unknown key")
	}
	return fmt.Errorf("invalid JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
}

func jsonType(goType string) string {
	switch goType {
	case "string":
		return "a string"
	case "int", "float64":
		return "a number"
	case "bool":
		return "true or false"
	case "[]client.Message":
		return "a list of {role, content}"
	}
	return goType
}

// trim bounds s to n bytes of valid UTF-8.
func trim(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}
