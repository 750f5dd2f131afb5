package config

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/llmprobe/llmprobe/prober/slo"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// Error is one configuration problem: the file, the line in it (0 when
// unknown), the field path such as targets[0].probes[1].rate ("" when
// unknown) and why. Its message is
//
//	<file>:<line>: <field path>: <why>
//
// with ":<line>" left out when the line is unknown and "<field path>: " when
// the path is. Messages never contain an API key.
type Error struct {
	File string
	Line int
	Path string
	Err  error
}

// Error formats the problem as <file>:<line>: <field path>: <why>.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":")
		b.WriteString(strconv.Itoa(e.Line))
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Errors is several configuration problems of one file, in file order (by
// line; problems without a line first). Load and Parse return it when a file
// has more than one problem, and a plain *Error when it has exactly one, so
// errors.As(err, &e) with e a *Error finds the first problem either way.
type Errors []*Error

// Error formats each problem as *Error does, one per line.
func (es Errors) Error() string {
	var b strings.Builder
	for i, e := range es {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// Unwrap returns the problems, for errors.Is and errors.As.
func (es Errors) Unwrap() []error {
	errs := make([]error, len(es))
	for i, e := range es {
		errs[i] = e
	}
	return errs
}

// errorOf returns nil for no problems, the *Error for one, Errors for more.
func errorOf(es []*Error) error {
	switch len(es) {
	case 0:
		return nil
	case 1:
		return es[0]
	}
	return Errors(es)
}

// fieldError is a validation error of one field, a sweep spec's key's
// error too: its Key is the path relative to the value whose Validate
// method returned it and grows as it is returned up.
type fieldError = SpecError

// errf returns a fieldError for the field at path.
func errf(path, format string, args ...any) error {
	return &fieldError{Key: path, Err: fmt.Errorf(format, args...)}
}

// under prefixes the path of err (a fieldError or any error, or several
// joined) with prefix, e.g. under("probes[1]", rate error) -> probes[1].rate.
func under(prefix string, err error) error {
	if err == nil {
		return nil
	}
	var l problems
	l.add(prefix, err)
	return l.err()
}

// flatten splits err into its fieldErrors: joined errors (Unwrap() []error)
// are split, a fieldError wrapped in another error is unwrapped, and any
// other error is a fieldError with an empty path.
func flatten(err error) []*fieldError {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []*fieldError
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	var fe *fieldError
	if errors.As(err, &fe) {
		return []*fieldError{fe}
	}
	return []*fieldError{{Err: err}}
}

// problems collects the validation problems of a value, at most one per
// field path (the first: a later one on the same field is a consequence).
type problems []*fieldError

// add records err (nil, one problem or several joined) under prefix and
// reports whether it held any problem.
func (l *problems) add(prefix string, err error) bool {
	if err == nil {
		return false
	}
	for _, fe := range flatten(err) {
		p := joinPath(prefix, fe.Key)
		if !l.has(p) {
			*l = append(*l, &fieldError{Key: p, Err: fe.Err})
		}
	}
	return true
}

// has reports whether a problem of the field at path was recorded.
func (l problems) has(path string) bool {
	for _, fe := range l {
		if fe.Key == path {
			return true
		}
	}
	return false
}

// err returns nil, the one problem, or every problem joined.
func (l problems) err() error {
	switch len(l) {
	case 0:
		return nil
	case 1:
		return l[0]
	}
	errs := make([]error, len(l))
	for i, fe := range l {
		errs[i] = fe
	}
	return errors.Join(errs...)
}

func joinPath(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	case strings.HasPrefix(b, "["):
		return a + b
	}
	return a + "." + b
}

// nodeIndex maps field paths of a parsed YAML document to their lines, to
// locate validation errors and name the field of yaml's own errors.
type nodeIndex struct {
	entries []indexEntry // document order
	byPath  map[string]int
}

type indexEntry struct {
	path     string
	keyLine  int        // line of the key, or of the sequence item
	value    *yaml.Node // the value node
	lastName string     // last path segment when it is a key ("" for items)
}

func newNodeIndex(data []byte) *nodeIndex {
	idx := &nodeIndex{byPath: map[string]int{}}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 {
		return idx
	}
	idx.walk("", doc.Content[0])
	return idx
}

func (idx *nodeIndex) add(path string, line int, v *yaml.Node, name string) {
	if _, dup := idx.byPath[path]; !dup {
		idx.byPath[path] = len(idx.entries)
	}
	idx.entries = append(idx.entries, indexEntry{path: path, keyLine: line, value: v, lastName: name})
}

// walk records the keys and items under n. Aliases are not followed (their
// paths fall back to the nearest recorded parent); merge keys are recorded
// under the mapping that merges them.
func (idx *nodeIndex) walk(path string, n *yaml.Node) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.ShortTag() == "!!merge" {
				continue
			}
			p := joinPath(path, k.Value)
			idx.add(p, k.Line, v, k.Value)
			idx.walk(p, v)
		}
	case yaml.SequenceNode:
		for i, v := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			idx.add(p, v.Line, v, "")
			idx.walk(p, v)
		}
	}
}

