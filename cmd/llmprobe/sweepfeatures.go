package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/llmprobe/llmprobe/prober/workload"
)

// applyRequestFlags reads the schema files of the workload's request
// features (relative to the workload file), applies the request flags over
// the file's request section and validates it, so that every problem names
// its flag, or the workload file with its line, before anything is sent.
func applyRequestFlags(f *sweepFlags, w *workload.Spec, workloadFile string) error {
	if w.Request != nil && workloadFile != "" {
		if err := w.Request.ReadSchemaFiles(filepath.Dir(workloadFile)); err != nil {
			return workloadFileError(workloadFile, err)
		}
		if err := w.Request.Validate(); err != nil {
			return workloadFileError(workloadFile, err)
		}
	}
	r := w.Request
	if r == nil {
		r = &workload.Request{}
	} else {
		c := *r
		r = &c
	}
	set := false
	if f.isSet("temperature") {
		v := f.flt("temperature")
		r.Temperature, set = &v, true
	}
	if f.isSet("top-p") {
		v := f.flt("top-p")
		r.TopP, set = &v, true
	}
	if f.isSet("sampling-seed") {
		v := f.i64("sampling-seed")
		r.Seed, set = &v, true
	}
	if stop := f.strs("stop"); len(stop) > 0 {
		r.Stop, set = stop, true
	}
	if n := f.num("min-tokens"); n != 0 {
		r.MinTokens, set = n, true
	}
	if body := f.str("extra-body"); body != "" {
		var m map[string]any
		if err := json.Unmarshal([]byte(body), &m); err != nil || m == nil {
			if err == nil {
				err = errors.New("null")
			}
			return &flagError{flag: "extra-body", err: fmt.Errorf("must be a JSON object: %w", err)}
		}
		r.ExtraBody, set = m, true
	}
	if !set {
		return nil
	}
	if err := r.Validate(); err != nil {
		fe, _ := errors.AsType[*workload.FieldError](err)
		flag := "workload"
		if fe != nil {
			field, _, _ := strings.Cut(fe.Field, ".")
			field, _, _ = strings.Cut(field, "[")
			if fl, ok := map[string]string{"temperature": "temperature", "top_p": "top-p", "seed": "sampling-seed",
				"stop": "stop", "min_tokens": "min-tokens", "extra_body": "extra-body"}[field]; ok {
				return &flagError{flag: fl, err: err}
			}
		}
		return &flagError{flag: flag, err: err}
	}
	w.Request = r
	return nil
}

// workloadFileError names the workload file, the line of the field at
// fault (when the file's YAML holds it) and the field.
func workloadFileError(file string, err error) error {
	fe, ok := errors.AsType[*workload.FieldError](err)
	if !ok {
		return &flagError{flag: "workload", err: fmt.Errorf("%s: request: %w", file, err)}
	}
	path := "request." + fe.Field
	if b, rerr := readCapped(file, maxWorkloadFileBytes, "a workload file"); rerr == nil {
		var doc yaml.Node
		if yaml.Unmarshal(b, &doc) == nil {
			if line := yamlLine(&doc, path); line > 0 {
				return &flagError{flag: "workload", err: fmt.Errorf("%s:%d: %s: %w", file, line, path, fe.Err)}
			}
		}
	}
	return &flagError{flag: "workload", err: fmt.Errorf("%s: %s: %w", file, path, fe.Err)}
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
