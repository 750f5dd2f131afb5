package artifacts

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/prober"
)

// TestReadRecords reads back what AppendRecordLine wrote, field for field,
// skipping blank lines but counting them; a line that does not decode and an
// error of the callback name the file and the line; a missing file is
// fs.ErrNotExist.
func TestReadRecords(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var want []RecordLine
	var b []byte
	for i := range 20 {
		l := RecordLine{Step: i % 3, Round: 1 + i%2, Record: fillRecord(rng, []string{"a", `q"uote`, "ü"})}
		want = append(want, l)
		var ok bool
		if b, ok = AppendRecordLine(b, l); !ok {
			t.Fatalf("record %d: AppendRecordLine refused it", i)
		}
		if i == 4 {
			b = append(b, " \n"...)
		}
	}
	path := filepath.Join(t.TempDir(), RecordsFile)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var got []RecordLine
	var raws []string
	if err := ReadRecords(path, func(l RecordLine, raw []byte) error {
		got = append(got, l)
		raws = append(raws, string(raw))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("read %d records, want %d", len(got), len(want))
	}
	for i := range want {
		w, g := *want[i].Record, *got[i].Record
		// Times are compared by their instant, an empty slice (omitted) as
		// none; everything else must be equal.
		for _, r := range []*prober.Record{&w, &g} {
			r.Scheduled, r.Sent, r.WallStart = r.Scheduled.UTC(), r.Sent.UTC(), r.WallStart.UTC()
			if len(r.ITL) == 0 {
				r.ITL = nil
			}
			if len(r.Features) == 0 {
				r.Features = nil
			}
			if len(r.Attribution) == 0 {
				r.Attribution = nil
			}
		}
		if got[i].Step != want[i].Step || got[i].Round != want[i].Round || !reflect.DeepEqual(w, g) {
			t.Errorf("record %d:\n got %+v\nwant %+v", i, g, w)
		}
		if line, _ := AppendRecordLine(nil, want[i]); strings.TrimSpace(string(line)) != raws[i] {
			t.Errorf("record %d: raw %q, want %q", i, raws[i], line)
		}
	}

	// The blank line counts: the bad line after it is line 7.
	bad := append(append([]byte{}, b[:strings.Index(string(b), " \n")+2]...), "{\"step\":\n"...)
	if err := os.WriteFile(path, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	err := ReadRecords(path, func(RecordLine, []byte) error { return nil })
	if err == nil || !strings.HasPrefix(err.Error(), path+" line 7: ") {
		t.Errorf("bad line: %v, want %q", err, path+" line 7: ...")
	}
	stop := errors.New("stop here")
	err = ReadRecords(path, func(l RecordLine, _ []byte) error {
		if l.Step == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || err.Error() != path+" line 3: stop here" {
		t.Errorf("callback error: %v", err)
	}
	if err := ReadRecords(filepath.Join(t.TempDir(), "missing"), nil); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}
