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
)

// Truncated is the VerifyPartial finding of a streamed file that does not
// end on a record boundary or holds a record that does not parse.
const Truncated ProblemKind = "truncated"

// PartialSummary is what VerifyPartial found in a run directory that may
// lack its manifest (the writer was killed).
type PartialSummary struct {
	// Manifest reports whether manifest.json exists.
	Manifest bool
	// Records is the number of whole lines of records.jsonl(.partial).
	Records int
	// Files lists the regular files of the directory, sorted.
	Files []string
}

// maxLine bounds one line of a JSON Lines file read by VerifyPartial.
const maxLine = 64 << 20

// VerifyPartial checks what a run directory holds when it may have no
// manifest (SIGKILL, a crash): with a manifest it is Verify; without one,
// every JSON Lines file (records.jsonl, errors-redacted.jsonl, finished or
// .partial) must consist of whole lines that each parse as a JSON object,
// and every metrics snapshot file must parse into sections (ParseSnapshots)
// and end with a newline. The summary counts the records that are there.
func VerifyPartial(dir string) (PartialSummary, []Problem, error) {
	var sum PartialSummary
	if _, err := os.Stat(dir); err != nil {
		return sum, nil, err
	}
	problems := []Problem{}
	if _, err := os.Stat(filepath.Join(dir, ManifestFile)); err == nil {
		sum.Manifest = true
		p, err := Verify(dir)
		if err != nil {
			return sum, nil, err
		}
		problems = append(problems, p...)
	}
	err := walk(dir, func(rel string, d fs.DirEntry) error {
		if !d.Type().IsRegular() {
			return nil
		}
		sum.Files = append(sum.Files, rel)
		base := strings.TrimSuffix(rel, PartialSuffix)
		p := filepath.Join(dir, filepath.FromSlash(rel))
		switch base {
		case RecordsFile, ErrorsFile:
			n, prob := checkJSONLines(p, rel)
			if base == RecordsFile {
				sum.Records += n
			}
			problems = append(problems, prob...)
		case MetricsBeforeFile, MetricsDuringFile, MetricsAfterFile:
			problems = append(problems, checkSnapshots(p, rel)...)
		}
		return nil
	})
	if err != nil {
		problems = append(problems, Problem{Path: ".", Kind: Invalid, Detail: fmt.Sprintf("list directory: %v", err)})
	}
	sort.Strings(sum.Files)
	sort.SliceStable(problems, func(i, j int) bool { return problems[i].Path < problems[j].Path })
	return sum, problems, nil
}

// checkJSONLines counts the whole JSON-object lines of a JSON Lines file
// and reports a line that does not parse or a last line without its newline.
func checkJSONLines(path, rel string) (int, []Problem) {
	f, err := os.Open(path)
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
	b, err := os.ReadFile(path)
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
