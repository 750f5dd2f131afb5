package artifacts

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/llmprobe/llmprobe/prober/capfile"
)

// Truncated is the finding of Verify in Partial mode of a streamed file
// that does not end on a record boundary or holds a record that does not
// parse.
const Truncated ProblemKind = "truncated"

// VerifyOptions selects what Verify checks.
type VerifyOptions struct {
	// Partial checks a run directory that may have no manifest (SIGKILL, a
	// crash): with a manifest, the manifest's check and, with or without
	// one, every JSON Lines file (records.jsonl, errors-redacted.jsonl,
	// finished or .partial) must consist of whole lines that each parse as
	// a JSON object, and every metrics snapshot file must parse into
	// sections (ParseSnapshots) and end with a newline.
	Partial bool
}

// Verification is what Verify found in a run directory.
type Verification struct {
	// Manifest is the directory's manifest.json; nil when it has none
	// (Partial mode only: otherwise that is an error).
	Manifest *Manifest
	// Files lists the regular files of the directory but the manifest,
	// sorted, and Records is the number of whole lines of
	// records.jsonl(.partial) (Partial mode only).
	Files   []string
	Records int
	// Problems are the findings, sorted by path; none means every byte is
	// as the manifest says (and, in Partial mode, every streamed file ends
	// on a record boundary).
	Problems []Problem
}

// maxLine bounds one line of a JSON Lines file read in Partial mode.
const maxLine = 64 << 20

// Verify checks the run directory dir. By default it re-hashes every file
// listed in dir/manifest.json and reports files that are missing, changed
// or not regular, and files present but not listed. The error is non-nil
// only when the manifest cannot be read (see ReadManifest; in Partial mode,
// when dir cannot be read or a manifest there cannot). Verify checks the
// files against the manifest, not the manifest itself: to pin a run, keep
// the manifest's own SHA-256 elsewhere. See VerifyOptions.Partial for a
// directory a killed run left behind.
func Verify(dir string, opts VerifyOptions) (Verification, error) {
	var v Verification
	manifest := true
	if opts.Partial {
		if _, err := os.Stat(dir); err != nil {
			return v, err
		}
		_, err := os.Stat(filepath.Join(dir, ManifestFile))
		manifest = err == nil
	}
	v.Problems = []Problem{}
	if manifest {
		m, err := ReadManifest(dir)
		if err != nil {
			return Verification{}, err
		}
		v.Manifest = &m
		v.Problems = checkManifest(dir, &m)
		sortProblems(v.Problems)
	}
	if opts.Partial {
		v.checkStreams(dir)
		sort.Strings(v.Files)
		sortProblems(v.Problems)
	}
	return v, nil
}

func sortProblems(ps []Problem) {
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].Path < ps[j].Path })
}

// checkStreams lists the regular files of dir, counts the records of
// records.jsonl(.partial) and reports a streamed file that does not end on
// a record boundary.
func (v *Verification) checkStreams(dir string) {
	err := walk(dir, func(rel string, d fs.DirEntry) error {
		if !d.Type().IsRegular() {
			return nil
		}
		v.Files = append(v.Files, rel)
		base := strings.TrimSuffix(rel, PartialSuffix)
		p := filepath.Join(dir, filepath.FromSlash(rel))
		switch base {
		case RecordsFile, ErrorsFile:
			n, prob := checkJSONLines(p, rel)
			if base == RecordsFile {
				v.Records += n
			}
			v.Problems = append(v.Problems, prob...)
		case MetricsBeforeFile, MetricsDuringFile, MetricsAfterFile:
			v.Problems = append(v.Problems, checkSnapshots(p, rel)...)
		}
		return nil
	})
	if err != nil {
		v.Problems = append(v.Problems, Problem{Path: ".", Kind: Invalid, Detail: fmt.Sprintf("list directory: %v", err)})
	}
}

// checkJSONLines counts the whole JSON-object lines of a JSON Lines file
// and reports a line that does not parse or a last line without its newline.
func checkJSONLines(path, rel string) (int, []Problem) {
	f, err := capfile.OpenOwned(path)
	if err != nil {
		return 0, []Problem{{Path: rel, Kind: Invalid, Detail: err.Error()}}
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	n := 0
	for line := 1; ; line++ {
		b, err := r.ReadSlice('\n')
		for err == bufio.ErrBufferFull && len(b) < maxLine {
			var more []byte
			more, err = r.ReadSlice('\n')
			b = append(append([]byte(nil), b...), more...)
		}
		if len(b) == 0 && err != nil {
			return n, nil
		}
		if !bytes.HasSuffix(b, []byte("\n")) {
			return n, []Problem{{Path: rel, Kind: Truncated, Detail: fmt.Sprintf("line %d has no newline: the file ends mid-record", line)}}
		}
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			return n, []Problem{{Path: rel, Kind: Truncated, Detail: fmt.Sprintf("line %d is not a JSON object: %v", line, err)}}
		}
		n++
	}
}

// checkSnapshots reports a snapshot file that does not parse into sections
// or ends without a newline.
func checkSnapshots(path, rel string) []Problem {
	b, err := capfile.ReadOwned(path, MaxFileBytes)
	if err != nil {
		return []Problem{{Path: rel, Kind: Invalid, Detail: err.Error()}}
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		return []Problem{{Path: rel, Kind: Truncated, Detail: "the file ends mid-line"}}
	}
	if _, err := ParseSnapshots(b); err != nil {
		return []Problem{{Path: rel, Kind: Truncated, Detail: err.Error()}}
	}
	return nil
}
