package rundir

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/llmprobe/llmprobe/prober/slo"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// parseSweepArgs parses a `llmprobe sweep` command line into its Config.
func parseSweepArgs(t *testing.T, args []string) (sweep.Config, error) {
	t.Helper()
	app := kingpin.New("llmprobe", "")
	f := &SweepFlags{}
	AddSweepFlags(app.Command("sweep", ""), f, sweep.SurfaceSweep)
	if _, err := app.Parse(args[1:]); err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	return f.Config()
}

// noCommandText are the settings a command line gives by a file it names,
// never as their value: CommandLine leaves them out.
var noCommandText = map[string]string{
	"APIKey":     "a secret: the command reads it from --api-key-file",
	"HTTPConfig": "prometheus/common's client config: the command reads it from --http.config.file",
}

// TestCommandLineRoundTripsEveryRow: for every sweep setting with a flag,
// a Config that holds a value other than the default gives a command line
// (sweep.CommandLine, each row's Setting.Format) that parses back into the
// same Config (issue 35 Deliver 1: the hand-written command line missed
// --tracing.sample-ratio and no test noticed). A row no variant below
// changes fails the test.
func TestCommandLineRoundTripsEveryRow(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	wl := write("w.yml", "input_tokens: {dist: uniform, min: 10, max: 20}\noutput_tokens: {dist: fixed, value: 4}\n")
	ds := write("d.jsonl", `{"prompt": "hello there"}`+"\n"+`{"prompt": "general kenobi"}`+"\n")
	tr := write("t.jsonl", `{"timestamp": 0, "input_length": 8, "output_length": 2, "hash_ids": [1]}`+"\n"+
		`{"timestamp": 500, "input_length": 8, "output_length": 2, "hash_ids": [1]}`+"\n")
	checks := write("checks.jsonl", `{"id": "c1", "prompt": "What is 1 + 1?", "max_tokens": 4, "number": 2}`+"\n")

	base, err := parseSweepArgs(t, []string{"llmprobe", "sweep", "--target", "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	// Each variant changes some settings of base (named: the rows it
	// covers) or gives its own command line (a file to read).
	type variant struct {
		rows []string
		edit func(c *sweep.Config)
		args []string // instead of edit: the command line that builds it
	}
	variants := []variant{
		{rows: []string{"Target", "Model", "API", "BatchSize", "RerankPath", "MetricsURL", "Engine", "ServerTiming"}, edit: func(c *sweep.Config) {
			c.Target, c.Model, c.API, c.BatchSize, c.RerankPath = "http://127.0.0.2:9", "m", "rerank", 4, "/score"
			c.MetricsURL, c.Engine, c.ServerTiming = "http://127.0.0.3:9/metrics", "vllm", sweep.ServerTimingOff
		}},
		{rows: []string{"Timeout", "TTFTTimeout", "StallTimeout"}, edit: func(c *sweep.Config) {
			c.Timeout, c.TTFTTimeout, c.StallTimeout = time.Minute, 2*time.Second, 3*time.Second
		}},
		{rows: []string{"Workload.InputTokens", "Workload.OutputTokens", "Workload.InputTokens.RangeRatio", "Workload.PrefixTokens", "FreshPrefix"},
			args: []string{"--input-len", "64", "--output-len", "9", "--range-ratio", "0.5", "--prefix-len", "16", "--fresh-prefix"}},
		{rows: []string{"Workload", "Workload.Request.Temperature", "Workload.Request.TopP", "Workload.Request.Seed", "Workload.Request.Stop",
			"Workload.Request.MinTokens", "Workload.Request.ExtraBody"},
			args: []string{"--workload", wl, "--temperature", "0", "--top-p", "0.9", "--sampling-seed", "7", "--stop", "a", "--stop", "b",
				"--min-tokens", "2", "--extra-body", `{"repetition_penalty":1.1}`}},
		{rows: []string{"Workload.Dataset", "Workload.Dataset.Format", "Workload.Dataset.Sampling", "Workload.Dataset.MaxEntries"},
			args: []string{"--dataset", ds, "--dataset-format", "jsonl", "--dataset-sampling", "cycle", "--dataset-max-entries", "1", "--output-len", "5"}},
		{rows: []string{"GPUMetricsURL", "GPUSelector"}, edit: func(c *sweep.Config) {
			c.GPUMetricsURL, c.GPUSelector = "http://127.0.0.1:9400/metrics", `pod="vllm-0"`
		}},
		{rows: []string{"SavePrompts", "AttributionHeaders", "SLOHeaders", "Unscaled", "MaxStepBytes", "Metadata", "CostPerHour", "Name", "OutDir"}, edit: func(c *sweep.Config) {
			c.SavePrompts, c.AttributionHeaders, c.SLOHeaders, c.Unscaled, c.MaxStepBytes = true, []string{"x-served-by"}, true, true, 512<<20
			c.Metadata, c.CostPerHour, c.Name, c.OutDir = map[string]string{"a": "1", "b": "x=y"}, 2.5, "n", "out"
		}},
		{rows: []string{"Rates", "MaxConcurrency", "Arrival", "Burstiness", "NumPrompts", "Warmups", "Rounds", "Seed", "PromptNonce",
			"ShardIndex", "ShardCount", "StartAt", "StepInterval", "SLO", "Percentiles"}, edit: func(c *sweep.Config) {
			c.Rates, c.RatesText, c.Auto, c.MaxConcurrency, c.Arrival, c.Burstiness = []float64{1, 2.5}, "1,2.5", false, 8, "gamma", 0.5
			c.NumPrompts, c.Duration, c.MinPrompts, c.Warmups, c.Rounds, c.Seed, c.PromptNonce = 20, 0, 0, 0, 3, 9, 12345
			c.ShardIndex, c.ShardCount = 1, 2
			c.StartAt, c.StepInterval = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), time.Minute
			c.SLO = slo.SLO{TTFT: 800 * time.Millisecond, TPOT: 50 * time.Millisecond}
			c.Percentiles = []float64{75, 99.9}
		}},
		{rows: []string{"Concurrency", "Duration", "MinPrompts"}, edit: func(c *sweep.Config) {
			c.Rates, c.RatesText, c.Auto, c.Concurrency, c.Duration, c.MinPrompts = nil, "", false, []int{1, 4}, 90*time.Second, 7
		}},
		{rows: []string{"Validity.MaxSendLag", "Validity.MaxClientCPU", "Validity.MaxErrorRate", "Validity.MaxSchedLatency",
			"SweepMode", "BackgroundBand", "MetricsInterval", "IdleTimeout", "TraceSampleRatio"}, edit: func(c *sweep.Config) {
			c.Validity.MaxSendLag, c.Validity.MaxClientCPU, c.Validity.MaxErrorRate = 20*time.Millisecond, 1.5, 0.2
			c.Validity.MaxSchedLatency, c.SweepMode, c.BackgroundBand = 30*time.Millisecond, sweep.SweepBackground, 0.4
			c.MetricsInterval, c.IdleTimeout, c.TraceSampleRatio = 2*time.Second, 5*time.Second, 0.25
		}},
		{rows: []string{"Search.Start", "Search.MaxSteps", "Search.Repeats", "Search.Tolerance"}, edit: func(c *sweep.Config) {
			c.Search.Start, c.Search.MaxSteps, c.Search.Repeats, c.Search.Tolerance = 4, 9, 3, 0.1
		}},
		{rows: []string{"AnswerChecks"}, args: []string{"--answer-checks", checks}},
		{rows: []string{"Trace", "TraceSpeeds"}, args: []string{"--trace", tr, "--trace-speed", "1,2", "--trace-block-size", "16"}},
	}
	covered := map[string]bool{}
	for _, v := range variants {
		name := strings.Join(v.rows, ",")
		want := base
		var err error
		if v.args != nil {
			want, err = parseSweepArgs(t, append([]string{"llmprobe", "sweep", "--target", base.Target}, v.args...))
		} else {
			want.Metadata = map[string]string{}
			v.edit(&want)
			err = want.Validate()
		}
		if err != nil {
			t.Errorf("%s: the variant is not valid: %v", name, err)
			continue
		}
		line := sweep.CommandLine(&want)
		got, err := parseSweepArgs(t, line)
		if err != nil {
			t.Errorf("%s: %q does not parse: %v", name, line, err)
			continue
		}
		for _, r := range v.rows {
			covered[r] = true
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %q parses into another Config:\n got %+v\nwant %+v", name, line, got, want)
		}
	}
	for _, s := range sweep.Settings() {
		if s.Field == "" || s.Flag == "" || s.Internal || s.Surfaces&sweep.SurfaceSweep == 0 {
			continue
		}
		if why, ok := noCommandText[s.Field]; ok {
			if got := s.Format(&base); got != nil {
				t.Errorf("%s (%s) formats as %q", s.Field, why, got)
			}
			continue
		}
		if !covered[s.Field] {
			t.Errorf("setting %s (--%s): no variant round-trips it", s.Field, s.Flag)
		}
	}
}
