package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// A probe's workload.dataset: the file is read and checked at load (so a
// bad file fails the load, with the file and line of the dataset in the
// message), once; the probe samples the loaded entries.

// Dataset returns the probe's dataset as loaded with the config (nil
// without workload.dataset, or for a config not loaded from a file).
func (p ProbeConfig) Dataset() *workload.Dataset { return p.dataset }

// loadDatasets loads the dataset of every probe that has one: its path
// relative to dir (the config file's directory) unless absolute, as
// api_key_file. It records the file's SHA-256 in the spec, so that a
// changed file changes the probe's RestartKey and a reload restarts it.
func (t *TargetConfig) loadDatasets(dir string) error {
	var l problems
	for i := range t.Probes {
		p := &t.Probes[i]
		d := p.Workload.Dataset
		if d == nil {
			continue
		}
		path := d.Path
		if !filepath.IsAbs(path) && dir != "" {
			path = filepath.Join(dir, path)
		}
		field := fmt.Sprintf("probes[%d].workload.dataset", i)
		ds, err := workload.LoadDataset(path, workload.DatasetOptions{Format: d.Format})
		if err != nil {
			msg := strings.TrimPrefix(err.Error(), "dataset: ")
			l.add(field, errors.New(strings.TrimPrefix(msg, "dataset ")))
			continue
		}
		if ds.HasMessages && !t.api().Conversations {
			l.add(field, fmt.Errorf("%s has messages entries (chat conversations): they need api: %s", path,
				client.NamesWith(client.WithConversations, "or")))
			continue
		}
		withSum := *d
		withSum.Path, withSum.SHA256 = path, ds.SHA256
		p.Workload.Dataset = &withSum
		if _, err := workload.NewDatasetSource(ds, p.Workload, p.Seed); err != nil {
			l.add(field, err)
			continue
		}
		p.dataset = ds
	}
	return l.err()
}

// validateDatasetWorkload checks a workload with a dataset: the spec's own
// rules, and a sampling a probe can run forever with.
func validateDatasetWorkload(w workload.Spec) error {
	var l problems
	if err := w.Validate(); err != nil {
		msg := err.Error()
		if rest, ok := strings.CutPrefix(msg, "dataset: "); ok {
			l.add("workload.dataset", errors.New(rest))
		} else if field, rest, ok := strings.Cut(msg, ": "); ok && !strings.Contains(field, " ") {
			l.add("workload."+field, errors.New(rest))
		} else {
			l.add("workload", err)
		}
	}
	if w.Dataset.Sampling == workload.SamplingShuffle {
		l.add("workload.dataset", errors.New("sampling shuffle (without replacement) ends when the entries do, and a probe "+
			"runs without end: use cycle, random or sequential"))
	}
	return l.err()
}