// line returns the line of the field at path, or of its nearest recorded
// parent (a missing required key is reported at its mapping), or 0.
func (idx *nodeIndex) line(path string) int {
	for path != "" {
		if i, ok := idx.byPath[path]; ok {
			return idx.entries[i].keyLine
		}
		cut := strings.LastIndexAny(path, ".[")
		if cut < 0 {
			break
		}
		path = path[:cut]
	}
	return 0
}

// yaml's own error messages (go.yaml.in/yaml/v3), rewritten to name the field.
var (
	reLine       = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)
	reUnknown    = regexp.MustCompile(`^field (\S+) not found in type \S+$`)
	reDupKey     = regexp.MustCompile(`^mapping key "(.*)" already defined at line (\d+)$`)
	reCannot     = regexp.MustCompile(`^cannot unmarshal (!!\w+)(?: ` + "`(.*)`" + `)? into (\S+)$`)
	reTruncValue = regexp.MustCompile(`^(.*)\.\.\.$`)
)

// yamlErrors converts an error of yaml's decoder into *Error values for file.
func (idx *nodeIndex) yamlErrors(file string, err error) error {
	var lines []string
	var te *yaml.TypeError
	if errors.As(err, &te) {
		lines = te.Errors
	}
	if len(lines) == 0 {
		lines = []string{err.Error()}
	}
	errs := make([]*Error, 0, len(lines))
	for _, l := range lines {
		errs = append(errs, idx.yamlError(file, l))
	}
	return errorOf(errs)
}

func (idx *nodeIndex) yamlError(file, msg string) *Error {
	m := reLine.FindStringSubmatch(msg)
	if m == nil {
		return &Error{File: file, Err: errors.New(strings.TrimPrefix(msg, "yaml: "))}
	}
	line, _ := strconv.Atoi(m[1])
	msg = m[2]
	if u := reUnknown.FindStringSubmatch(msg); u != nil {
		why := "unknown key"
		if h := keyHint(u[1]); h != "" {
			why += " (" + h + ")"
		}
		if e := idx.find(line, func(e indexEntry) bool { return e.keyLine == line && e.lastName == u[1] }); e != nil {
			return &Error{File: file, Line: line, Path: e.path, Err: errors.New(why)}
		}
		return &Error{File: file, Line: line, Err: fmt.Errorf("%s %q", why, u[1])}
	}
	if d := reDupKey.FindStringSubmatch(msg); d != nil {
		var last *indexEntry
		for i := range idx.entries {
			if e := &idx.entries[i]; e.keyLine == line && e.lastName == d[1] {
				last = e
			}
		}
		err := fmt.Errorf("duplicate key (first defined at line %s)", d[2])
		if last != nil {
			return &Error{File: file, Line: line, Path: last.path, Err: err}
		}
		return &Error{File: file, Line: line, Err: fmt.Errorf("duplicate key %q (first defined at line %s)", d[1], d[2])}
	}
	if c := reCannot.FindStringSubmatch(msg); c != nil {
		tag, shown, into := c[1], c[2], c[3]
		prefix := shown
		if t := reTruncValue.FindStringSubmatch(shown); t != nil {
			prefix = t[1]
		}
		e := idx.find(line, func(e indexEntry) bool {
			v := e.value
			if v.Line != line {
				return false
			}
			switch tag {
			case "!!map":
				return v.Kind == yaml.MappingNode
			case "!!seq":
				return v.Kind == yaml.SequenceNode
			}
			if v.Kind != yaml.ScalarNode {
				return false
			}
			if prefix != shown { // yaml shortened the value
				return strings.HasPrefix(v.Value, prefix)
			}
			return v.Value == shown
		})
		got := describeTag(tag)
		path := ""
		if e != nil {
			path = e.path
			if e.value.Kind == yaml.ScalarNode {
				got = strconv.Quote(e.value.Value)
			}
		} else if shown != "" {
			got = strconv.Quote(shown)
		}
		return &Error{File: file, Line: line, Path: path, Err: fmt.Errorf("want %s, got %s", describeGoType(into), got)}
	}
	// Another message with a line (a syntax error, or an unmarshaler's own
	// error such as an invalid size or SLO): name the field on that line the
	// message starts with ("tpot: invalid duration"), else the outermost one.
	var first, firstValue *indexEntry // first key on the line, first value
	for i := range idx.entries {
		e := &idx.entries[i]
		if e.keyLine != line && e.value.Line != line {
			continue
		}
		if first == nil && e.keyLine == line {
			first = e
		}
		if firstValue == nil {
			firstValue = e
		}
		if e.lastName == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(msg, e.lastName+": "); ok {
			return &Error{File: file, Line: line, Path: e.path, Err: errors.New(rest)}
		}
		if rest, ok := strings.CutPrefix(msg, e.lastName+" "); ok {
			return &Error{File: file, Line: line, Path: e.path, Err: errors.New(rest)}
		}
	}
	if first == nil {
		first = firstValue
	}
	path := ""
	if first != nil {
		path = first.path
	}
	return &Error{File: file, Line: line, Path: path, Err: errors.New(msg)}
}

