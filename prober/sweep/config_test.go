package sweep

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/slo"
	"github.com/llmprobe/llmprobe/prober/workload"
)

func TestParseRates(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		want     []float64
		wantAuto bool
		wantErr  string
	}{
		{name: "ladder", in: "1,2, 4,8", want: []float64{1, 2, 4, 8}},
		{name: "fractional", in: "0.5,1.5", want: []float64{0.5, 1.5}},
		{name: "auto", in: "AUTO", wantAuto: true},
		{name: "burst", in: "inf", want: []float64{math.Inf(1)}},
		{name: "zero", in: "1,0", wantErr: "Rates: rate must be >= 0.01, got 0"},
		{name: "negative", in: "-2", wantErr: "Rates: rate must be >= 0.01, got -2"},
		// Issue 22 D3: sent as a burst, then a file name too long.
		{name: "tiny", in: "1e-300", wantErr: "Rates: rate must be >= 0.01, got 1e-300"},
		{name: "lowest", in: "0.01", want: []float64{0.01}},
		{name: "not a number", in: "fast", wantErr: `Rates: "fast" is not a rate`},
		{name: "nan", in: "NaN", wantErr: `Rates: "NaN" is not a rate`},
		{name: "duplicate", in: "2,2", wantErr: "Rates: rate 2 given twice"},
		{name: "empty", in: " ", wantErr: "Rates: must not be empty"},
		// The length is refused before any value is parsed: 50,000 levels
		// took 1.7 s (28 s under -race) when duplicates were searched
		// pairwise, and the sweep API's client gave up first.
		{name: "too many", in: commaLevels(50000), wantErr: "Rates: must have at most 256 values, got 50000"},
		{name: "as many as allowed", in: commaLevels(MaxLevels), want: levelsUpTo(MaxLevels)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, auto, err := ParseRates(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(cliText(err), tt.wantErr) || !IsFieldError(err) {
					t.Fatalf("err = %v, want prefix %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || auto != tt.wantAuto || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v %v %v, want %v %v", got, auto, err, tt.want, tt.wantAuto)
			}
		})
	}
}

// commaLevels returns "1,2,…,n"; levelsUpTo the same as numbers.
func commaLevels(n int) string {
	s := make([]string, n)
	for i := range s {
		s[i] = strconv.Itoa(i + 1)
	}
	return strings.Join(s, ",")
}

func levelsUpTo(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = float64(i + 1)
	}
	return v
}

