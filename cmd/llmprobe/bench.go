package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-kit/log/level"

	"github.com/llmprobe/llmprobe/internal/bench"
)

func init() {
	register(func(app *kingpin.Application) (string, action) {
		cmd := app.Command("bench", "Benchmark llmprobe itself on loopback: read-delay accuracy against the simulator's "+
			"write times, open-loop capacity and CPU per streamed token, arrival fidelity, and the daemon's footprint; "+
			"prints one table (about 9 minutes, --quick about 2). See docs/performance.md.")
		var (
			quick, noPin, realtime bool
			sections, conc, rates  string
			arrivalRates, jsonPath string
			dir                    string
			keep                   bool
			step, daemonDur        time.Duration
			daemonWarmup           time.Duration
			arrivals               int
			ttft, gap              time.Duration
			tokens                 int
		)
		cmd.Flag("quick", "Shorter run: 2 s steps, 4 capacity rates, 2,000 arrivals per run, a 20 s daemon window.").BoolVar(&quick)
		cmd.Flag("sections", "Sections to run, comma-separated: "+strings.Join(bench.Sections, ", ")+".").
			Default(strings.Join(bench.Sections, ",")).StringVar(&sections)
		cmd.Flag("concurrency", "Accuracy levels (concurrent streams), comma-separated (default 1,64,256,1024).").StringVar(&conc)
		cmd.Flag("rates", "Capacity ladder in req/s, ascending, comma-separated (default 250,500,1000,1500,2000,2500,3000,4000; "+
			"--quick 500,1000,2000,3000); it stops after two failing rates once one streamed 50k tokens/s.").StringVar(&rates)
		cmd.Flag("step-duration", "Measured time of one accuracy or capacity step (default 5s, --quick 2s).").DurationVar(&step)
		cmd.Flag("arrival.count", "Arrivals per arrival-fidelity run (default 10000, --quick 2000).").IntVar(&arrivals)
		cmd.Flag("arrival.rates", "Arrival-fidelity rates in req/s, comma-separated (default 50,500).").StringVar(&arrivalRates)
		cmd.Flag("daemon.duration", "Measured time of the daemon footprint (default 2m, --quick 20s).").DurationVar(&daemonDur)
		cmd.Flag("daemon.warmup", "Time the daemon runs before its footprint is measured (default 10s, --quick 3s).").
			DurationVar(&daemonWarmup)
		cmd.Flag("light.ttft", "Simulator stream: first token after this (default 20ms).").DurationVar(&ttft)
		cmd.Flag("light.gap", "Simulator stream: time between token events (default 5ms).").DurationVar(&gap)
		cmd.Flag("light.tokens", "Simulator stream: tokens per request (default 64).").IntVar(&tokens)
		cmd.Flag("no-pin", "Do not pin llmprobe and the simulator to CPUs of their own with taskset.").BoolVar(&noPin)
		cmd.Flag("realtime", "Run llmprobe and the simulator under chrt -f 1 (SCHED_FIFO; needs root or CAP_SYS_NICE and the pinning; GOMAXPROCS=1), "+
			"so that other load on the machine cannot delay them: the read-delay tails are then llmprobe's own. "+
			"Not what a prober gets by default; the placement line says so.").BoolVar(&realtime)
		cmd.Flag("dir", "Work directory for the run directories, logs and trace (default: a temporary directory, removed "+
			"afterwards unless --keep).").StringVar(&dir)
		cmd.Flag("keep", "Keep the work directory.").BoolVar(&keep)
		cmd.Flag("json", "Also write the report as JSON to this file.").StringVar(&jsonPath)
		return cmd.FullCommand(), func(e *env) int {
			o := bench.DefaultOptions()
			if quick {
				o = bench.QuickOptions()
			}
			o.Pin = !noPin
			o.Realtime = realtime
			o.Progress = e.stderr
			o.Env = benchEnv
			o.Sections = splitList(sections)
			var err error
			if conc != "" {
				if o.Concurrency, err = parseList(conc, parsePositiveInt); err != nil {
					return usageError(e, "--concurrency", err)
				}
			}
			if rates != "" {
				if o.Rates, err = parseList(rates, parsePositive); err != nil {
					return usageError(e, "--rates", err)
				}
			}
			if arrivalRates != "" {
				if o.ArrivalRates, err = parseList(arrivalRates, parsePositive); err != nil {
					return usageError(e, "--arrival.rates", err)
				}
			}
			for _, p := range []struct {
				v   *time.Duration
				set time.Duration
			}{{&o.StepDuration, step}, {&o.DaemonDuration, daemonDur}, {&o.DaemonWarmup, daemonWarmup}, {&o.TTFT, ttft}, {&o.Gap, gap}} {
				if p.set > 0 {
					*p.v = p.set
				}
			}
			if arrivals > 0 {
				o.ArrivalCount = arrivals
			}
			if tokens > 0 {
				o.Tokens = tokens
			}
			if dir == "" {
				d, err := os.MkdirTemp("", "llmprobe-bench-")
				if err != nil {
					level.Error(e.logger).Log("msg", "work directory", "err", err)
					return 1
				}
				dir = d
				if !keep {
					defer os.RemoveAll(d)
				}
			} else if err := os.MkdirAll(dir, 0o755); err != nil {
				level.Error(e.logger).Log("msg", "work directory", "err", err)
				return 1
			}
			o.Dir = dir
			rep, runErr := bench.Run(e.ctx, o)
			if rep != nil {
				if err := bench.WriteTable(e.stdout, rep); err != nil {
					level.Error(e.logger).Log("msg", "write table", "err", err)
					return 1
				}
				if jsonPath != "" {
					b, _ := json.MarshalIndent(rep, "", "  ")
					if err := os.WriteFile(jsonPath, append(b, '\n'), 0o644); err != nil {
						level.Error(e.logger).Log("msg", "write report", "err", err)
						return 1
					}
				}
			}
			if runErr != nil {
				level.Error(e.logger).Log("msg", "benchmark failed", "err", runErr, "dir", dir)
				return 1
			}
			if keep {
				fmt.Fprintf(e.stderr, "work directory kept: %s\n", dir)
			}
			return 0
		}
	})
}

// benchEnv is added to the environment of the benchmark's children (tests
// set it to make the test binary act as llmprobe).
var benchEnv []string

func splitList(s string) []string {
	var out []string
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func parseList[T any](s string, parse func(string) (T, error)) ([]T, error) {
	var out []T
	for _, f := range splitList(s) {
		v, err := parse(f)
		if err != nil {
			return nil, fmt.Errorf("invalid value %q", f)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty list")
	}
	return out, nil
}

func parsePositive(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v > 0) {
		return 0, fmt.Errorf("must be > 0")
	}
	return v, nil
}

func parsePositiveInt(s string) (int, error) {
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 {
		return 0, fmt.Errorf("must be >= 1")
	}
	return v, nil
}

func usageError(e *env, flag string, err error) int {
	fmt.Fprintf(e.stderr, "llmprobe: error: %s: %v, try --help\n", flag, err)
	return 2
}
