package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/alecthomas/kingpin/v2"

	"github.com/llmprobe/llmprobe/prober/sweep"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// datasetFlags are sweep's --dataset flags (docs/workload.md "Datasets").
type datasetFlags struct {
	path, format, sampling string
	maxEntries             int
}

func addDatasetFlags(cmd *kingpin.CmdClause, f *datasetFlags) {
	cmd.Flag("dataset", "Dataset file whose prompts the sweep sends: JSONL ({\"prompt\"} or {\"messages\"} per line, optional "+
		"max_tokens/output_tokens) or ShareGPT JSON (first human turn, the reply's length as the output length, vLLM's "+
		"pruning rules). Instead of --input-len/--range-ratio/--prefix-len/--workload; --output-len, when given, replaces "+
		"every entry's output length. See docs/workload.md.").StringVar(&f.path)
	cmd.Flag("dataset-format", "Format of --dataset: auto (from the first byte), jsonl or sharegpt.").
		Default("auto").StringVar(&f.format)
	cmd.Flag("dataset-sampling", "How each step picks --dataset entries, from the step's seed: random (with replacement), "+
		"shuffle (without replacement; more requests than entries is an error), cycle (shuffle, going round again) "+
		"or sequential (file order).").Default(workload.SamplingRandom).StringVar(&f.sampling)
	cmd.Flag("dataset-max-entries", "Measure and sample from at most this many --dataset entries (0: all): a subset chosen "+
		"once from --seed before any is counted (random, shuffle) or the first N in file order (sequential, cycle), "+
		"the same for every step; ShareGPT's pruning applies to the subset.").
		Default(strconv.Itoa(workload.DefaultDatasetMaxEntries)).IntVar(&f.maxEntries)
}

// applyDataset sets the workload of --dataset in c, refusing the length
// flags it replaces.
func applyDataset(f *sweepFlags, c *sweep.Config) error {
	d := f.dataset
	if d.path == "" {
		return nil
	}
	var conflict []string
	if f.workloadFile != "" {
		conflict = append(conflict, "--workload")
	}
	if f.inputSet {
		conflict = append(conflict, "--input-len")
	}
	if f.rangeSet {
		conflict = append(conflict, "--range-ratio")
	}
	if f.prefixLen != 0 {
		conflict = append(conflict, "--prefix-len")
	}
	if len(conflict) > 0 {
		return &flagError{flag: "dataset", err: errors.New("the dataset's prompts set the input lengths: drop " + strings.Join(conflict, ", "))}
	}
	if d.maxEntries < 0 || d.maxEntries > workload.MaxDatasetEntries {
		return &flagError{flag: "dataset-max-entries", err: fmt.Errorf("must be 0 (every entry) to %d, got %d", workload.MaxDatasetEntries, d.maxEntries)}
	}
	spec := workload.Spec{Dataset: &workload.DatasetSpec{Path: d.path, Format: d.format, Sampling: d.sampling, MaxEntries: &d.maxEntries}}
	if f.outputSet {
		spec.OutputTokens = workload.Fixed(f.outputLen)
	}
	c.Workload, c.WorkloadSource = spec, d.path
	return nil
}
