package config

import (
	"errors"
	"fmt"
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
		withPath := *d // the spec's copy: the path resolved, the file's SHA-256
		withPath.Path = resolvePath(dir, d.Path)
		p.Workload.Dataset = &withPath
		ds, err := t.loadDataset(&p.Workload, p.Seed)
		if err != nil {
			l.add(fmt.Sprintf("probes[%d].workload.dataset", i), err)
			continue
		}
		p.dataset = ds
	}
	return l.err()
}

// loadDataset reads and checks the dataset of w (its path resolved), a
// probe's or a scheduled sweep's: entries of chat messages need a target
// API that takes conversations, and w must draw from it (seed, the
// probe's). It records the file's SHA-256 in w.Dataset.
func (t *TargetConfig) loadDataset(w *workload.Spec, seed uint64) (*workload.Dataset, error) {
	ds, err := workload.LoadDataset(w.Dataset.Path, workload.DatasetOptions{Format: w.Dataset.Format})
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "dataset: ")
		return nil, errors.New(strings.TrimPrefix(msg, "dataset "))
	}
	if ds.HasMessages && !t.api().Conversations {
		return nil, fmt.Errorf("%s has messages entries (chat conversations): they need api: %s", w.Dataset.Path,
			client.NamesWith(client.WithConversations, "or"))
	}
	w.Dataset.SHA256 = ds.SHA256
	if _, err := workload.NewDatasetSource(ds, *w, seed); err != nil {
		return nil, err
	}
	return ds, nil
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
