package simulator

import (
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"
)

// parseFlags parses args the way `llmprobe simulate` does: AddFlags plus
// Config.Validate as the command's validator.
func parseFlags(args ...string) (Config, error) {
	app := kingpin.New("test", "")
	app.Terminate(nil)
	app.UsageWriter(io.Discard)
	app.ErrorWriter(io.Discard)
	cmd := app.Command("simulate", "")
	cfg := DefaultConfig()
	AddFlags(cmd, &cfg)
	cmd.Validate(func(*kingpin.CmdClause) error { return cfg.Validate() })
	_, err := app.Parse(append([]string{"simulate"}, args...))
	return cfg, err
}

func TestFlagValidation(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string // substring; empty: valid
	}{
		{name: "defaults", args: nil},
		{name: "all set", args: []string{"--model=m", "--max-num-seqs=4", "--max-num-batched-tokens=64", "--max-model-len=128",
			"--block-size=8", "--num-gpu-blocks=16", "--no-enable-prefix-caching", "--step-base=1ms", "--step-per-prefill-token=1us",
			"--step-per-seq=0s", "--eos-probability=0", "--seed=-7", "--fault.http-429=0.1", "--fault.http-500=1",
			"--fault.http-503=0", "--fault.stall-before-first-token=0.5", "--fault.stall-mid-stream=0.5", "--fault.stall-duration=1s",
			"--fault.cut-stream=0.1", "--fault.malformed-event=0.1", "--fault.connection-reset=0.1", "--fault.slow-drip=0.1",
			"--fault.slow-drip-interval=0s", "--fault.hang=0.01"}},
		{name: "max-num-seqs 0", args: []string{"--max-num-seqs=0"}, wantErr: "--max-num-seqs must be >= 1, got 0"},
		{name: "max-num-seqs negative", args: []string{"--max-num-seqs=-1"}, wantErr: "--max-num-seqs must be >= 1"},
		{name: "max-num-seqs not a number", args: []string{"--max-num-seqs=many"}, wantErr: `--max-num-seqs: invalid value "many"`},
		{name: "duration not a duration", args: []string{"--step-base=fast"}, wantErr: `--step-base: invalid value "fast"`},
		{name: "probability not a number", args: []string{"--fault.hang=often"}, wantErr: `--fault.hang: invalid value "often"`},
		{name: "seed not a number", args: []string{"--seed=x"}, wantErr: `--seed: invalid value "x"`},
		{name: "budget below seqs", args: []string{"--max-num-seqs=64", "--max-num-batched-tokens=32"}, wantErr: "--max-num-batched-tokens (32) must be >= --max-num-seqs (64)"},
		{name: "budget 0", args: []string{"--max-num-batched-tokens=0"}, wantErr: "--max-num-batched-tokens must be >= 1"},
		{name: "max-model-len 1", args: []string{"--max-model-len=1"}, wantErr: "--max-model-len must be >= 2"},
		{name: "legacy names for vLLM", args: []string{"--legacy-metric-names", "--enable-prompt-tokens-details"}},
		{name: "legacy names of another engine", args: []string{"--engine=sglang", "--legacy-metric-names"},
			wantErr: `--legacy-metric-names needs --engine vllm (vLLM's names), got "sglang"`},
		{name: "metrics format", args: []string{"--metrics-format=openmetrics"}},
		{name: "metrics format unknown", args: []string{"--metrics-format=json"}, wantErr: "enum value must be one of text,openmetrics,protobuf, got 'json'"},
		{name: "vllm frontend rust", args: []string{"--vllm-frontend=rust"}},
		{name: "vllm frontend rust with openmetrics", args: []string{"--vllm-frontend=rust", "--metrics-format=openmetrics"}},
		{name: "vllm frontend unknown", args: []string{"--vllm-frontend=go"}, wantErr: "enum value must be one of python,rust, got 'go'"},
		{name: "vllm frontend rust with protobuf", args: []string{"--vllm-frontend=rust", "--metrics-format=protobuf"},
			wantErr: `--vllm-frontend rust serves /metrics as OpenMetrics only: leave --metrics-format unset, got "protobuf"`},
		{name: "vllm frontend rust with legacy names", args: []string{"--vllm-frontend=rust", "--legacy-metric-names"},
			wantErr: "--vllm-frontend rust has no legacy metric names"},
		{name: "vllm frontend rust on sglang", args: []string{"--vllm-frontend=rust", "--engine=sglang"},
			wantErr: `--vllm-frontend rust needs --engine vllm, got "sglang"`},
		{name: "block-size 0", args: []string{"--block-size=0"}, wantErr: "--block-size must be >= 1"},
		{name: "num-gpu-blocks negative", args: []string{"--num-gpu-blocks=-5"}, wantErr: "--num-gpu-blocks must be >= 1"},
		{name: "kv too small", args: []string{"--num-gpu-blocks=2", "--block-size=16", "--max-model-len=64"}, wantErr: "cannot hold one sequence of --max-model-len (64)"},
		{name: "step-base 0", args: []string{"--step-base=0s"}, wantErr: "--step-base must be > 0"},
		{name: "step-per-seq negative", args: []string{"--step-per-seq=-1ms"}, wantErr: "--step-per-seq must be >= 0"},
		{name: "step-per-prefill-token negative", args: []string{"--step-per-prefill-token=-1us"}, wantErr: "--step-per-prefill-token must be >= 0"},
		{name: "eos above 1", args: []string{"--eos-probability=2"}, wantErr: "--eos-probability must be in [0, 1]"},
		{name: "empty model", args: []string{"--model= "}, wantErr: "--model must not be empty"},
		{name: "429 above 1", args: []string{"--fault.http-429=1.5"}, wantErr: "--fault.http-429 must be a probability in [0, 1], got 1.5"},
		{name: "500 negative", args: []string{"--fault.http-500=-0.1"}, wantErr: "--fault.http-500 must be a probability"},
		{name: "503 NaN", args: []string{"--fault.http-503=NaN"}, wantErr: "--fault.http-503 must be a probability"},
		{name: "stall negative", args: []string{"--fault.stall-before-first-token=-1"}, wantErr: "--fault.stall-before-first-token must be a probability"},
		{name: "stall mid above 1", args: []string{"--fault.stall-mid-stream=3"}, wantErr: "--fault.stall-mid-stream must be a probability"},
		{name: "cut above 1", args: []string{"--fault.cut-stream=1.01"}, wantErr: "--fault.cut-stream must be a probability"},
		{name: "malformed negative", args: []string{"--fault.malformed-event=-1"}, wantErr: "--fault.malformed-event must be a probability"},
		{name: "reset above 1", args: []string{"--fault.connection-reset=9"}, wantErr: "--fault.connection-reset must be a probability"},
		{name: "drip above 1", args: []string{"--fault.slow-drip=1.1"}, wantErr: "--fault.slow-drip must be a probability"},
		{name: "hang negative", args: []string{"--fault.hang=-0.5"}, wantErr: "--fault.hang must be a probability"},
		{name: "stall duration negative", args: []string{"--fault.stall-duration=-1s"}, wantErr: "--fault.stall-duration must be >= 0"},
		{name: "drip interval negative", args: []string{"--fault.slow-drip-interval=-1ms"}, wantErr: "--fault.slow-drip-interval must be >= 0"},
		{name: "light", args: []string{"--light", "--light.ttft=1ms", "--light.gap=0s", "--light.tokens=3"}},
		{name: "light tokens 0", args: []string{"--light", "--light.tokens=0"}, wantErr: "--light.tokens must be in [1, 1048576], got 0"},
		{name: "light gap negative", args: []string{"--light", "--light.gap=-1ms"}, wantErr: "--light.gap must be >= 0"},
		{name: "unknown flag", args: []string{"--fault.bogus=1"}, wantErr: "unknown long flag '--fault.bogus'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseFlags(tt.args...)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want it to contain %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans several lines: %q", err)
			}
		})
	}
}

