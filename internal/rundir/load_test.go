package rundir

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/report"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober/slo"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// reportObserver captures the final table as the CLI prints it and cancels
// the sweep when the step labelled cancelAt starts ("" never).
type reportObserver struct {
	sweep.NopObserver
	table    bytes.Buffer
	cancelAt string
	cancel   context.CancelFunc
}

func (o *reportObserver) StepStarted(st *sweep.Step, _ int) {
	if o.cancelAt != "" && st.Label == o.cancelAt {
		o.cancel()
	}
}

func (o *reportObserver) SweepDone(res *sweep.Result) { _ = report.WriteTable(&o.table, res) }

// runSweep runs cfg into a run directory with its reports (analysis.md and
// the plots rendered from the sweep's in-memory Result) and returns the
// Outcome and the table. cancelAt, when not empty, cancels the sweep as the
// step with that label starts.
func runSweep(t *testing.T, cfg sweep.Config, cancelAt string) (*Outcome, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("sweep log:\n%s", logs.String())
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	obs := &reportObserver{cancelAt: cancelAt, cancel: cancel}
	out, err := Run(ctx, cfg, Options{
		Logger:   log.NewLogfmtLogger(log.NewSyncWriter(&logs)),
		Args:     []string{"llmprobe", "sweep"},
		Observer: obs,
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, &obs.table
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
			return "line " + itoa(i+1) + ":\n got " + gl + "\nwant " + wl
		}
	}
	return "(no line differs)"
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// TestLoadSameAsRun: for sweeps against the simulator, a run directory read
// back with Load renders the same analysis.md, plots and table as the
// sweep's own Result did, and restores the Result's Go-only fields from the
// manifest.
func TestLoadSameAsRun(t *testing.T) {
	url, _ := simtest.Start(t, simtest.Fast())
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
			cfg := testConfig(t, url)
			cfg.NumPrompts = 10
			tc.cfg(&cfg)
			out, r := runSweep(t, cfg, tc.cancelAt)
			if out.Complete != (tc.cancelAt == "") {
				t.Fatalf("complete = %v", out.Complete)
			}
			res, err := report.Load(out.Dir)
			if err != nil {
				t.Fatal(err)
			}
			md := mustRead(t, filepath.Join(out.Dir, artifacts.AnalysisFile))
			if got := report.Analysis(res); !bytes.Equal(got, md) {
				t.Errorf("analysis.md from the run directory differs:\n%s", firstDiff(string(got), string(md)))
			}
			for _, p := range []struct {
				name   string
				render func(*sweep.Result) ([]byte, error)
			}{{artifacts.GoodputPlotFile, report.GoodputSVG}, {artifacts.LatencyPlotFile, report.LatencySVG}} {
				want := mustRead(t, filepath.Join(out.Dir, p.name))
				if got, err := p.render(res); err != nil || !bytes.Equal(got, want) {
					t.Errorf("%s from the run directory differs (err %v)", p.name, err)
				}
			}
			var table bytes.Buffer
			if err := report.WriteTable(&table, res); err != nil {
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
	url, _ := simtest.Start(t, simtest.Fast())
	cfg := testConfig(t, url)
	cfg.Rates, cfg.RatesText, cfg.Rounds, cfg.NumPrompts = []float64{50}, "50", 2, 10
	res, r := runSweep(t, cfg, "")
	if len(res.Result.Levels) != 1 || res.Result.Levels[0].Rounds != 2 {
		t.Fatalf("levels %+v, want one of 2 rounds", res.Result.Levels)
	}
	l := res.Result.Levels[0]
	b := mustRead(t, filepath.Join(res.Dir, artifacts.AnalysisFile))
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
	if want := spread > report.MaxReproducibleSpread || gspread > report.MaxReproducibleSpread; warned != want {
		t.Errorf("warning shown %v, want %v (TTFT p99 spread %.3f, goodput spread %.3f)", warned, want, spread, gspread)
	}
	// The sweep's stdout starts with a blank line before the table.
	if !strings.Contains("\n"+r.String(), "\nrate 50: 2 rounds") {
		t.Errorf("table lacks the spread line:\n%s", r.String())
	}
}
