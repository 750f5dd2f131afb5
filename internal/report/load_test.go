package report

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/artifacts"
)

// TestLoadGolden renders the run directories in testdata/runs, written by
// `llmprobe sweep` against the built-in simulator with the renderer that
// read report.Sweep (before the report read *sweep.Result): read back with
// Load, each renders to the same analysis.md, goodput.svg, latency.svg and
// terminal table (table.txt, the sweep's stdout) byte for byte. The runs:
// closed loop (--concurrency 1,4), a burst with --max-concurrency and SLOs
// (--rates 4,inf --max-concurrency 2 --goodput ttft:200 tpot:50), two
// rounds with --percentiles and --metadata (--rates 3,6 --rounds 2), an
// interrupted ladder (SIGINT) and an adaptive search from the throughput
// probe (--rates auto --auto-max-steps 2).
//
// After a deliberate change of the rendering, regenerate the rendered
// files from each directory's result.json and manifest.json (which stay as
// the sweep wrote them) with
//
//	go test ./internal/report/ -run TestLoadGolden -update
//
// then review `git diff internal/report/testdata` and say in the commit
// which lines changed and why.
func TestLoadGolden(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "runs", "*"))
	if err != nil || len(dirs) < 5 {
		t.Fatalf("golden run directories: %v, %v", dirs, err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			res, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			want := func(name string) []byte {
				t.Helper()
				b, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			g, err := GoodputSVG(res)
			if err != nil {
				t.Fatal(err)
			}
			l, err := LatencySVG(res)
			if err != nil {
				t.Fatal(err)
			}
			var table bytes.Buffer
			if err := WriteTable(&table, res); err != nil {
				t.Fatal(err)
			}
			for _, f := range []struct {
				name string
				got  []byte
			}{{artifacts.AnalysisFile, Analysis(res)}, {artifacts.GoodputPlotFile, g}, {artifacts.LatencyPlotFile, l}, {"table.txt", table.Bytes()}} {
				if *update {
					if err := os.WriteFile(filepath.Join(dir, f.name), f.got, 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				if w := want(f.name); !bytes.Equal(f.got, w) {
					t.Errorf("%s differs from the one the sweep wrote:\n%s", f.name, firstDiff(string(f.got), string(w)))
				}
			}
		})
	}
}

// update makes TestLoadGolden rewrite the golden rendered files.
var update = flag.Bool("update", false, "rewrite the golden run directories' analysis.md, plots and table.txt from their result.json")

// firstDiff shows the first line where got and want differ.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n got %s\nwant %s", i+1, gl, wl)
		}
	}
	return "(no line differs)"
}

func TestLoadErrors(t *testing.T) {
	golden, err := filepath.Glob(filepath.Join("testdata", "runs", "*-closed"))
	if err != nil || len(golden) != 1 {
		t.Fatalf("golden closed-loop run: %v %v", golden, err)
	}
	copyRun := func(t *testing.T, drop string, result []byte) string {
		t.Helper()
		dir := filepath.Join(t.TempDir(), filepath.Base(golden[0]))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{artifacts.ResultFile, artifacts.ManifestFile} {
			if name == drop {
				continue
			}
			b, err := os.ReadFile(filepath.Join(golden[0], name))
			if err != nil {
				t.Fatal(err)
			}
			if name == artifacts.ResultFile && result != nil {
				b = result
			}
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	tests := []struct {
		name   string
		dir    func(t *testing.T) string
		errHas string
	}{
		{"no run directory", func(t *testing.T) string { return filepath.Join(t.TempDir(), "none") }, "result.json"},
		{"no result.json", func(t *testing.T) string { return copyRun(t, artifacts.ResultFile, nil) }, "result.json"},
		{"no manifest.json", func(t *testing.T) string { return copyRun(t, artifacts.ManifestFile, nil) }, "manifest"},
		{"not an llmprobe result", func(t *testing.T) string { return copyRun(t, "", []byte(`{"date": "x"}`)) }, "no llmprobe_result_schema"},
		{"a newer schema", func(t *testing.T) string { return copyRun(t, "", []byte(`{"llmprobe_result_schema": 99}`)) }, "newer"},
		{"not JSON", func(t *testing.T) string { return copyRun(t, "", []byte(`{`)) }, "result.json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Load(tc.dir(t))
			if err == nil || !strings.Contains(err.Error(), tc.errHas) || res != nil {
				t.Errorf("Load = %v, %v; want an error mentioning %q", res, err, tc.errHas)
			}
		})
	}
}

func TestRunName(t *testing.T) {
	tests := []struct{ dir, want string }{
		{"runs/20261201T090954Z-closed", "closed"},
		{"runs/20261201T090954Z-closed/", "closed"},
		{"20261201T090954Z-my-run-2", "my-run-2"},
		{"runs/closed", ""},
		{"runs/20261301T090954Z-closed", ""},
		{"runs/20261201T090954Z-", ""},
	}
	for _, tc := range tests {
		t.Run(tc.dir, func(t *testing.T) {
			if got := runName(tc.dir); got != tc.want {
				t.Errorf("runName(%q) = %q, want %q", tc.dir, got, tc.want)
			}
		})
	}
}

// TestGoodputPlotWithoutSLO: a sweep without --goodput has no goodput
// (result.json writes null), so its plot shows no goodput line.
func TestGoodputPlotWithoutSLO(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "runs", "*-closed"))
	if err != nil || len(dirs) != 1 {
		t.Fatalf("golden closed-loop run: %v %v", dirs, err)
	}
	res, err := Load(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	if sloSet(res) {
		t.Fatal("the golden closed-loop run has an SLO; pick one without")
	}
	svg, err := GoodputSVG(res)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(svg, []byte("request_goodput")) || !bytes.Contains(svg, []byte("request throughput")) {
		t.Error("the plot of a sweep without an SLO shows a goodput line (or no throughput line)")
	}
}
