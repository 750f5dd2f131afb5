package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober/slo"
	"github.com/llmprobe/llmprobe/prober/sweep"
	"github.com/llmprobe/llmprobe/prober/workload"
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
				if w := want(f.name); !bytes.Equal(f.got, w) {
					t.Errorf("%s differs from the one the sweep wrote:\n%s", f.name, firstDiff(string(f.got), string(w)))
				}
			}
		})
	}
}

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

// fastSim is a simulator whose engine steps take about a millisecond.
func fastSim() simulator.Config {
	c := simulator.DefaultConfig()
	c.StepBase = time.Millisecond
	c.StepPerPrefillToken = 0
	c.StepPerSeq = 10 * time.Microsecond
	return c
}

// sweepConfig is a small sweep against target: 10 requests per step of 32
// input and 4 output tokens, the client CPU check off (the simulator shares
// the test process) and a send-lag limit a busy test machine keeps.
func sweepConfig(t *testing.T, target string) sweep.Config {
	t.Helper()
	return sweep.Config{
		Target:          target,
		API:             "completions",
		Timeout:         30 * time.Second,
		Workload:        workload.Spec{InputTokens: workload.Fixed(32), OutputTokens: workload.Fixed(4)},
		WorkloadSource:  "flags",
		Rates:           []float64{20, 40},
		RatesText:       "20,40",
		Arrival:         "poisson",
		Burstiness:      1,
		NumPrompts:      10,
		Warmups:         1,
		Rounds:          1,
		MetricsInterval: 100 * time.Millisecond,
		IdleTimeout:     2 * time.Second,
		OutDir:          t.TempDir(),
		Name:            "test",
		Embedded:        true,
		Validity:        sweep.ValidityOptions{MaxSendLag: 100 * time.Millisecond},
	}
}

