package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/report"
	"github.com/llmprobe/llmprobe/prober/compare"
)

// input is one analyzed path: the evidence of one run, or both sides of a
// compare run directory.
type input struct {
	path string
	ev   *compare.Evidence
	// pair is set for a compare run directory: its sides and its stored
	// result.
	pair *comparePair
}

// comparePair is what a compare run directory holds.
type comparePair struct {
	baseline, candidate *compare.Evidence
	stored              *compareResult
}

// loadInput reads one path given to analyze: an llmprobe run directory (or
// its result.json), a compare run directory, a directory of vllm bench serve
// result files (one side whose files are its steps), or one result file.
// The error is one line naming the path.
func loadInput(path string) (*input, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, errors.Unwrap(err))
	}
	if !fi.IsDir() {
		dir := filepath.Dir(path)
		if filepath.Base(path) == artifacts.ResultFile && exists(filepath.Join(dir, artifacts.ManifestFile)) {
			return loadDir(dir, path)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		ev, err := compare.Decode(path, b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return &input{path: path, ev: ev}, nil
	}
	if exists(filepath.Join(path, artifacts.ManifestFile)) {
		return loadDir(path, path)
	}
	files, err := filepath.Glob(filepath.Join(path, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: not a run directory: no manifest.json and no *.json result files", path)
	}
	slices.Sort(files)
	var ev *compare.Evidence
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		e, err := compare.Decode(f, b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if ev == nil {
			ev = e
			ev.Name = path
			continue
		}
		ev.Merge(e)
	}
	return &input{path: path, ev: ev}, nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// loadDir reads an llmprobe run directory: a sweep's, or a compare run's
// (its result.json says llmprobe_compare_schema).
func loadDir(dir, name string) (*input, error) {
	b, err := os.ReadFile(filepath.Join(dir, artifacts.ResultFile))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var probe struct {
		Compare *int `json:"llmprobe_compare_schema"`
	}
	if json.Unmarshal(b, &probe) == nil && probe.Compare != nil {
		p, err := loadCompareDir(dir, b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return &input{path: name, pair: p}, nil
	}
	ev, err := loadRunDir(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	ev.Name = name
	return &input{path: name, ev: ev}, nil
}

// loadRunDir reads a sweep run directory (report.Load) and the per-request
// samples of its records.jsonl into Evidence.
func loadRunDir(dir string) (*compare.Evidence, error) {
	res, err := report.Load(dir)
	if err != nil {
		return nil, err
	}
	reqs, err := readRecords(filepath.Join(dir, artifacts.RecordsFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return compare.FromSweep(dir, res, reqs), nil
}

// readRecords reads records.jsonl into per-request samples by step index
// (nil and an fs.ErrNotExist error when the file is missing).
func readRecords(path string) (map[int][]compare.Request, error) {
	out := map[int][]compare.Request{}
	err := artifacts.ReadRecords(path, func(l artifacts.RecordLine, _ []byte) error {
		out[l.Step] = append(out[l.Step], compare.RequestOf(l.Record))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// loadCompareDir reads both sides of a compare run directory from the round
// directories its result.json lists.
func loadCompareDir(dir string, b []byte) (*comparePair, error) {
	var cr compareResult
	if err := json.Unmarshal(b, &cr); err != nil {
		return nil, fmt.Errorf("compare result.json: %w", err)
	}
	p := &comparePair{stored: &cr}
	for _, r := range cr.Rounds {
		if r.Dir == "" || strings.Contains(r.Dir, "..") || filepath.IsAbs(r.Dir) {
			return nil, fmt.Errorf("compare result.json: round %d: bad dir %q", r.Round, r.Dir)
		}
		ev, err := loadRunDir(filepath.Join(dir, filepath.FromSlash(r.Dir)))
		if err != nil {
			return nil, fmt.Errorf("round %d: %w", r.Round, err)
		}
		for i := range ev.Steps {
			ev.Steps[i].Order = r.Round
		}
		dst := &p.baseline
		if r.Side == sideCandidate {
			dst = &p.candidate
		}
		if *dst == nil {
			ev.Name = r.Side
			*dst = ev
		} else {
			(*dst).Merge(ev)
		}
	}
	if p.baseline == nil || p.candidate == nil {
		return nil, errors.New("compare result.json lists no round of one side")
	}
	return p, nil
}
