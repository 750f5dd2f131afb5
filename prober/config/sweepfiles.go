package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/llmprobe/llmprobe/prober/answer"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// The files a scheduled sweep names — workload.trace, workload.dataset,
// the schema_file of a json_schema feature and an answer_checks set — are
// read at load, relative to the config file's directory, so that a bad file
// fails the load (file:line: targets[i].sweeps[j].workload.trace: FILE:LINE:
// field: why) and a changed file changes the schedule's digest (the SHA-256
// of a trace and of a dataset are in the spec, that of a check set in
// AnswerChecksSHA256). The sweep API reads none of them: a request body
// naming files on the daemon's host would be a file-read oracle
// (CheckNoFiles).

// errProbeTrace is the problem of a probe's workload.trace.
var errProbeTrace = errors.New("a probe cannot replay a trace: a probe runs without end and a trace replay is a timed " +
	"experiment with one; schedule it as a sweep (targets[].sweeps[] with workload.trace)")

// resolvePath returns path relative to dir (the config file's directory)
// unless it is absolute or dir is empty.
func resolvePath(dir, path string) string {
	if !filepath.IsAbs(path) && dir != "" {
		return filepath.Join(dir, path)
	}
	return path
}

// cloneWorkload copies w deep enough that reading its schema files or
// setting a file's digest leaves the spec it came from unchanged.
func cloneWorkload(w *workload.Spec) *workload.Spec {
	c := *w
	if w.Request != nil {
		r := *w.Request
		r.Features = append([]workload.RequestFeature(nil), w.Request.Features...)
		c.Request = &r
	}
	if w.Dataset != nil {
		d := *w.Dataset
		c.Dataset = &d
	}
	if w.Trace != nil {
		tr := *w.Trace
		c.Trace = &tr
	}
	return &c
}

// readSweepFiles reads, for every sweep of the target, the schema files of
// its request features and its trace (kept for sweep.FromSpec), and resolves
// its dataset's path; relative paths are relative to dir. Called before
// Validate, which builds each sweep's sweep.Config.
func (t *TargetConfig) readSweepFiles(dir string) error {
	var l problems
	for j := range t.Sweeps {
		s := &t.Sweeps[j]
		l.add(fmt.Sprintf("sweeps[%d]", j), s.readAnswerChecks(dir))
		if s.Workload == nil {
			continue
		}
		at := fmt.Sprintf("sweeps[%d].workload", j)
		w := cloneWorkload(s.Workload)
		s.Workload = w
		if w.Dataset != nil && w.Dataset.Path != "" {
			w.Dataset.Path = resolvePath(dir, w.Dataset.Path)
		}
		if err := w.Request.ReadSchemaFiles(dir); err != nil {
			l.add(at+".request", workloadProblem(err))
		}
		if w.Trace == nil || w.Trace.Validate() != nil { // Validate reports a bad spec
			continue
		}
		path := resolvePath(dir, w.Trace.Path)
		tr, err := workload.LoadTrace(path, w.Trace.Options())
		if err != nil {
			msg := strings.TrimPrefix(err.Error(), "trace: ")
			l.add(at+".trace", errors.New(strings.TrimPrefix(msg, "trace ")))
			continue
		}
		w.Trace.Path, w.Trace.SHA256 = path, tr.SHA256
		s.trace = tr
	}
	return l.err()
}

// loadSweepDatasets reads and checks the dataset of every sweep of the
// target that has one (its path resolved by readSweepFiles) and records
// its SHA-256 in the spec. The entries are not kept: the sweep reads the
// file again when it runs.
func (t *TargetConfig) loadSweepDatasets() error {
	var l problems
	for j := range t.Sweeps {
		w := t.Sweeps[j].Workload
		if w == nil || w.Dataset == nil {
			continue
		}
		if _, err := t.loadDataset(w, 1); err != nil {
			l.add(fmt.Sprintf("sweeps[%d].workload.dataset", j), err)
		}
	}
	return l.err()
}

// CheckNoFiles refuses a spec that names a file — a dataset, a trace or a
// json_schema feature's schema_file in its workload, an answer_checks set
// other than builtin — with an error naming the key (AsSpecError makes it
// a *SpecError): the sweep API calls it on every request body, since the
// daemon must not read files named by a client (a file-read oracle). A
// config file's scheduled sweeps read them at load instead. Inline schemas
// and the builtin check set pass.
func (s SweepSpec) CheckNoFiles() error {
	const why = "the sweep API reads no file named in a request body: %s is accepted only in a scheduled sweep of the config file (targets[].sweeps[])%s"
	if checks, _ := s.Text("answer_checks"); checks != "" && checks != answer.BuiltinName {
		return errf("answer_checks", why, "a check set file", "; the API takes "+answer.BuiltinName)
	}
	w := s.Workload
	if w == nil {
		return nil
	}
	switch {
	case w.Dataset != nil:
		return errf("workload.dataset", why, "a dataset", "")
	case w.Trace != nil:
		return errf("workload.trace", why, "a trace", "")
	}
	if w.Request != nil {
		for i, f := range w.Request.Features {
			if f.SchemaFile != "" {
				return errf(fmt.Sprintf("workload.request.features[%d].schema_file", i), why, "a schema file", "; give the schema inline (schema)")
			}
		}
	}
	return nil
}

// readAnswerChecks loads the check-set file of the spec's answer_checks
// (relative to dir unless absolute; builtin is no file) and keeps it for
// sweep.FromSpec, the path resolved.
func (s *SweepSpec) readAnswerChecks(dir string) error {
	checks, _ := s.Text("answer_checks")
	if checks == "" || checks == answer.BuiltinName {
		return nil
	}
	path := resolvePath(dir, checks)
	set, err := answer.Load(path)
	if err != nil {
		return errf("answer_checks", "%s", strings.TrimPrefix(err.Error(), "answer check set: "))
	}
	s.setText("answer_checks", path)
	s.answers = set
	return nil
}