// find returns the deepest entry on a line that matches; the document order
// puts parents before children, so the last match is the deepest.
func (idx *nodeIndex) find(line int, match func(indexEntry) bool) *indexEntry {
	var found *indexEntry
	for i := range idx.entries {
		e := &idx.entries[i]
		if (e.keyLine == line || e.value.Line == line) && match(*e) {
			found = e
		}
	}
	return found
}

func describeTag(tag string) string {
	switch tag {
	case "!!map":
		return "a mapping"
	case "!!seq":
		return "a list"
	case "!!null":
		return "null"
	}
	return tag
}

// describeGoType names what yaml wanted, from the Go type in its message.
func describeGoType(t string) string {
	switch {
	case t == "time.Duration":
		return "a duration such as 800ms, 30s or 2m"
	case t == "float64" || t == "float32":
		return "a number"
	case strings.HasPrefix(t, "uint"):
		return "a non-negative integer"
	case strings.HasPrefix(t, "int"):
		return "an integer"
	case t == "string":
		return "a string"
	case t == "bool" || t == "*bool":
		return "true or false"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	}
	return "a mapping"
}

// schemaKeys maps every key of the schema to where it belongs, for the hints
// of "unknown key" errors.
var schemaKeys = func() map[string][]string {
	keys := map[string][]string{}
	for _, n := range slo.Names {
		keys[n] = append(keys[n], "an slo")
	}
	for _, o := range []struct {
		v     any
		where string
	}{
		{Config{}, "the top level"}, {GlobalConfig{}, "global"}, {TargetConfig{}, "a target"},
		{ProbeConfig{}, "a probe"}, {workload.Spec{}, "a workload"},
		{workload.LengthSpec{}, "a token length"}, {workload.Choice{}, "a choice"},
	} {
		t := reflect.TypeOf(o.v)
		for i := range t.NumField() {
			if name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); name != "" && name != "-" {
				keys[name] = append(keys[name], o.where)
			}
		}
	}
	return keys
}()

// keyHint says where a key misplaced in the schema belongs, or which key a
// misspelt one probably is (edit distance <= 2 and under half its length).
func keyHint(unknown string) string { return KeyHint(unknown) }

// KeyHint is keyHint with more keys a misspelt one may be (a sweep's, which
// prober/sweep's settings table holds): the hint of an unknown key.
func KeyHint(unknown string, keys ...string) string {
	if where, ok := schemaKeys[unknown]; ok {
		return fmt.Sprintf("%s belongs in %s", unknown, strings.Join(where, " or "))
	}
	best, bestD := "", 3
	for _, k := range append(slices.Collect(maps.Keys(schemaKeys)), keys...) {
		if d := editDistance(unknown, k); d < bestD || d == bestD && best != "" && k < best {
			best, bestD = k, d
		}
	}
	if best == "" || 2*bestD >= len(unknown) {
		return ""
	}
	return "did you mean " + best + "?"
}

// editDistance is the Levenshtein distance of two short ASCII strings.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
