package rundir

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/llmprobe/llmprobe/prober/capfile"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/report"
	"github.com/llmprobe/llmprobe/prober/fingerprint"
	"github.com/llmprobe/llmprobe/prober/redact"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// MergeOptions are Merge's settings.
type MergeOptions struct {
	// OutDir is the parent of the merged run directory and Name names it
	// (default: shard 0's name + "-merged").
	OutDir, Name string
	// Args is the merge's command line (command.txt).
	Args []string
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Merge merges the run directories of the shards of one sharded sweep
// (sweep --shard-index/--shard-count) into a new run directory:
// records.jsonl and errors-redacted.jsonl concatenated (shard by shard),
// the statistics recomputed from the records (sweep.Merger), validity and
// knee recomputed, shard 0's /metrics snapshots (each shard read the whole
// server), result.json, the reports and a manifest whose fingerprint has no
// shard. Fingerprints must match in all but the shard fields. Every shard
// must verify against its own manifest (artifacts.Verify) and no
// request_id may appear twice: a tampered or duplicated shard is refused
// before anything is written, so a merge never gives an edited shard a
// fresh manifest.
func Merge(dirs []string, o MergeOptions) (*Outcome, error) {
	shards, m, err := loadShards(dirs)
	if err != nil {
		return nil, err
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	name := o.Name
	if name == "" {
		name = shards[0].Name + "-merged"
	}
	run, err := artifacts.Create(o.OutDir, name, now())
	if err != nil {
		return nil, fmt.Errorf("out dir: %w", err)
	}
	out := &Outcome{Dir: run.Dir()}
	fail := func(err error) (*Outcome, error) {
		fp := shards[0].Fingerprint
		fp.Load.Shard = nil
		ferr := run.Finish(artifacts.Manifest{Fingerprint: fp, InterruptedReason: "merge failed: " + err.Error()}, false)
		return out, errors.Join(err, ferr)
	}
	cmd := fingerprint.ShellJoin(redact.Args(o.Args)) + "\n"
	if err := run.WriteFile(artifacts.CommandFile, []byte(cmd)); err != nil {
		return fail(err)
	}
	recs, err := run.Append(artifacts.RecordsFile)
	if err != nil {
		return fail(err)
	}
	errs, err := run.Append(artifacts.ErrorsFile)
	if err != nil {
		return fail(errors.Join(err, recs.Close()))
	}
	ids := map[string]int{}
	for i, d := range dirs {
		if err := mergeRecords(i, d, m, recs, ids); err != nil {
			return fail(errors.Join(err, recs.Close(), errs.Close()))
		}
		if err := copyInto(filepath.Join(d, artifacts.ErrorsFile), errs); err != nil {
			return fail(errors.Join(err, recs.Close(), errs.Close()))
		}
	}
	if err := errors.Join(recs.Close(), errs.Close()); err != nil {
		return fail(err)
	}
	for _, f := range []string{artifacts.MetricsBeforeFile, artifacts.MetricsDuringFile, artifacts.MetricsAfterFile} {
		b, err := capfile.ReadOwned(filepath.Join(dirs[0], f), artifacts.MaxFileBytes)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err == nil {
			err = run.WriteFile(f, b)
		}
		if err != nil {
			return fail(err)
		}
	}
	res := m.Result()
	res.Name = name
	out.Result, out.Complete = res, res.Complete
	return out, writeResult(run, res, false, artifacts.Manifest{Fingerprint: res.Fingerprint, InterruptedReason: res.InterruptedReason}, nil)
}

// loadShards verifies and reads every shard's run directory and makes
// their Merger.
func loadShards(dirs []string) ([]*sweep.Result, *sweep.Merger, error) {
	shards := make([]*sweep.Result, len(dirs))
	for i, d := range dirs {
		if err := verifyShard(i, d); err != nil {
			return nil, nil, err
		}
		r, err := report.Load(d)
		if err != nil {
			return nil, nil, fmt.Errorf("merge: %w", err)
		}
		shards[i] = r
	}
	m, err := sweep.NewMerger(shards)
	if err != nil {
		return nil, nil, err
	}
	return shards, m, nil
}

// verifyShard checks shard i's run directory against its manifest: a
// directory without one (a killed run) or with a file missing, changed or
// not listed is refused, the error naming the shard and every finding.
func verifyShard(i int, dir string) error {
	if err := verifyDir(dir); err != nil {
		return fmt.Errorf("merge: shard %d (%s), refusing to merge it: %w", i, dir, err)
	}
	return nil
}

// mergeRecords reads shard i's records.jsonl (in dir) into m and appends
// each line to recs; ids maps each request_id seen so far to its shard, and
// a request_id seen before is refused.
func mergeRecords(i int, dir string, m *sweep.Merger, recs *artifacts.Appender, ids map[string]int) error {
	path := filepath.Join(dir, artifacts.RecordsFile)
	line := 0
	err := artifacts.ReadRecords(path, func(l artifacts.RecordLine, raw []byte) error {
		line++
		if id := l.Record.RequestID; id != "" {
			if k, dup := ids[id]; dup {
				return fmt.Errorf("shard %d (%s) line %d: request_id %q appears twice (first in shard %d): the shards overlap",
					i, path, line, id, k)
			}
			ids[id] = i
		}
		if err := m.Add(l.Step, l.Record); err != nil {
			return err
		}
		_, err := recs.Write(append(raw, '\n'))
		return err
	})
	if err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	return nil
}

// copyInto appends the file at path to a (nothing when it is missing),
// streamed: a file that is not a regular file is refused.
func copyInto(path string, a *artifacts.Appender) error {
	f, err := capfile.OpenOwned(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	defer f.Close()
	_, err = io.Copy(a, f)
	return err
}
