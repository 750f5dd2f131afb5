package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
)

// Settings are `llmprobe bench`'s command-line settings as given (AddFlags
// binds them): zero values and empty lists keep the figures of
// DefaultOptions, or of QuickOptions with Quick. Options turns them into
// Options; WorkDir makes the work directory.
type Settings struct {
	Quick, NoPin, Realtime bool
	// Sections, Concurrency, Rates and ArrivalRates are comma-separated
	// lists.
	Sections, Concurrency, Rates, ArrivalRates string
	StepDuration, DaemonDuration, DaemonWarmup time.Duration
	ArrivalCount                               int
	TTFT, Gap                                  time.Duration
	Tokens                                     int
	// Dir is the work directory (empty: a temporary one, removed
	// afterwards unless Keep); JSON the file of the JSON report (empty:
	// none).
	Dir, JSON string
	Keep      bool
}

// AddFlags adds the flags of s to cmd.
func AddFlags(cmd *kingpin.CmdClause, s *Settings) {
	cmd.Flag("quick", "Shorter run: 2 s steps, 4 capacity rates, 2,000 arrivals per run, a 20 s daemon window.").BoolVar(&s.Quick)
	cmd.Flag("sections", "Sections to run, comma-separated: "+strings.Join(Sections, ", ")+".").
		Default(strings.Join(Sections, ",")).StringVar(&s.Sections)
	cmd.Flag("concurrency", "Accuracy levels (concurrent streams), comma-separated (default 1,64,256,1024).").StringVar(&s.Concurrency)
	cmd.Flag("rates", "Capacity ladder in req/s, ascending, comma-separated (default 250,500,1000,1500,2000,2500,3000,4000; "+
		"--quick 500,1000,2000,3000); it stops after two failing rates once one streamed 50k tokens/s.").StringVar(&s.Rates)
	cmd.Flag("step-duration", "Measured time of one accuracy or capacity step (default 5s, --quick 2s).").DurationVar(&s.StepDuration)
	cmd.Flag("arrival.count", "Arrivals per arrival-fidelity run (default 10000, --quick 2000).").IntVar(&s.ArrivalCount)
	cmd.Flag("arrival.rates", "Arrival-fidelity rates in req/s, comma-separated (default 50,500).").StringVar(&s.ArrivalRates)
	cmd.Flag("daemon.duration", "Measured time of the daemon footprint (default 2m, --quick 20s).").DurationVar(&s.DaemonDuration)
	cmd.Flag("daemon.warmup", "Time the daemon runs before its footprint is measured (default 10s, --quick 3s).").
		DurationVar(&s.DaemonWarmup)
	cmd.Flag("light.ttft", "Simulator stream: first token after this (default 20ms).").DurationVar(&s.TTFT)
	cmd.Flag("light.gap", "Simulator stream: time between token events (default 5ms).").DurationVar(&s.Gap)
	cmd.Flag("light.tokens", "Simulator stream: tokens per request (default 64).").IntVar(&s.Tokens)
	cmd.Flag("no-pin", "Do not pin llmprobe and the simulator to CPUs of their own with taskset.").BoolVar(&s.NoPin)
	cmd.Flag("realtime", "Run llmprobe and the simulator under chrt -f 1 (SCHED_FIFO; needs root or CAP_SYS_NICE and the pinning; GOMAXPROCS=1), "+
		"so that other load on the machine cannot delay them: the read-delay tails are then llmprobe's own. "+
		"Not what a prober gets by default; the placement line says so.").BoolVar(&s.Realtime)
	cmd.Flag("dir", "Work directory for the run directories, logs and trace (default: a temporary directory, removed "+
		"afterwards unless --keep).").StringVar(&s.Dir)
	cmd.Flag("keep", "Keep the work directory.").BoolVar(&s.Keep)
	cmd.Flag("json", "Also write the report as JSON to this file.").StringVar(&s.JSON)
}

// Options returns the benchmark's Options of s (Dir, Progress, Exe and Env
// are the caller's). An invalid list is an error naming its flag.
func (s *Settings) Options() (Options, error) {
	o := DefaultOptions()
	if s.Quick {
		o = QuickOptions()
	}
	o.Pin = !s.NoPin
	o.Realtime = s.Realtime
	o.Sections = splitList(s.Sections)
	var err error
	if o.Concurrency, err = listOr(s.Concurrency, o.Concurrency, positiveInt); err != nil {
		return o, fmt.Errorf("--concurrency: %w", err)
	}
	if o.Rates, err = listOr(s.Rates, o.Rates, positive); err != nil {
		return o, fmt.Errorf("--rates: %w", err)
	}
	if o.ArrivalRates, err = listOr(s.ArrivalRates, o.ArrivalRates, positive); err != nil {
		return o, fmt.Errorf("--arrival.rates: %w", err)
	}
	for _, p := range []struct{ v, set *time.Duration }{
		{&o.StepDuration, &s.StepDuration}, {&o.DaemonDuration, &s.DaemonDuration}, {&o.DaemonWarmup, &s.DaemonWarmup},
		{&o.TTFT, &s.TTFT}, {&o.Gap, &s.Gap},
	} {
		if *p.set > 0 {
			*p.v = *p.set
		}
	}
	if s.ArrivalCount > 0 {
		o.ArrivalCount = s.ArrivalCount
	}
	if s.Tokens > 0 {
		o.Tokens = s.Tokens
	}
	return o, nil
}

// WorkDir returns the work directory of s: Dir, created when missing, or a
// new temporary directory. cleanup removes a temporary one unless Keep.
func (s *Settings) WorkDir() (dir string, cleanup func(), err error) {
	if s.Dir != "" {
		return s.Dir, func() {}, os.MkdirAll(s.Dir, 0o755)
	}
	if dir, err = os.MkdirTemp("", "llmprobe-bench-"); err != nil {
		return "", nil, err
	}
	if s.Keep {
		return dir, func() {}, nil
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

// WriteJSON writes r as indented JSON to path.
func WriteJSON(path string, r *Report) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func splitList(s string) []string {
	var out []string
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// listOr parses the comma-separated list s, or returns def when s is
// empty (the flag not given).
func listOr[T any](s string, def []T, parse func(string) (T, error)) ([]T, error) {
	if s == "" {
		return def, nil
	}
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

func positive(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v > 0) {
		return 0, fmt.Errorf("must be > 0")
	}
	return v, nil
}

func positiveInt(s string) (int, error) {
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 {
		return 0, fmt.Errorf("must be >= 1")
	}
	return v, nil
}
