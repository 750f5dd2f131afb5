package workload

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

// Schema is a compiled JSON schema of a json_schema feature. It is
// immutable and safe for concurrent use.
type Schema struct {
	r    *jsonschema.Resolved
	root *snode // the graph Check's budget walks
}

// schemaURL is the base URI of a compiled schema: a relative $ref to
// another document resolves against it and is refused by name.
const schemaURL = "https://llmprobe.invalid/workload/schema.json"

// The drafts a schema may name in $schema. Without one it is 2020-12, as
// vLLM's structured-output backends read it.
const (
	draft2020 = "https://json-schema.org/draft/2020-12/schema"
	draft07   = "http://json-schema.org/draft-07/schema"
)

// metaFS holds the drafts' meta-schemas as json-schema.org publishes them.
//
//go:embed metaschema
var metaFS embed.FS

// metaschemas are the resolved meta-schemas, built on the first schema
// compiled (not at program start: a process without a json_schema feature
// never pays for them).
var metaschemas = sync.OnceValues(func() (map[string]*jsonschema.Resolved, error) {
	load := func(uri *url.URL) (*jsonschema.Schema, error) {
		u := *uri
		u.Fragment = ""
		var path string
		switch s := u.String(); {
		case strings.HasPrefix(s, "https://json-schema.org/draft/2020-12/"):
			path = "metaschema/draft2020-12/" + strings.TrimPrefix(s, "https://json-schema.org/draft/2020-12/") + ".json"
		case s == draft07 || s == "https://json-schema.org/draft-07/schema":
			path = "metaschema/draft-07/schema.json"
		default:
			return nil, fmt.Errorf("no meta-schema %s", s)
		}
		b, err := metaFS.ReadFile(path)
		if err != nil {
			return nil, err
		}
		var sch jsonschema.Schema
		if err := json.Unmarshal(b, &sch); err != nil {
			return nil, fmt.Errorf("meta-schema %s: %w", path, err)
		}
		return &sch, nil
	}
	out := map[string]*jsonschema.Resolved{}
	for _, d := range []string{draft2020, draft07} {
		u, _ := url.Parse(d)
		sch, err := load(u)
		if err != nil {
			return nil, err
		}
		r, err := sch.Resolve(&jsonschema.ResolveOptions{Loader: load})
		if err != nil {
			return nil, fmt.Errorf("meta-schema %s: %w", d, err)
		}
		out[d] = r
	}
	return out, nil
})

// refuseRemote refuses every $ref to another document: a schema is checked
// on its own, and compiling it never reads a file or the network.
func refuseRemote(uri *url.URL) (*jsonschema.Schema, error) {
	return nil, fmt.Errorf("$ref to another document (%s) is not supported: inline it", uri)
}

// CompileSchema compiles a JSON schema (its JSON text) with
// google/jsonschema-go after checking it against the meta-schema of the
// draft its $schema names: 2020-12 (also when it names none) or draft-07.
// It is the one entry point for every schema llmprobe checks replies
// against (json_schema features, tools' parameters, answer checks): a
// schema nested deeper than MaxSchemaDepth is refused, and so are
// references to other documents and a $ref cycle that stays on the same
// value (checkSchemaRecursion: validating against it would never end).
// References are resolved against the base URIs $id sets before that
// check (resolveSchemaRefs), and the validator is given the resolved
// document, so it cannot follow a reference the check did not see.
func CompileSchema(text []byte) (*Schema, error) { return compileSchema(text, true) }

