package artifacts

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/llmprobe/llmprobe/prober/capfile"

	"github.com/llmprobe/llmprobe/prober"
)

// maxRecordLine bounds one line of records.jsonl read by ReadRecords (a
// request's ITL array is most of it).
const maxRecordLine = 256 << 20

// ReadRecords reads the records.jsonl at path (a RecordLine per line, as
// Sink writes it) and calls fn with each line in file order: the decoded
// line, whose Record is new for each call (fn may keep it), and the line's
// bytes without surrounding white space (valid only during the call).
// Blank lines are skipped; lines count from 1 all the same. It is the one
// reader of records.jsonl: compare's evidence, the vLLM-form
// --save-detailed arrays and the merge of shards read through it.
//
// A file that is not a regular file is a *capfile.NotRegularError; one
// that cannot be opened returns os.Open's error (wrapping
// fs.ErrNotExist when it is missing); a line that does not decode, or an
// error of fn, is returned as "PATH line N: ERR" (wrapping fn's error), and
// reading stops there.
func ReadRecords(path string, fn func(line RecordLine, raw []byte) error) error {
	f, err := capfile.OpenOwned(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), maxRecordLine)
	for n := 1; sc.Scan(); n++ {
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		l := RecordLine{Record: &prober.Record{}}
		if err := json.Unmarshal(raw, &l); err != nil {
			return fmt.Errorf("%s line %d: %w", path, n, err)
		}
		if err := fn(l, raw); err != nil {
			return fmt.Errorf("%s line %d: %w", path, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