func TestParseLists(t *testing.T) {
	tests := []struct {
		name    string
		parse   func() (any, error)
		want    any
		wantErr string
	}{
		{name: "concurrency", parse: func() (any, error) { return ParseConcurrency("1,2,8") }, want: []int{1, 2, 8}},
		{name: "concurrency zero", parse: func() (any, error) { return ParseConcurrency("0") }, wantErr: "Concurrency: must be >= 1, got 0"},
		{name: "concurrency text", parse: func() (any, error) { return ParseConcurrency("a") }, wantErr: `Concurrency: "a" is not an integer`},
		{name: "concurrency too many", parse: func() (any, error) { return ParseConcurrency(commaLevels(MaxLevels + 1)) }, wantErr: "Concurrency: must have at most 256 values, got 257"},
		{name: "percentiles skip the defaults", parse: func() (any, error) { return ParsePercentiles("99,75,99.9,75") }, want: []float64{75, 99.9}},
		{name: "percentiles none", parse: func() (any, error) { return ParsePercentiles("") }, want: []float64(nil)},
		{name: "percentiles too many", parse: func() (any, error) { return ParsePercentiles(commaLevels(MaxLevels + 1)) }, wantErr: "Percentiles: must have at most 256 values, got 257"},
		{name: "percentile out of range", parse: func() (any, error) { return ParsePercentiles("101") }, wantErr: `Percentiles: "101" is not a percentile`},
		{name: "goodput", parse: func() (any, error) { return ParseGoodput([]string{"ttft:800", "tpot:50"}) },
			want: slo.SLO{TTFT: 800 * time.Millisecond, TPOT: 50 * time.Millisecond}},
		{name: "goodput in one value", parse: func() (any, error) { return ParseGoodput([]string{"ttft:800 e2el:5000"}) },
			want: slo.SLO{TTFT: 800 * time.Millisecond, E2EL: 5 * time.Second}},
		{name: "goodput bad key", parse: func() (any, error) { return ParseGoodput([]string{"ttfb:1"}) }, wantErr: `SLO: invalid goodput key "ttfb"`},
		{name: "metadata", parse: func() (any, error) { return ParseMetadata([]string{"gpu=H100", "tp=2", "note=a=b"}) },
			want: map[string]string{"gpu": "H100", "tp": "2", "note": "a=b"}},
		{name: "metadata not a pair", parse: func() (any, error) { return ParseMetadata([]string{"gpu"}) }, wantErr: `Metadata: "gpu" is not KEY=VALUE`},
		{name: "metadata vLLM key", parse: func() (any, error) { return ParseMetadata([]string{"request_rate=3"}) }, wantErr: `Metadata: key "request_rate" is reserved`},
		{name: "metadata llmprobe key", parse: func() (any, error) { return ParseMetadata([]string{"validity=x"}) }, wantErr: `Metadata: key "validity" is reserved`},
		{name: "metadata percentile key", parse: func() (any, error) { return ParseMetadata([]string{"p75_ttft_ms=1"}) }, wantErr: `Metadata: key "p75_ttft_ms" is reserved`},
		{name: "metadata twice", parse: func() (any, error) { return ParseMetadata([]string{"a=1", "a=2"}) }, wantErr: `Metadata: key "a" given twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.parse()
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(cliText(err), tt.wantErr) {
					t.Fatalf("err = %v, want prefix %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %#v, %v; want %#v", got, err, tt.want)
			}
		})
	}
}

func TestFlagWorkload(t *testing.T) {
	tests := []struct {
		name             string
		in, out          int
		ratio            float64
		prefix           int
		want             workload.Spec
		wantErr          string
		wantFlagInErrors string
	}{
		{name: "fixed", in: 64, out: 16, want: workload.Spec{InputTokens: workload.Fixed(64), OutputTokens: workload.Fixed(16)}},
		{name: "range and prefix", in: 100, out: 10, ratio: 0.5, prefix: 32, want: workload.Spec{
			InputTokens:  workload.LengthSpec{Dist: workload.DistUniform, Value: 100, RangeRatio: 0.5},
			OutputTokens: workload.LengthSpec{Dist: workload.DistUniform, Value: 10, RangeRatio: 0.5}, PrefixTokens: 32}},
		{name: "negative input", in: -1, out: 1, wantErr: "Workload.InputTokens: must be >= 1, got -1"},
		{name: "zero output", in: 1, out: 0, wantErr: "Workload.OutputTokens: must be >= 1, got 0"},
		{name: "ratio 1", in: 1, out: 1, ratio: 1, wantErr: "Workload.InputTokens.RangeRatio: must be in [0, 1), got 1"},
		{name: "negative prefix", in: 1, out: 1, prefix: -1, wantErr: "Workload.PrefixTokens: must be >= 0, got -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FlagWorkload(tt.in, tt.out, tt.ratio, tt.prefix)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v, %v", got, err)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(c *Config)
		wantErr string
		mode    string
	}{
		{name: "valid ladder", mutate: func(*Config) {}, mode: ModeOpen},
		{name: "valid closed loop", mutate: func(c *Config) { c.Rates, c.Concurrency = nil, []int{1, 2} }, mode: ModeClosed},
		{name: "valid both", mutate: func(c *Config) { c.MaxConcurrency = 4 }, mode: ModeBoth},
		{name: "valid burst", mutate: func(c *Config) { c.Rates = []float64{math.Inf(1)} }, mode: ModeBurst},
		{name: "auto", mutate: func(c *Config) { c.Rates, c.Auto = nil, true }, mode: ModeOpen},
		{name: "no load", mutate: func(c *Config) { c.Rates = nil }, wantErr: "Rates: give exactly one of"},
		{name: "rates and concurrency", mutate: func(c *Config) { c.Concurrency = []int{1} }, wantErr: "Concurrency: give --rates or --concurrency, not both"},
		{name: "closed loop with a cap", mutate: func(c *Config) { c.Rates, c.Concurrency, c.MaxConcurrency = nil, []int{2}, 3 },
			wantErr: "MaxConcurrency: applies to --rates only"},
		{name: "bad api", mutate: func(c *Config) { c.API = "images" }, wantErr: `API: must be completions, chat, responses, embeddings, rerank or messages, got "images"`},
		{name: "bad arrival", mutate: func(c *Config) { c.Arrival = "uniform" }, wantErr: `Arrival: must be one of poisson, gamma, constant, got "uniform"`},
		{name: "bad burstiness", mutate: func(c *Config) { c.Burstiness = 0 }, wantErr: "Burstiness: must be between 0.01 and 1000"},
		{name: "prompts and duration", mutate: func(c *Config) { c.Duration = time.Second }, wantErr: "NumPrompts: give --num-prompts or --duration per step, not both"},
		{name: "neither prompts nor duration", mutate: func(c *Config) { c.NumPrompts = 0 }, wantErr: "Duration: give --num-prompts or --duration per step"},
		{name: "burst needs a count", mutate: func(c *Config) { c.Rates, c.NumPrompts, c.Duration = []float64{math.Inf(1)}, 0, time.Second },
			wantErr: "NumPrompts: --rates inf sends a step's requests at once"},
		{name: "fresh prefix without prefix", mutate: func(c *Config) { c.FreshPrefix = true }, wantErr: "FreshPrefix: needs --prefix-len > 0"},
		{name: "rounds", mutate: func(c *Config) { c.Rounds = 0 }, wantErr: "Rounds: must be in [1, 100], got 0"},
		{name: "rounds over MaxRounds", mutate: func(c *Config) { c.Rounds = MaxRounds + 1 }, wantErr: "Rounds: must be in [1, 100], got 101"},
		{name: "bad workload file", mutate: func(c *Config) {
			c.WorkloadSource = "w.yml"
			c.Workload.InputTokens = workload.LengthSpec{Dist: "zipf"}
		}, wantErr: `Workload: w.yml: input_tokens: unknown dist "zipf"`},
		{name: "out", mutate: func(c *Config) { c.OutDir = "" }, wantErr: "OutDir: must not be empty"},
		{name: "a workload file's trace", mutate: func(c *Config) {
			c.WorkloadSource = "w.yml"
			c.Workload = workload.Spec{Trace: &workload.TraceSpec{Path: "t.jsonl"}}
		}, wantErr: "Workload: trace: give the trace with --trace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testConfig(t, "http://127.0.0.1:1")
			tt.mutate(&c)
			err := c.Validate()
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(cliText(err), tt.wantErr) || !IsFieldError(err) {
					t.Fatalf("err = %v, want prefix %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Mode(); got != tt.mode {
				t.Errorf("mode = %s, want %s", got, tt.mode)
			}
		})
	}
}

// lagStats are the stats of n successful requests of which late were sent
// lagMS late and the rest 0.5 ms late.
func lagStats(n, late int, lagMS float64) func() Stats {
	return func() Stats {
		t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
		recs := make([]prober.Record, n)
		for i := range recs {
			lag := 500 * time.Microsecond
			if i%(n/late) == 0 && i/(n/late) < late {
				lag = time.Duration(lagMS * float64(time.Millisecond))
			}
			sched := t0.Add(time.Duration(i) * 10 * time.Millisecond)
			recs[i] = prober.Record{Scheduled: sched, Sent: sched.Add(lag), SendLag: lag, TTFT: time.Millisecond,
				E2E: 2 * time.Millisecond, CompletionTokens: 1, OutputTokensRequested: 1, FinishReason: "length"}
		}
		return accumulate(recs, StatsOptions{Duration: time.Duration(n) * 10 * time.Millisecond})
	}
}

func TestJudge(t *testing.T) {
	base := func() Stats {
		s := accumulate(fixedRecords(), StatsOptions{Duration: 4 * time.Second})
		return s
	}
	tests := []struct {
		name        string
		stats       func() Stats
		cpu         float64
		idle        IdleProof
		interrupted bool
		opts        ValidityOptions
		wantFlags   []string
	}{
		{name: "errors: 40% failed", stats: base, cpu: 0.1, idle: IdleProof{Status: IdleProven}, wantFlags: []string{FlagErrors}},
		{name: "error threshold raised", stats: base, cpu: 0.1, idle: IdleProof{Status: IdleProven}, opts: ValidityOptions{MaxErrorRate: 0.5}, wantFlags: []string{}},
		{name: "two of five sends above 1 ms", stats: base, cpu: 0.1, idle: IdleProof{Status: IdleProven},
			opts: ValidityOptions{MaxSendLag: time.Millisecond, MaxErrorRate: 0.5}, wantFlags: []string{FlagClientSaturated}},
		{name: "one of five sends above 2 ms is not saturation", stats: base, cpu: 0.1, idle: IdleProof{Status: IdleProven},
			opts: ValidityOptions{MaxSendLag: 2 * time.Millisecond, MaxErrorRate: 0.5}, wantFlags: []string{}},
		// The default limit (10 ms): with fewer than 100 requests the p99
		// is the maximum, so one late send must not flag the step.
		{name: "default limit: 1 of 40 sends late by 12 ms", stats: lagStats(40, 1, 12), cpu: 0.1, idle: IdleProof{Status: IdleProven},
			wantFlags: []string{}},
		{name: "default limit: 2 of 40 sends late by 12 ms", stats: lagStats(40, 2, 12), cpu: 0.1, idle: IdleProof{Status: IdleProven},
			wantFlags: []string{FlagClientSaturated}},
		{name: "default limit: 150 sends, p99 below 10 ms", stats: lagStats(150, 2, 12), cpu: 0.1, idle: IdleProof{Status: IdleProven},
			wantFlags: []string{}},
		{name: "default limit: 150 sends, p99 12 ms", stats: lagStats(150, 3, 12), cpu: 0.1, idle: IdleProof{Status: IdleProven},
			wantFlags: []string{FlagClientSaturated}},
		{name: "cpu above 0.9 cores", stats: base, cpu: 1.2, idle: IdleProof{Status: IdleProven}, opts: ValidityOptions{MaxErrorRate: 0.5},
			wantFlags: []string{FlagClientSaturated}},
		{name: "cpu check off", stats: base, cpu: 1.2, idle: IdleProof{Status: IdleProven}, opts: ValidityOptions{MaxErrorRate: 0.5, MaxClientCPU: -1},
			wantFlags: []string{}},
		{name: "not idle, not recorded, interrupted", stats: base, cpu: -1, idle: IdleProof{Status: IdleNotIdle, Running: 3}, interrupted: true,
			opts: ValidityOptions{MaxErrorRate: 0.5}, wantFlags: []string{FlagNotIdle, FlagInterrupted}},
		{name: "idle not recorded is not a flag", stats: base, cpu: -1, idle: IdleProof{Status: IdleNotRecorded},
			opts: ValidityOptions{MaxErrorRate: 0.5}, wantFlags: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Judge(tt.stats(), tt.cpu, tt.idle, tt.interrupted, tt.opts)
			if !reflect.DeepEqual(v.Flags, tt.wantFlags) || v.Valid != (len(tt.wantFlags) == 0) || len(v.Reasons) != len(v.Flags) {
				t.Errorf("flags %v reasons %v valid %v (sends over the limit %d); want %v", v.Flags, v.Reasons, v.Valid, v.SendsOverLimit, tt.wantFlags)
			}
		})
	}
}

func TestStepJSONKeyOrder(t *testing.T) {
	r := &Result{Date: "20250102-030405", Backend: "openai", ModelID: "m", TokenizerID: "m", Burstiness: 1,
		Metadata: map[string]string{"gpu": "x"}, MetadataOrder: []string{"gpu"}}
	st := &Step{Label: "rate=4", Level: 4, Mode: ModeOpen,
		Stats: accumulate(fixedRecords(), StatsOptions{Duration: 4 * time.Second, Percentiles: []float64{99.9}, RequestedRate: 4})}
	b, err := json.Marshal(r.StepJSON(st))
	if err != nil {
		t.Fatal(err)
	}
	// vllm bench serve's order (vllm-reference.md §1.6), metadata after
	// num_prompts, request_goodput null without --goodput.
	want := []string{`"date":`, `"endpoint_type":`, `"backend":`, `"label":`, `"model_id":`, `"tokenizer_id":`, `"num_prompts":5`,
		`"gpu":"x"`, `"request_rate":4`, `"burstiness":1`, `"max_concurrency":null`, `"duration":4`, `"completed":3`, `"failed":2`,
		`"total_input_tokens":42`, `"total_output_tokens":8`, `"request_throughput":0.75`, `"request_goodput":null`,
		`"output_throughput":2`, `"total_token_throughput":12.5`, `"max_output_tokens_per_s":6`, `"max_concurrent_requests":2`,
		`"mean_ttft_ms":`, `"median_ttft_ms":100`, `"std_ttft_ms":`, `"p50_ttft_ms":100`, `"p90_ttft_ms":180`, `"p99_ttft_ms":198`,
		`"p99.9_ttft_ms":`, `"mean_tpot_ms":60`, `"mean_itl_ms":60`, `"mean_e2el_ms":`, `"step":`, `"in_knee":`}
	s := string(b)
	at := 0
	for _, w := range want {
		i := strings.Index(s[at:], w)
		if i < 0 {
			t.Fatalf("%s missing or out of order after offset %d in %s", w, at, s)
		}
		at += i
	}
	if strings.Contains(s, "client_queue_time_ms\":") && strings.Contains(s, `"mean_client_queue_time_ms"`) {
		t.Error("client queue keys without --max-concurrency")
	}
}

func TestFigureJSON(t *testing.T) {
	tests := []struct {
		name string
		f    Figure
		want string
	}{
		{"known", Figure{Value: 1.5, Known: true}, "1.5"},
		{"unknown", Figure{}, `"not-recorded"`},
		{"nan is unknown", knownFigure(math.NaN(), true), `"not-recorded"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.f)
			if err != nil || string(b) != tt.want {
				t.Fatalf("got %s %v, want %s", b, err, tt.want)
			}
			var back Figure
			if err := json.Unmarshal(b, &back); err != nil || back.Known != tt.f.Known && !math.IsNaN(tt.f.Value) {
				t.Errorf("round trip %+v %v", back, err)
			}
		})
	}
}

// TestConfigMaxStepBytes: 0 is the default cap, a negative cap names the
// field.
func TestConfigMaxStepBytes(t *testing.T) {
	var c Config
	if got := c.StepByteCap(); got != DefaultMaxStepBytes {
		t.Errorf("StepByteCap() of 0 = %d, want %d", got, DefaultMaxStepBytes)
	}
	c.MaxStepBytes = 4096
	if got := c.StepByteCap(); got != 4096 {
		t.Errorf("StepByteCap() = %d, want 4096", got)
	}
	c = testConfig(t, "http://127.0.0.1:1")
	c.MaxStepBytes = -1
	var fe *FieldError
	if err := c.Validate(); !errors.As(err, &fe) || fe.Field != "MaxStepBytes" {
		t.Errorf("Validate() = %v, want a FieldError naming MaxStepBytes", err)
	}
}