// compileSchema is CompileSchema; a test turns the recursion check off to
// see that Check's budget alone keeps a cyclic schema's check bounded.
func compileSchema(text []byte, checkRecursion bool) (*Schema, error) {
	doc, err := decodeOne(text)
	if err != nil {
		return nil, err
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, errors.New("must be a JSON object")
	}
	if err := checkDepth(doc, 0); err != nil {
		return nil, err
	}
	draft := draft2020
	if v, ok := obj["$schema"]; ok {
		s, _ := v.(string)
		switch strings.TrimSuffix(strings.Replace(s, "https://", "http://", 1), "#") {
		case "http://json-schema.org/draft/2020-12/schema":
		case draft07:
			draft = draft07
		default:
			return nil, fmt.Errorf("$schema %q is not supported: llmprobe checks draft 2020-12 (the default) and draft-07", v)
		}
	}
	metas, err := metaschemas()
	if err != nil {
		return nil, fmt.Errorf("meta-schemas: %w", err) // a build defect, not the schema's
	}
	if err := metas[draft].Validate(doc); err != nil {
		return nil, fmt.Errorf("invalid schema: not valid against the %s meta-schema: %s", draftName(draft), shortErr(leafErr(err)))
	}
	root, nodes, resolved, err := resolveSchemaRefs(obj, draft)
	if err != nil {
		return nil, err
	}
	if checkRecursion {
		if err := checkSchemaRecursion(nodes); err != nil {
			return nil, err
		}
	}
	rtext, err := json.Marshal(resolved)
	if err != nil {
		return nil, fmt.Errorf("invalid schema: %w", err)
	}
	var sch jsonschema.Schema
	if err := json.Unmarshal(rtext, &sch); err != nil {
		return nil, fmt.Errorf("invalid schema: %w", err)
	}
	r, err := sch.Resolve(&jsonschema.ResolveOptions{BaseURI: schemaURL, Loader: refuseRemote})
	if err != nil {
		return nil, fmt.Errorf("invalid schema: %s", shortErr(err))
	}
	return &Schema{r: r, root: root}, nil
}

// draftName is how errors name a draft.
func draftName(d string) string {
	if d == draft07 {
		return "draft-07"
	}
	return "draft 2020-12"
}

// Check parses text as one JSON value and validates it against the schema.
// The error is short: for text that is not JSON, the parser's reason; for
// a value that does not conform, the violation found; for a check that
// would pass MaxCheckCost or MaxCheckDepth, that it is too costly (the
// validator is not run). It may quote a bounded part of the text.
func (s *Schema) Check(text []byte) error {
	v, err := decodeOne(text)
	if err != nil {
		return err
	}
	if err := checkCost(s.root, sizeTree(v)); err != nil {
		return err
	}
	if err := s.r.Validate(v); err != nil {
		return fmt.Errorf("does not match the schema: %s", strings.TrimPrefix(shortErr(err), "validating root: "))
	}
	return nil
}

// decodeOne parses text as exactly one JSON value.
func decodeOne(text []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(text))
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("not JSON: more than one value")
	}
	return v, nil
}

// validatingRE is the library's prefix of each level of a validation
// error ("validating /properties/a: ").
var validatingRE = regexp.MustCompile(`validating \S+: `)

// leafErr is the innermost violation of a meta-schema validation error:
// the path through the meta-schema before it says nothing about the
// schema being checked. Of an anyOf, the first branch's.
func leafErr(err error) error {
	s := err.Error()
	// anyOf lists its branches' errors a line each after its own: the
	// first branch's is the one to show.
	if lines := strings.SplitN(s, "\n", 3); len(lines) > 1 {
		s = lines[1]
	}
	if loc := validatingRE.FindAllStringIndex(s, -1); len(loc) > 0 {
		return errors.New(s[loc[len(loc)-1][1]:])
	}
	return err
}

// maxErr bounds an error message (a validation error can quote the value).
const maxErr = 300

// shortErr is err's message on one line, without the library's package
// prefix, and at most maxErr bytes.
func shortErr(err error) string {
	s := strings.Join(strings.Fields(err.Error()), " ")
	s = strings.ReplaceAll(s, "jsonschema.Schema: ", "")
	if len(s) > maxErr {
		s = strings.ToValidUTF8(s[:maxErr], "") + "…"
	}
	return s
}
