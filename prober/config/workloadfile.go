package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/llmprobe/llmprobe/prober/workload"
)

// LoadWorkloadFile reads a workload file (sweep --workload): a
// workload.Spec in YAML, unknown keys refused, at most MaxConfigFileBytes,
// with its request features' schema files read relative to the file and
// its request section validated. Errors name the file, and the line and
// field at fault where the file holds them ("wl.yml:7:
// request.features[1].share: must be in (0, 1], got 1.5").
func LoadWorkloadFile(path string) (workload.Spec, error) {
	var w workload.Spec
	b, err := ReadFile(path, MaxConfigFileBytes)
	if te, ok := errors.AsType[*TooLargeError](err); ok {
		return w, fmt.Errorf("%s: the file is larger than %v, the cap on a workload file", path, ByteSize(te.Limit))
	}
	if err != nil {
		return w, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&w); err != nil && !errors.Is(err, io.EOF) {
		return w, fmt.Errorf("%s: %w", path, err)
	}
	if w.Request != nil {
		if err := w.Request.ReadSchemaFiles(filepath.Dir(path)); err != nil {
			return w, requestError(path, b, err)
		}
		if err := w.Request.Validate(); err != nil {
			return w, requestError(path, b, err)
		}
	}
	return w, nil
}

// requestError names the workload file, the line of the request field at
// fault (when the file's YAML holds it) and the field.
func requestError(file string, b []byte, err error) error {
	fe, ok := errors.AsType[*workload.FieldError](err)
	if !ok {
		return fmt.Errorf("%s: request: %w", file, err)
	}
	path := "request." + fe.Field
	var doc yaml.Node
	if yaml.Unmarshal(b, &doc) == nil {
		if line := yamlLine(&doc, path); line > 0 {
			return fmt.Errorf("%s:%d: %s: %w", file, line, path, fe.Err)
		}
	}
	return fmt.Errorf("%s: %s: %w", file, path, fe.Err)
}

// yamlLine returns the line of the node at path ("a.b[2].c") in a YAML
// document, or of the deepest node on the path that exists; 0 when none.
func yamlLine(n *yaml.Node, path string) int {
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := 0
	for part := range strings.SplitSeq(path, ".") {
		key, rest, _ := strings.Cut(part, "[")
		if n.Kind != yaml.MappingNode {
			return line
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				next, line = n.Content[i+1], n.Content[i].Line
			}
		}
		if next == nil {
			return line
		}
		n = next
		for rest != "" {
			idx, more, _ := strings.Cut(rest, "]")
			rest = strings.TrimPrefix(more, "[")
			i, err := strconv.Atoi(idx)
			if err != nil || n.Kind != yaml.SequenceNode || i >= len(n.Content) {
				return line
			}
			n, line = n.Content[i], n.Content[i].Line
		}
	}
	return line
}
