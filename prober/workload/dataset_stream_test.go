package workload

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestDatasetLongLineStreamed is issue 22's risk "a 0.9 GB dataset line is
// refused only after 2 GB RSS (the whole file is read first)": a 900 MiB
// file (sparse: one entry, then one line of NUL bytes) is refused for its
// line, naming the file and line, having allocated a small multiple of
// MaxDatasetLineBytes, not the file's size.
func TestDatasetLongLineStreamed(t *testing.T) {
	p := filepath.Join(t.TempDir(), "long.jsonl")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("\n{\"prompt\": \"a b c\"}\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(900 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err = LoadDataset(p, DatasetOptions{})
	runtime.ReadMemStats(&after)
	if want := p + ":3: line longer than"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("LoadDataset = %v, want an error starting %q", err, want)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d MiB reading the 900 MiB file", alloc>>20)
	if alloc > 8*MaxDatasetLineBytes {
		t.Errorf("allocated %d MiB reading a 900 MiB file: it was not streamed", alloc>>20)
	}
}

// TestDatasetStreamedHash: the streamed reader still hashes and counts
// every byte of the file (leading blank lines, a byte order mark and a
// last line without its newline included) and numbers lines from the
// file's start.
func TestDatasetStreamedHash(t *testing.T) {
	body := "\n \ufeff\n{\"prompt\": \"a b c\", \"max_tokens\": 3}\n\n{\"prompt\": \"d e\"}"
	p := filepath.Join(t.TempDir(), "d.jsonl")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	ds, err := LoadDataset(p, DatasetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(body))
	if ds.SHA256 != hex.EncodeToString(sum[:]) || ds.Bytes != int64(len(body)) || ds.Format != FormatJSONL {
		t.Errorf("dataset %s, %d bytes, %s; want %x, %d bytes, jsonl", ds.SHA256, ds.Bytes, ds.Format, sum, len(body))
	}
	if len(ds.Entries) != 2 || ds.Entries[0].Where != p+":3" || ds.Entries[1].Where != p+":5" || ds.MissingOutput != 1 {
		t.Errorf("entries %+v", ds.Entries)
	}
}
