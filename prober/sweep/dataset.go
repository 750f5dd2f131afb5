package sweep

import (
	"context"
	"fmt"
	"math"

	"github.com/go-kit/log/level"

	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/fingerprint"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// A sweep over a dataset file (Config.Workload.Dataset): loaded and checked
// in Prepare before anything is sent, measured with the preflight's prompt
// sizing, sampled per step from the step seed.

// loadDataset reads the dataset file of the workload (nothing sent yet):
// a bad file is a *FieldError on Workload.Dataset naming the file and line.
func (r *runner) loadDataset() error {
	c := &r.cfg
	spec := c.Workload.Dataset
	if spec == nil {
		return nil
	}
	ds, err := workload.LoadDataset(spec.Path, workload.DatasetOptions{Format: spec.Format})
	if err != nil {
		return &FieldError{Field: "Workload.Dataset", Err: err}
	}
	if ds.HasMessages && !c.api().Conversations {
		return fieldErr("API", "the dataset %s has messages entries (chat conversations): they need {API} %s", ds.Path,
			client.NamesWith(client.WithConversations, "or"))
	}
	// The workload's hash holds the file's SHA-256 and the subset's size in
	// canonical form (the same entries measured: the same hash).
	withSum := spec.ForEntries(len(ds.Entries))
	withSum.SHA256 = ds.SHA256
	c.Workload.Dataset = &withSum // the caller's spec stays as it was
	src, err := workload.NewDatasetSource(ds, c.Workload, uint64(c.shardSeed()))
	if err != nil {
		return &FieldError{Field: "Workload.Dataset", Err: err}
	}
	r.dataset = src
	return nil
}

// measureDataset counts the dataset's tokens with the preflight's prompt
// sizing (the server's tokenizer, else the calibrated estimate), then
// checks that its longest request fits max_model_len and that a shuffle
// without replacement has entries enough for every step.
func (r *runner) measureDataset(ctx context.Context) error {
	if r.dataset == nil {
		return nil
	}
	info, err := r.dataset.Measure(ctx, r.sizing.Tokenizer)
	if err != nil {
		return fmt.Errorf("workload: %w", err)
	}
	r.datasetInfo = &info
	level.Info(r.logger).Log("msg", "dataset measured", "path", info.Path, "format", info.Format, "entries", info.Entries,
		"sampled", info.Sampled, "used", info.Used, "method", info.Method, "tokenize_calls", info.TokenizeCalls,
		"input_p50", info.InputTokens.P50, "input_max", info.InputTokens.Max, "output_p50", info.OutputTokens.P50, "output_max", info.OutputTokens.Max)
	if maxLen, src := r.maxModelLen(); maxLen > 0 {
		if need := int(info.InputTokens.Max + info.OutputTokens.Max); need > maxLen {
			return fieldErr("Workload.Dataset", "%s: the longest prompt (%d tokens) and the longest output (%d tokens) need %d, "+
				"more than the model's max_model_len %d (from %s): drop the long entries or lower {Workload.OutputTokens}",
				info.Path, int(info.InputTokens.Max), int(info.OutputTokens.Max), need, maxLen, src)
		}
	}
	if r.dataset.Sampling() == workload.SamplingShuffle {
		n, known := r.maxStepRequests()
		switch {
		case !known:
			return fieldErr("Workload.Dataset", "sampling shuffle (without replacement) needs a step size known in advance "+
				"({NumPrompts}, or fixed {Rates} with {Duration}); use cycle or random")
		case n+r.cfg.Warmups > info.Used:
			return fieldErr("Workload.Dataset", "sampling shuffle (without replacement): a step sends up to %d requests "+
				"(%d warmups included) but the dataset has %d usable entries%s; use cycle to go round again, random, or fewer requests",
				n+r.cfg.Warmups, r.cfg.Warmups, info.Used, subsetText(info))
		}
	}
	return nil
}

// maxStepRequests is the most measured requests one step sends, when it
// is known before the sweep runs.
func (r *runner) maxStepRequests() (int, bool) {
	c := r.cfg
	if c.NumPrompts > 0 {
		return c.shardPrompts(), true
	}
	if c.Auto || len(c.Concurrency) > 0 {
		return 0, false
	}
	n := 0
	for _, lv := range c.Rates {
		if math.IsInf(lv, 1) {
			return 0, false
		}
		n = max(n, int(math.Round(c.sendRate(lv)*c.Duration.Seconds())), c.MinPrompts, 1)
	}
	return n, true
}

// datasetFingerprint is the fingerprint's record of the dataset.
func (r *runner) datasetFingerprint() *fingerprint.Dataset {
	if r.datasetInfo == nil {
		return nil
	}
	d := r.datasetInfo
	return &fingerprint.Dataset{Path: d.Path, Format: d.Format, Entries: d.Entries, Used: d.Used, SHA256: d.SHA256,
		Sampling: d.Sampling, Tokenizer: d.Method, Sampled: d.Sampled, MaxEntries: d.MaxEntries}
}

// subsetText explains the usable entries of a dataset whose subset is
// smaller than the file (the shuffle refusal): "" when every entry was
// measured.
func subsetText(d workload.DatasetInfo) string {
	pruned := 0
	for _, n := range d.Pruned {
		pruned += n
	}
	s := ""
	if d.Sampled < d.Entries {
		s = fmt.Sprintf(" (a subset of %d of the file's %d entries, {Workload.Dataset.MaxEntries} %d: raise it, or 0 for every entry",
			d.Sampled, d.Entries, d.MaxEntries)
		if pruned > 0 {
			s += fmt.Sprintf("; %d of the subset pruned", pruned)
		}
		return s + ")"
	}
	if pruned > 0 {
		s = fmt.Sprintf(" (%d of %d pruned)", pruned, d.Sampled)
	}
	return s
}
