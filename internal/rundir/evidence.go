package rundir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/llmprobe/llmprobe/prober/capfile"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/report"
	"github.com/llmprobe/llmprobe/prober/compare"
)

// Input is one analyzed path: the evidence of one run, or both sides of a
// compare run directory.
type Input struct {
	// Path is the path as given.
	Path string
	// Evidence is the run's (nil for a compare run directory).
	Evidence *compare.Evidence
	// Pair is set for a compare run directory: its sides and its stored
	// result.
	Pair *ComparePair
	// Unverified says why the input's figures could not be checked against
	// a manifest (a result file or directory without manifest.json); empty
	// for an llmprobe run directory, which loads only when it verifies.
	Unverified string
}

// noManifest is Input.Unverified for an input without manifest.json.
const noManifest = "no manifest.json: its figures are not verified"

// ComparePair is what a compare run directory holds: both sides' evidence,
// every round of a side pooled, and its result.json (nil for two inputs
// paired by analyze).
type ComparePair struct {
	Baseline, Candidate *compare.Evidence
	Stored              *compare.Result
}

// LoadInput reads one path given to analyze: an llmprobe run directory (or
// its result.json), a compare run directory, a directory of vllm bench serve
// result files (one side whose files are its steps), or one result file
// (compare.Decode). The error is one line naming the path.
func LoadInput(path string) (*Input, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, errors.Unwrap(err))
	}
	if !fi.IsDir() {
		dir := filepath.Dir(path)
		if filepath.Base(path) == artifacts.ResultFile && exists(filepath.Join(dir, artifacts.ManifestFile)) {
			return loadDir(dir, path)
		}
		ev, err := decodeFile(path)
		if err != nil {
			return nil, err
		}
		return &Input{Path: path, Evidence: ev, Unverified: noManifest}, nil
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
		e, err := decodeFile(f)
		if err != nil {
			return nil, err
		}
		if ev == nil {
			ev = e
			ev.Name = path
			continue
		}
		ev.Merge(e)
	}
	return &Input{Path: path, Evidence: ev, Unverified: noManifest}, nil
}

// decodeFile reads one result file (compare.Decode); the error names it.
func decodeFile(path string) (*compare.Evidence, error) {
	b, err := readInput(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	ev, err := compare.Decode(path, b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ev, nil
}

// readInput reads a result file named on the command line, at most
// artifacts.MaxFileBytes: a FIFO or socket is refused before it is opened.
func readInput(path string) ([]byte, error) {
	f, err := capfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return capfile.ReadAll(f, path, artifacts.MaxFileBytes)
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// loadDir reads an llmprobe run directory: a sweep's, or a compare run's
// (its result.json says llmprobe_compare_schema). The directory must first
// verify against its manifest (artifacts.Verify; a compare run's manifest
// covers its rounds): an edited result.json or records.jsonl is refused,
// not analyzed.
func loadDir(dir, name string) (*Input, error) {
	b, err := capfile.ReadOwned(filepath.Join(dir, artifacts.ResultFile), artifacts.MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := verifyDir(dir); err != nil {
		return nil, fmt.Errorf("%s: refusing to analyze it: %w", name, err)
	}
	var probe struct {
		Compare *int `json:"llmprobe_compare_schema"`
	}
	if json.Unmarshal(b, &probe) == nil && probe.Compare != nil {
		p, err := loadCompare(dir, b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return &Input{Path: name, Pair: p}, nil
	}
	ev, err := LoadEvidence(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	ev.Name = name
	return &Input{Path: name, Evidence: ev}, nil
}

// verifyDir checks the run directory dir against its manifest; the error
// lists every finding.
func verifyDir(dir string) error {
	v, err := artifacts.Verify(dir, artifacts.VerifyOptions{})
	if err != nil {
		return err
	}
	if len(v.Problems) == 0 {
		return nil
	}
	ps := make([]string, len(v.Problems))
	for k, p := range v.Problems {
		ps[k] = p.String()
	}
	return fmt.Errorf("the run directory does not match its manifest.json (llmprobe verify lists the same): %s",
		strings.Join(ps, "; "))
}

// LoadEvidence reads a sweep run directory (report.Load) and the
// per-request samples of its records.jsonl (artifacts.ReadRecords; a
// directory without one has no samples) into compare's Evidence.
func LoadEvidence(dir string) (*compare.Evidence, error) {
	res, err := report.Load(dir)
	if err != nil {
		return nil, err
	}
	reqs := map[int][]compare.Request{}
	err = artifacts.ReadRecords(filepath.Join(dir, artifacts.RecordsFile), func(l artifacts.RecordLine, _ []byte) error {
		reqs[l.Step] = append(reqs[l.Step], compare.RequestOf(l.Record))
		return nil
	})
	switch {
	case errors.Is(err, fs.ErrNotExist):
		reqs = nil
	case err != nil:
		return nil, err
	}
	return compare.FromSweep(dir, res, reqs), nil
}

// loadCompare reads both sides of a compare run directory from the round
// directories its result.json (b) lists, but for the rounds it discarded
// (rerun because their client was flagged), as compare pooled them.
func loadCompare(dir string, b []byte) (*ComparePair, error) {
	var cr compare.Result
	if err := json.Unmarshal(b, &cr); err != nil {
		return nil, fmt.Errorf("compare result.json: %w", err)
	}
	p := &ComparePair{Stored: &cr}
	for _, r := range cr.Rounds {
		if r.Dir == "" || strings.Contains(r.Dir, "..") || filepath.IsAbs(r.Dir) {
			return nil, fmt.Errorf("compare result.json: round %d: bad dir %q", r.Round, r.Dir)
		}
		if r.Discarded != "" {
			continue
		}
		ev, err := LoadEvidence(filepath.Join(dir, filepath.FromSlash(r.Dir)))
		if err != nil {
			return nil, fmt.Errorf("round %d: %w", r.Round, err)
		}
		for i := range ev.Steps {
			ev.Steps[i].Order = r.Round
		}
		dst := &p.Baseline
		if r.Side == compare.SideCandidate {
			dst = &p.Candidate
		}
		if *dst == nil {
			ev.Name = r.Side
			*dst = ev
		} else {
			(*dst).Merge(ev)
		}
	}
	if p.Baseline == nil || p.Candidate == nil {
		return nil, errors.New("compare result.json lists no round of one side")
	}
	return p, nil
}