func TestFlagsSetConfig(t *testing.T) {
	cfg, err := parseFlags("--model=m", "--max-num-seqs=4", "--num-gpu-blocks=600", "--no-enable-prefix-caching",
		"--step-per-prefill-token=3us", "--fault.hang=0.25", "--fault.stall-duration=2s", "--trace-file=/tmp/x")
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultConfig()
	want.Model, want.MaxNumSeqs, want.NumGPUBlocks, want.EnablePrefixCaching = "m", 4, 600, false
	want.StepPerPrefillToken, want.TraceFile = 3*time.Microsecond, "/tmp/x"
	want.Faults.Hang, want.Faults.StallDuration = 0.25, 2*time.Second
	if cfg != want {
		t.Errorf("config\n%+v\nwant\n%+v", cfg, want)
	}
	def, err := parseFlags()
	if err != nil || def != DefaultConfig() {
		t.Errorf("flag defaults differ from DefaultConfig: %+v, %v", def, err)
	}
	// An explicit --seed, even the default value, makes generated ids repeat.
	seeded, err := parseFlags("--seed=0")
	if err != nil || !seeded.DeterministicIDs || seeded.Seed != 0 {
		t.Errorf("--seed=0: DeterministicIDs %v, seed %d, %v", seeded.DeterministicIDs, seeded.Seed, err)
	}
}

