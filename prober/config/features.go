package config

import (
	"errors"
	"fmt"

	"github.com/llmprobe/llmprobe/prober/workload"
)

// readSchemaFiles reads the schema_file of every json_schema request
// feature of the target's probes (relative to the config file's
// directory), so that Validate compiles the schemas at load.
func (t *TargetConfig) readSchemaFiles(dir string) error {
	var l problems
	for i := range t.Probes {
		err := t.Probes[i].Workload.Request.ReadSchemaFiles(dir)
		l.add(fmt.Sprintf("probes[%d].workload.request", i), workloadProblem(err))
	}
	return l.err()
}

// workloadProblem turns a *workload.FieldError into a problem of its field
// (so that it is located on its line); other errors pass unchanged.
func workloadProblem(err error) error {
	if fe, ok := errors.AsType[*workload.FieldError](err); ok {
		return &fieldError{Key: fe.Field, Err: fe.Err}
	}
	return err
}