// runSweep runs cfg with the CLI's reports, rendered from the sweep's
// in-memory Result: analysis.md and the plots into the run directory, the
// table into the returned buffer. cancelAt, when not empty, cancels the
// sweep as the step with that label starts.
func runSweep(t *testing.T, cfg sweep.Config, cancelAt string) (*sweep.Outcome, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("sweep log:\n%s", logs.String())
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var table bytes.Buffer
	out, err := sweep.Run(ctx, cfg, sweep.Options{
		Logger:   log.NewLogfmtLogger(log.NewSyncWriter(&logs)),
		Args:     []string{"llmprobe", "sweep"},
		Stderr:   io.Discard,
		Progress: cancelAt != "",
		NewProgress: func(w io.Writer, total int, desc string) sweep.StepProgress {
			if desc == cancelAt {
				cancel()
			}
			return NewProgress(w, total, desc)
		},
		Report: func(run *artifacts.Run, res *sweep.Result) error {
			if err := WriteFiles(run, res); err != nil {
				return err
			}
			return WriteTable(&table, res)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, &table
}

// TestLoadSameAsRun: for sweeps against the simulator, a run directory read
// back with Load renders the same analysis.md, plots and table as the
// sweep's own Result did, and restores the Result's Go-only fields from the
// manifest.
func TestLoadSameAsRun(t *testing.T) {
	url, _ := simtest.Start(t, fastSim())
	tests := []struct {
		name     string
		cfg      func(c *sweep.Config)
		cancelAt string
	}{
		{name: "rates with rounds, SLOs, max concurrency, percentiles and metadata", cfg: func(c *sweep.Config) {
			c.Rounds, c.MaxConcurrency, c.Name = 2, 4, "rounds"
			c.SLO = slo.SLO{TTFT: 500 * time.Millisecond, TPOT: 100 * time.Millisecond}
			c.Percentiles, c.Metadata = []float64{75, 99.9}, map[string]string{"gpu": "none"}
		}},
		{name: "closed loop", cfg: func(c *sweep.Config) {
			c.Rates, c.RatesText, c.Concurrency, c.Name = nil, "", []int{1, 4}, "closed"
		}},
		{name: "a burst beside a rate", cfg: func(c *sweep.Config) {
			c.Rates, c.RatesText, c.Name = []float64{20, math.Inf(1)}, "20,inf", "sweep"
		}},
		{name: "interrupted", cancelAt: "rate=40", cfg: func(c *sweep.Config) { c.Name = "cut" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := sweepConfig(t, url)
			tc.cfg(&cfg)
			out, r := runSweep(t, cfg, tc.cancelAt)
			if out.Complete != (tc.cancelAt == "") {
				t.Fatalf("complete = %v", out.Complete)
			}
			res, err := Load(out.Dir)
			if err != nil {
				t.Fatal(err)
			}
			md, err := os.ReadFile(filepath.Join(out.Dir, artifacts.AnalysisFile))
			if err != nil {
				t.Fatal(err)
			}
			if got := Analysis(res); !bytes.Equal(got, md) {
				t.Errorf("analysis.md from the run directory differs:\n%s", firstDiff(string(got), string(md)))
			}
			for _, p := range []struct {
				name   string
				render func(*sweep.Result) ([]byte, error)
			}{{artifacts.GoodputPlotFile, GoodputSVG}, {artifacts.LatencyPlotFile, LatencySVG}} {
				want, err := os.ReadFile(filepath.Join(out.Dir, p.name))
				if err != nil {
					t.Fatal(err)
				}
				if got, err := p.render(res); err != nil || !bytes.Equal(got, want) {
					t.Errorf("%s from the run directory differs (err %v)", p.name, err)
				}
			}
			var table bytes.Buffer
			if err := WriteTable(&table, res); err != nil {
				t.Fatal(err)
			}
			if table.String() != r.String() {
				t.Errorf("table from the run directory differs:\n%s", firstDiff(table.String(), r.String()))
			}
			mem := out.Result
			if res.Name != mem.Name || res.Rounds != mem.Rounds || res.MaxConcurrency != mem.MaxConcurrency ||
				res.Complete != mem.Complete || res.InterruptedReason != mem.InterruptedReason {
				t.Errorf("Go-only fields read back: name %q rounds %d max concurrency %d complete %v reason %q; "+
					"in memory %q %d %d %v %q", res.Name, res.Rounds, res.MaxConcurrency, res.Complete, res.InterruptedReason,
					mem.Name, mem.Rounds, mem.MaxConcurrency, mem.Complete, mem.InterruptedReason)
			}
			gotFP, _ := json.Marshal(res.Fingerprint)
			memFP, _ := json.Marshal(mem.Fingerprint)
			if !bytes.Equal(gotFP, memFP) {
				t.Errorf("fingerprint read back:\n%s\nin memory:\n%s", gotFP, memFP)
			}
			if tc.cancelAt != "" && !strings.Contains(string(md), "**This sweep did not complete** (interrupted during step 1") {
				t.Errorf("analysis.md of the interrupted sweep lacks the reason:\n%s", md)
			}
		})
	}
}

// TestRunRoundsSpread runs two rounds of one rate: analysis.md and the
// final table show the spread over them, matching result.json's levels.
func TestRunRoundsSpread(t *testing.T) {
	url, _ := simtest.Start(t, fastSim())
	cfg := sweepConfig(t, url)
	cfg.Rates, cfg.RatesText, cfg.Rounds, cfg.NumPrompts = []float64{50}, "50", 2, 10
	res, r := runSweep(t, cfg, "")
	if len(res.Result.Levels) != 1 || res.Result.Levels[0].Rounds != 2 {
		t.Fatalf("levels %+v, want one of 2 rounds", res.Result.Levels)
	}
	l := res.Result.Levels[0]
	b, err := os.ReadFile(filepath.Join(res.Dir, artifacts.AnalysisFile))
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	for _, want := range []string{"## Spread over rounds", "| rate (req/s) | rounds | req/s | spread |", "\n| 50 | "} {
		if !strings.Contains(md, want) {
			t.Errorf("analysis.md lacks %q:\n%s", want, md)
		}
	}
	// Over two rounds the median is the mean.
	spread := (l.TTFTP99MS.Max - l.TTFTP99MS.Min) / l.TTFTP99MS.Mean
	gspread := (l.Goodput.Max - l.Goodput.Min) / l.Goodput.Mean
	warned := strings.Contains(md, "**50 req/s is not reproducible at this step length**")
	if want := spread > MaxReproducibleSpread || gspread > MaxReproducibleSpread; warned != want {
		t.Errorf("warning shown %v, want %v (TTFT p99 spread %.3f, goodput spread %.3f)", warned, want, spread, gspread)
	}
	// The sweep's stdout starts with a blank line before the table.
	if !strings.Contains("\n"+r.String(), "\nrate 50: 2 rounds") {
		t.Errorf("table lacks the spread line:\n%s", r.String())
	}
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