// TestCapacityFormula pins Config.Capacity to hand-computed values (the
// worked examples of docs/simulator.md).
func TestCapacityFormula(t *testing.T) {
	tests := []struct {
		name    string
		mut     func(*Config)
		in, out int
		want    float64
	}{
		// B = min(256, 24576/ceil(1151/16)=341) = 256;
		// X = 256 / (128*(0.010+0.0001*256) + 0.00002*256*1024).
		{name: "defaults 1024/128", mut: func(*Config) {}, in: 1024, out: 128, want: 256 / (128*(0.010+0.0001*256) + 0.00002*256*1024)},
		// KV-bound batch: a sequence grows from 64 to 72 blocks, holding
		// (64 + 16*(65+...+71) + 15*72)/128 = 8760/128 blocks on average,
		// so B = min(256, 16384*128/8760 ≈ 239.4).
		{name: "kv-bound batch 1024/128", mut: func(c *Config) { c.NumGPUBlocks = 16384 }, in: 1024, out: 128,
			want: func() float64 {
				b := 16384.0 * 128 / 8760
				return b / (128*(0.010+0.0001*b) + 0.00002*b*1024)
			}()},
		// No growth past the prompt's 2 blocks (24+8-1 = 31 tokens): the
		// pool is partitioned exactly, B = floor(17/2) = 8.
		{name: "kv-bound without growth", mut: func(c *Config) { c.NumGPUBlocks = 17 }, in: 24, out: 8,
			want: 8 / (8*(0.010+0.0001*8) + 0.00002*8*24)},
		// The audit's regime: blocks 2..6, mean 284/64, B = 40*64/284 ≈ 9.01
		// (the full-length formula gave floor(40/6) = 6).
		{name: "kv-bound with growth 32/64", mut: func(c *Config) { c.NumGPUBlocks, c.MaxNumSeqs = 40, 16 }, in: 32, out: 64,
			want: func() float64 {
				b := 40.0 * 64 / 284
				return b / (64*(0.010+0.0001*b) + 0.00002*b*32)
			}()},
		{name: "full-length sequence does not fit", mut: func(c *Config) { c.NumGPUBlocks = 1 }, in: 24, out: 8, want: 0},
		{name: "huge output does not overflow", mut: func(*Config) {}, in: 10, out: math.MaxInt, want: 0},
		// B = 256 (KV holds 24576/32 = 768); X = 256/(256*(0.010+0.0256) + 0.00002*256*256).
		{name: "defaults 256/256", mut: func(*Config) {}, in: 256, out: 256, want: 256 / (256*(0.010+0.0256) + 0.00002*256*256)},
		// T = 32 < B*(I+O-1)/O = 8*71/8 = 71: budget-bound.
		// P = 32*64/71, D = 32-P, N = D+1+P/64, X = 32/(71*(0.004+0.00001*P+0.0002*N)).
		{name: "budget-bound", mut: func(c *Config) {
			c.MaxNumSeqs, c.MaxNumBatchedTokens, c.StepBase, c.StepPerSeq, c.StepPerPrefillToken = 8, 32, 4*time.Millisecond, 200*time.Microsecond, 10*time.Microsecond
		}, in: 64, out: 8, want: func() float64 {
			p := 32.0 * 64 / 71
			n := 32 - p + 1 + p/64
			return 32 / (71 * (0.004 + 0.00001*p + 0.0002*n))
		}()},
		{name: "too long for the context", mut: func(c *Config) { c.MaxModelLen = 100 }, in: 90, out: 20, want: 0},
		{name: "zero output", mut: func(*Config) {}, in: 10, out: 0, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.mut(&c)
			if got := c.Capacity(tt.in, tt.out); math.Abs(got-tt.want) > 1e-9*math.Max(1, tt.want) {
				t.Errorf("Capacity(%d, %d) = %v, want %v", tt.in, tt.out, got, tt.want)
			}
		})
	}
}
