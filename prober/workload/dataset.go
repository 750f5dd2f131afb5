package workload

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/llmprobe/llmprobe/prober/capfile"
)

// Dataset file formats (DatasetSpec.Format).
const (
	// FormatJSONL: one JSON object per line, {"prompt": "..."} or
	// {"messages": [{"role", "content"}, ...]}, with an optional
	// "max_tokens" or "output_tokens" and an optional "offset_ms".
	FormatJSONL = "jsonl"
	// FormatShareGPT: a JSON array of {"conversations": [{"from", "value"},
	// ...]} (ShareGPT_V3_unfiltered_cleaned_split.json and its kin).
	FormatShareGPT = "sharegpt"
)

// Bounds of a dataset file.
const (
	// MaxDatasetBytes caps a dataset file: 1 GiB (the ShareGPT V3 file is
	// about 640 MiB). A larger file is refused before it is read.
	MaxDatasetBytes = 1 << 30
	// MaxDatasetEntries caps the entries of a dataset: 200,000 (ShareGPT V3
	// has about 94,000). Every entry is counted with the server's tokenizer
	// once, so this also bounds the tokenizer calls of a run.
	MaxDatasetEntries = 200_000
	// MaxDatasetLineBytes caps one line of a JSONL dataset: 16 MiB.
	MaxDatasetLineBytes = 16 << 20
	// MaxDatasetMessages caps the messages of one entry: 1,024.
	MaxDatasetMessages = 1024
)

// Chat roles a messages entry may use.
var datasetRoles = map[string]bool{"system": true, "developer": true, "user": true, "assistant": true, "tool": true}

// DatasetEntry is one request of a dataset file, as read (not yet
// measured with a tokenizer).
type DatasetEntry struct {
	// Where is "FILE:LINE" (JSONL) or "FILE: entry N" (ShareGPT, 0-based).
	Where string
	// Prompt is the prompt text (a prompt entry, a ShareGPT human turn);
	// empty for a messages entry.
	Prompt string
	// Messages is the conversation of a messages entry (nil otherwise).
	Messages []Message
	// OutputTokens is the output length the entry asks for (max_tokens or
	// output_tokens); 0 when it gives none.
	OutputTokens int
	// Reply is a ShareGPT entry's reply (the turn after the prompt), whose
	// token length is the output length; empty otherwise.
	Reply string
	// Offset is the entry's offset_ms (JSONL), valid when the dataset is
	// Timed.
	Offset time.Duration
}

// Text returns the text the entry's prompt tokens are counted from: the
// prompt, or the messages' contents joined by newlines.
func (e *DatasetEntry) Text() string {
	if e.Messages == nil {
		return e.Prompt
	}
	parts := make([]string, len(e.Messages))
	for i, m := range e.Messages {
		parts[i] = m.Content
	}
	return strings.Join(parts, "\n")
}

// Dataset is a dataset file read and checked by LoadDataset. It holds the
// entries' text; it is immutable once returned and safe for concurrent
// reads.
type Dataset struct {
	// Path is the file as given; Format is FormatJSONL or FormatShareGPT.
	Path, Format string
	// SHA256 is the hex SHA-256 of the file's bytes; Bytes its size.
	SHA256 string
	Bytes  int64
	// Entries are the usable entries in file order.
	Entries []DatasetEntry
	// Skipped counts ShareGPT entries left out as vLLM's loader leaves
	// them out (ShareGPT rules 1 and 2 of docs/workload.md: fewer than two
	// turns, no human turn followed by a reply).
	Skipped int
	// HasMessages is true when an entry is a messages conversation (the
	// dataset then needs the chat API).
	HasMessages bool
	// MissingOutput counts entries that give no output length, and
	// FirstMissingOutput names the first of them.
	MissingOutput      int
	FirstMissingOutput string
	// Timed is true when every entry has offset_ms.
	Timed bool
}

// DatasetOptions configures LoadDataset. The zero value detects the format
// and applies the package's bounds.
type DatasetOptions struct {
	// Format is FormatJSONL, FormatShareGPT, or "" / "auto" to detect it
	// from the first non-blank byte ('[': ShareGPT, '{': JSONL).
	Format string
	// MaxBytes and MaxEntries lower MaxDatasetBytes and MaxDatasetEntries
	// (0: the package's bounds; larger values are capped to them).
	MaxBytes   int64
	MaxEntries int
}

