package main

import (
	"errors"
	"strings"

	"github.com/llmprobe/llmprobe/prober/sweep"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// applyDataset sets the workload of --dataset in c, refusing the length
// flags it replaces.
func applyDataset(f *sweepFlags, c *sweep.Config) error {
	var conflict []string
	if f.str("workload") != "" {
		conflict = append(conflict, "--workload")
	}
	if f.isSet("input-len") {
		conflict = append(conflict, "--input-len")
	}
	if f.isSet("range-ratio") {
		conflict = append(conflict, "--range-ratio")
	}
	if f.num("prefix-len") != 0 {
		conflict = append(conflict, "--prefix-len")
	}
	if len(conflict) > 0 {
		return &flagError{flag: "dataset", err: errors.New("the dataset's prompts set the input lengths: drop " + strings.Join(conflict, ", "))}
	}
	maxEntries := f.num("dataset-max-entries")
	if err := sweep.LookupField("Workload.Dataset.MaxEntries").Check(float64(maxEntries), maxEntries); err != nil {
		return err
	}
	path := f.str("dataset")
	spec := workload.Spec{Dataset: &workload.DatasetSpec{Path: path, Format: f.str("dataset-format"),
		Sampling: f.str("dataset-sampling"), MaxEntries: &maxEntries}}
	if f.isSet("output-len") {
		spec.OutputTokens = workload.Fixed(f.num("output-len"))
	}
	c.Workload, c.WorkloadSource = spec, path
	return nil
}
