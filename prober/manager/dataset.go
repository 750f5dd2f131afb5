package manager

import (
	"context"
	"fmt"

	"github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// itemSource yields a probe's items in sequence: a workload.Generator, or
// a workload.DatasetSource for a probe with workload.dataset.
type itemSource interface {
	Next(ctx context.Context, tok workload.Tokenizer) (workload.Item, error)
}

// newItemSource builds the probe's item source, its prompt texts drawn with
// nonce (a dataset's are the file's). A dataset is the one the
// config loaded (read once per load; a config built in code has it read
// here); its entries are measured with the target's prompt sizing on the
// first arrival.
func newItemSource(pc config.ProbeConfig, nonce uint64) (itemSource, error) {
	d := pc.Workload.Dataset
	if d == nil {
		g, err := workload.NewGenerator(pc.Workload, pc.Seed)
		if err != nil {
			return nil, err
		}
		g.SetPromptNonce(nonce)
		return g, nil
	}
	ds := pc.Dataset()
	if ds == nil {
		var err error
		if ds, err = workload.LoadDataset(d.Path, workload.DatasetOptions{Format: d.Format}); err != nil {
			return nil, err
		}
	}
	return workload.NewDatasetSource(ds, pc.Workload, pc.Seed)
}

// workloadString describes a probe's workload for its status.
func workloadString(w workload.Spec) string {
	if d := w.Dataset; d != nil {
		s := fmt.Sprintf("dataset %s (%s sampling)", d.Path, d.SamplingOrDefault())
		if w.OutputTokens.Dist != "" {
			s += ", output " + lengthString(w.OutputTokens)
		}
		return s
	}
	return fmt.Sprintf("input %s, output %s", lengthString(w.InputTokens), lengthString(w.OutputTokens))
}