// LoadDataset reads and checks a dataset file. Every problem is an error
// naming the file and line (JSONL) or entry index (ShareGPT) and the field,
// so a bad file fails before any load is sent. The file's size is checked
// before it is read, and a JSONL file is read line by line (a line over
// MaxDatasetLineBytes fails once that much of it is read).
func LoadDataset(path string, o DatasetOptions) (*Dataset, error) {
	maxBytes := int64(MaxDatasetBytes)
	if o.MaxBytes > 0 && o.MaxBytes < maxBytes {
		maxBytes = o.MaxBytes
	}
	maxEntries := MaxDatasetEntries
	if o.MaxEntries > 0 && o.MaxEntries < maxEntries {
		maxEntries = o.MaxEntries
	}
	f, err := capfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("dataset %s: not a regular file", path)
	}
	if fi.Size() > maxBytes {
		return nil, fmt.Errorf("dataset %s: %d bytes, more than the %d a dataset may have", path, fi.Size(), maxBytes)
	}
	h := sha256.New()
	cr := &countingReader{r: io.LimitReader(f, maxBytes+1)}
	br := bufio.NewReaderSize(io.TeeReader(cr, h), 64<<10)
	ds, err := readDataset(path, br, o.Format, maxEntries)
	if err != nil {
		return nil, err
	}
	if _, err := io.Copy(io.Discard, br); err != nil { // hash every byte
		return nil, fmt.Errorf("dataset %s: %w", path, err)
	}
	if cr.n > maxBytes {
		return nil, fmt.Errorf("dataset %s: more than the %d bytes a dataset may have", path, maxBytes)
	}
	ds.SHA256, ds.Bytes = hex.EncodeToString(h.Sum(nil)), cr.n
	return ds, nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// readDataset parses the file path from br, streamed: a JSONL file line by
// line (a line over MaxDatasetLineBytes is refused once that much of it is
// read, not after the whole file), a ShareGPT file (one JSON array) read
// whole, within the file's cap.
func readDataset(path string, br *bufio.Reader, format string, maxEntries int) (*Dataset, error) {
	ds := &Dataset{Path: path}
	lines, first, err := skipBlank(br)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", path, err)
	}
	switch format {
	case "", "auto":
		switch first {
		case 0:
			return nil, fmt.Errorf("dataset %s: empty file", path)
		case '[':
			format = FormatShareGPT
		case '{':
			format = FormatJSONL
		default:
			return nil, fmt.Errorf("dataset %s: cannot tell the format: the file starts with neither '{' (JSONL) nor '[' (ShareGPT JSON); give format", path)
		}
	case FormatJSONL, FormatShareGPT:
	default:
		return nil, fmt.Errorf("dataset %s: format: must be %s, %s or auto, got %q", path, FormatJSONL, FormatShareGPT, format)
	}
	ds.Format = format
	if format == FormatJSONL {
		err = ds.parseJSONL(br, lines, maxEntries)
	} else {
		var b []byte
		if b, err = io.ReadAll(br); err == nil {
			err = ds.parseShareGPT(b, maxEntries)
		}
	}
	if err != nil {
		return nil, err
	}
	if len(ds.Entries) == 0 {
		if ds.Skipped > 0 {
			return nil, fmt.Errorf("dataset %s: no usable entry (%d ShareGPT entries without a human turn and its reply)", path, ds.Skipped)
		}
		return nil, fmt.Errorf("dataset %s: no entries", path)
	}
	return ds, nil
}

// skipBlank consumes the blanks (space, tab, CR, LF, a byte order mark) at
// the start of br and returns the number of whole lines they took and the
// first other byte, left unread (0 at the end of the file).
func skipBlank(br *bufio.Reader) (lines int, first byte, err error) {
	bom := []byte("\ufeff")
	for {
		if b, _ := br.Peek(len(bom)); bytes.Equal(b, bom) {
			br.Discard(len(bom))
			continue
		}
		b, err := br.Peek(1)
		if err == io.EOF {
			return lines, 0, nil
		}
		if err != nil {
			return lines, 0, err
		}
		switch b[0] {
		case '\n':
			lines++
		case ' ', '\t', '\r':
		default:
			return lines, b[0], nil
		}
		br.Discard(1)
	}
}

// jsonlEntry is one line of a JSONL dataset. Unknown fields are allowed
// (datasets carry ids and metadata); the known ones are checked.
type jsonlEntry struct {
	Prompt       *string          `json:"prompt"`
	Messages     *json.RawMessage `json:"messages"`
	MaxTokens    *json.RawMessage `json:"max_tokens"`
	OutputTokens *json.RawMessage `json:"output_tokens"`
	OffsetMS     *json.RawMessage `json:"offset_ms"`
}

