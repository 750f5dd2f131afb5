package workload_test

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/prober/workload"
)

// TestLoadersRefuseFIFO is issue 22 D6: a dataset, trace or schema file that
// is a FIFO blocked check-config, sweep --dataset, workload stats and a
// reload forever (its open waits for a writer); each loader now refuses it
// at once, naming the file.
func TestLoadersRefuseFIFO(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "d.jsonl")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skip("no FIFOs:", err)
	}
	want := p + ": not a regular file (a FIFO)"
	for _, c := range []struct {
		name string
		load func() error
		want string
	}{
		{"LoadDataset", func() error { _, err := workload.LoadDataset(p, workload.DatasetOptions{}); return err }, "dataset: " + want},
		{"LoadTrace", func() error { _, err := workload.LoadTrace(p, workload.TraceOptions{}); return err }, "trace: " + want},
		{"SniffTrace", func() error {
			if workload.SniffTrace(p) {
				t.Error("SniffTrace(FIFO) = true")
			}
			return nil
		}, ""},
		{"schema_file", func() error {
			r := &workload.Request{Features: []workload.RequestFeature{{Kind: "json_schema", Share: 1, SchemaFile: "d.jsonl"}}}
			return r.ReadSchemaFiles(dir)
		}, "features[0].schema_file: " + want},
	} {
		errc := make(chan error, 1)
		go func() { errc <- c.load() }()
		select {
		case err := <-errc:
			if c.want == "" && err != nil || c.want != "" && (err == nil || err.Error() != c.want) {
				t.Errorf("%s(FIFO) = %v, want %q", c.name, err, c.want)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s(FIFO) still blocked after 20 s", c.name)
		}
	}
}
