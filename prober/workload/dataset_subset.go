package workload

import (
	"fmt"
	"slices"
)

// The measured subset of a dataset (DatasetSpec.MaxEntries): vLLM samples
// num_prompts entries and tokenizes only those; a sweep over a 90,000-entry
// ShareGPT file would otherwise count ~190,000 texts with the server's
// tokenizer before its first request. The subset is chosen once, from the
// seed, before anything is measured, and is the same for every step.

// DefaultDatasetMaxEntries is DatasetSpec.MaxEntries' default: the most
// entries of a dataset measured and sampled from (10,000).
const DefaultDatasetMaxEntries = 10_000

// tagSubset is the random stream of the subset's choice.
const tagSubset uint64 = 0x73756273 // "subs"

// MaxEntriesOrDefault returns MaxEntries, defaulting to
// DefaultDatasetMaxEntries; 0 means every entry.
func (d DatasetSpec) MaxEntriesOrDefault() int {
	if d.MaxEntries == nil {
		return DefaultDatasetMaxEntries
	}
	return *d.MaxEntries
}

// SubsetSize returns how many of a file's n entries the spec measures and
// samples from: n when MaxEntries is 0 or at least n, else MaxEntries.
func (d DatasetSpec) SubsetSize(n int) int {
	if m := d.MaxEntriesOrDefault(); m > 0 && m < n {
		return m
	}
	return n
}

// ForEntries returns d with MaxEntries in a canonical form for a file of n
// entries, so that two specs that measure the same entries hash the same
// (a workload's hash, a probe's restart key): nil when the whole file is
// used and the default would use it too (the hash of a spec written before
// max_entries existed), 0 when the whole file is used beyond the default,
// else the subset's size.
func (d DatasetSpec) ForEntries(n int) DatasetSpec {
	k := d.SubsetSize(n)
	switch {
	case k == n && n <= DefaultDatasetMaxEntries:
		d.MaxEntries = nil
	case k == n:
		d.MaxEntries = new(int)
	default:
		d.MaxEntries = &k
	}
	return d
}

// validateMaxEntries checks MaxEntries.
func (d DatasetSpec) validateMaxEntries() error {
	if d.MaxEntries != nil && (*d.MaxEntries < 0 || *d.MaxEntries > MaxDatasetEntries) {
		return fmt.Errorf("max_entries: must be 0 (every entry) to %d, got %d", MaxDatasetEntries, *d.MaxEntries)
	}
	return nil
}

// subset returns the indices of the entries of a file of n entries that a
// source samples from, in file order (nil: all n). Sequential and cycle
// sampling take the first k entries (file order is their point); random and
// shuffle take k distinct entries chosen from seed (without replacement).
func subset(n, k int, sampling string, seed uint64) []int {
	if k >= n {
		return nil
	}
	idx := make([]int, k)
	switch sampling {
	case SamplingSequential, SamplingCycle:
		for i := range idx {
			idx[i] = i
		}
	default:
		key := derive(seed, tagSubset)
		for i := range idx {
			idx[i] = int(permute(key, uint64(i), uint64(n)))
		}
		slices.Sort(idx)
	}
	return idx
}

// size returns the number of entries the source measures.
func (s *DatasetSource) size() int {
	if s.sub != nil {
		return len(s.sub)
	}
	return len(s.ds.Entries)
}

// entry returns the i-th entry of the measured subset.
func (s *DatasetSource) entry(i int) *DatasetEntry {
	if s.sub != nil {
		return &s.ds.Entries[s.sub[i]]
	}
	return &s.ds.Entries[i]
}