// number reads a numeric field; a value of another JSON type is an error
// naming the field and the type.
func number(field string, raw json.RawMessage) (json.Number, error) {
	var n json.Number
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return n, fmt.Errorf("%s: must be a number", field)
	}
	switch x := v.(type) {
	case json.Number:
		return x, nil
	case string:
		return n, fmt.Errorf("%s: must be a number, got string", field)
	case bool:
		return n, fmt.Errorf("%s: must be a number, got bool", field)
	case nil:
		return n, fmt.Errorf("%s: must be a number, got null", field)
	default:
		return n, fmt.Errorf("%s: must be a number, got %T", field, v)
	}
}

// parseJSONL reads JSONL entries from r, whose first line is line skipped
// + 1 of the file.
func (ds *Dataset) parseJSONL(r io.Reader, skipped, maxEntries int) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxDatasetLineBytes)
	line, timed := skipped, 0
	for sc.Scan() {
		line++
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		where := fmt.Sprintf("%s:%d", ds.Path, line)
		if len(ds.Entries) == maxEntries {
			return fmt.Errorf("%s: more than %d entries (the most a dataset may have)", where, maxEntries)
		}
		e, err := parseJSONLEntry(raw)
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		e.Where = where
		if e.Messages != nil {
			ds.HasMessages = true
		}
		if e.OutputTokens == 0 {
			if ds.MissingOutput == 0 {
				ds.FirstMissingOutput = where
			}
			ds.MissingOutput++
		}
		if e.Offset >= 0 {
			timed++
		} else {
			e.Offset = 0
		}
		ds.Entries = append(ds.Entries, e)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("%s:%d: line longer than %d bytes", ds.Path, line+1, MaxDatasetLineBytes)
		}
		return fmt.Errorf("dataset %s: %w", ds.Path, err)
	}
	switch {
	case timed == len(ds.Entries) && timed > 0:
		ds.Timed = true
	case timed > 0:
		return fmt.Errorf("dataset %s: offset_ms: %d of %d entries have it: give it on every line or on none", ds.Path, timed, len(ds.Entries))
	}
	return nil
}

// parseJSONLEntry checks one JSONL object; Offset is -1 when the entry has
// no offset_ms.
func parseJSONLEntry(raw []byte) (DatasetEntry, error) {
	e := DatasetEntry{Offset: -1}
	if raw[0] != '{' {
		return e, errors.New("not a JSON object")
	}
	var j jsonlEntry
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&j); err != nil {
		return e, jsonFieldError(err)
	}
	if dec.More() {
		return e, errors.New("more than one JSON value on the line")
	}
	switch {
	case j.Prompt != nil && j.Messages != nil:
		return e, errors.New("give prompt or messages, not both")
	case j.Prompt == nil && j.Messages == nil:
		return e, errors.New("prompt or messages: required")
	case j.Prompt != nil:
		if strings.TrimSpace(*j.Prompt) == "" {
			return e, errors.New("prompt: must not be empty")
		}
		e.Prompt = *j.Prompt
	default:
		msgs, err := parseMessages(*j.Messages)
		if err != nil {
			return e, err
		}
		e.Messages = msgs
	}
	if j.MaxTokens != nil && j.OutputTokens != nil {
		return e, errors.New("give max_tokens or output_tokens, not both")
	}
	for _, f := range []struct {
		name string
		v    *json.RawMessage
	}{{"max_tokens", j.MaxTokens}, {"output_tokens", j.OutputTokens}} {
		if f.v == nil {
			continue
		}
		num, err := number(f.name, *f.v)
		if err != nil {
			return e, err
		}
		n, err := num.Int64()
		if err != nil || n < 1 || n > MaxLength {
			return e, fmt.Errorf("%s: must be an integer in [1, %d], got %s", f.name, MaxLength, num.String())
		}
		e.OutputTokens = int(n)
	}
	if j.OffsetMS != nil {
		num, err := number("offset_ms", *j.OffsetMS)
		if err != nil {
			return e, err
		}
		ms, err := num.Float64()
		if err != nil || !(ms >= 0) || ms > float64(maxOffset/time.Millisecond) {
			return e, fmt.Errorf("offset_ms: must be a number of milliseconds in [0, %d], got %s", maxOffset/time.Millisecond, num.String())
		}
		e.Offset = time.Duration(ms * float64(time.Millisecond))
	}
	return e, nil
}

// maxOffset bounds an entry's offset_ms: 30 days.
const maxOffset = 30 * 24 * time.Hour

// parseMessages checks a messages array.
func parseMessages(raw json.RawMessage) ([]Message, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || items == nil {
		return nil, errors.New("messages: must be an array of {\"role\", \"content\"} objects")
	}
	if len(items) == 0 {
		return nil, errors.New("messages: must not be empty")
	}
	if len(items) > MaxDatasetMessages {
		return nil, fmt.Errorf("messages: %d messages, more than %d", len(items), MaxDatasetMessages)
	}
	out := make([]Message, len(items))
	for i, it := range items {
		var m struct {
			Role    *string `json:"role"`
			Content *string `json:"content"`
		}
		if err := json.Unmarshal(it, &m); err != nil {
			if jerr := jsonFieldError(err); strings.Contains(jerr.Error(), ": must be") {
				return nil, fmt.Errorf("messages[%d].%w", i, jerr)
			}
			return nil, fmt.Errorf("messages[%d]: must be a {\"role\", \"content\"} object", i)
		}
		switch {
		case m.Role == nil:
			return nil, fmt.Errorf("messages[%d].role: required", i)
		case !datasetRoles[*m.Role]:
			return nil, fmt.Errorf("messages[%d].role: must be system, developer, user, assistant or tool, got %q", i, *m.Role)
		case m.Content == nil:
			return nil, fmt.Errorf("messages[%d].content: required (a string)", i)
		}
		out[i] = Message{Role: *m.Role, Content: *m.Content}
	}
	return out, nil
}

// jsonFieldError turns a decoding error into "field: must be a T, got U"
// where it names a field, else "not valid JSON: ...".
func jsonFieldError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		want := te.Type.String()
		switch want {
		case "string", "*string":
			want = "a string"
		case "json.Number", "*json.Number":
			want = "a number"
		default:
			want = "a " + strings.TrimPrefix(want, "*")
		}
		return fmt.Errorf("%s: must be %s, got %s", te.Field, want, te.Value)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("not valid JSON: %s", se.Error())
	}
	return fmt.Errorf("not valid JSON: %w", err)
}

// shareGPTEntry is one element of a ShareGPT array.
type shareGPTEntry struct {
	Conversations *[]struct {
		From  *string `json:"from"`
		Value *string `json:"value"`
	} `json:"conversations"`
}

// ShareGPT human roles: the prompt is the first turn from one of them.
var shareGPTHuman = map[string]bool{"human": true, "user": true}

func (ds *Dataset) parseShareGPT(b []byte, maxEntries int) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return fmt.Errorf("dataset %s: a ShareGPT file is one JSON array of {\"conversations\": [...]} objects", ds.Path)
	}
	for i := 0; dec.More(); i++ {
		where := fmt.Sprintf("%s: entry %d", ds.Path, i)
		if i >= maxEntries {
			return fmt.Errorf("%s: more than %d entries (the most a dataset may have)", where, maxEntries)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("%s: %w", where, jsonFieldError(err))
		}
		if len(raw) == 0 || raw[0] != '{' {
			return fmt.Errorf("%s: not a JSON object", where)
		}
		var e shareGPTEntry
		if err := json.Unmarshal(raw, &e); err != nil {
			return fmt.Errorf("%s: %w", where, shareGPTFieldError(err))
		}
		// Rule 1 (vLLM): entries without at least two turns are left out.
		if e.Conversations == nil || len(*e.Conversations) < 2 {
			ds.Skipped++
			continue
		}
		turns := *e.Conversations
		prompt := -1
		for j, t := range turns {
			switch {
			case t.From == nil:
				return fmt.Errorf("%s: conversations[%d].from: required", where, j)
			case t.Value == nil:
				return fmt.Errorf("%s: conversations[%d].value: required (a string)", where, j)
			}
			if prompt < 0 && shareGPTHuman[*t.From] {
				prompt = j
			}
		}
		// Rule 2: the prompt is the first human turn and the output the
		// reply that follows it; an entry without both is left out.
		if prompt < 0 || prompt+1 >= len(turns) || shareGPTHuman[*turns[prompt+1].From] ||
			strings.TrimSpace(*turns[prompt].Value) == "" {
			ds.Skipped++
			continue
		}
		ds.Entries = append(ds.Entries, DatasetEntry{Where: where, Prompt: *turns[prompt].Value, Reply: *turns[prompt+1].Value})
	}
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("dataset %s: after entry %d: %w", ds.Path, len(ds.Entries)+ds.Skipped, jsonFieldError(err))
	}
	if dec.More() {
		return fmt.Errorf("dataset %s: data after the closing ']'", ds.Path)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("dataset %s: data after the closing ']'", ds.Path)
	}
	return nil
}

// shareGPTFieldError names the ShareGPT field of a decoding error.
func shareGPTFieldError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		f := te.Field
		f = strings.Replace(f, "conversations.", "conversations[].", 1)
		return fmt.Errorf("%s: must be %s, got %s", f, map[bool]string{true: "a string", false: `an array of {"from", "value"} objects`}[strings.Contains(f, ".")], te.Value)
	}
	return jsonFieldError(err)
}
