package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/common/config"

	"github.com/llmprobe/llmprobe/internal/report"
	"github.com/llmprobe/llmprobe/internal/rundir"
	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/prober"
	lpconfig "github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/fingerprint"
	"github.com/llmprobe/llmprobe/prober/sweep"
	"github.com/llmprobe/llmprobe/prober/workload"
)

func init() {
	register(func(app *kingpin.Application) (string, action) {
		f := &sweepFlags{}
		cmd := app.Command("sweep", "Run a fixed workload at increasing load against an OpenAI-compatible endpoint "+
			"(vLLM first), each step started from an idle server, and find the capacity knee: the highest load at "+
			"which goodput still keeps up with the offered rate and the SLO p99s hold. Writes a run directory with "+
			"manifest.json (fingerprint + SHA-256 of every file), result.json (vllm bench serve keys per step), "+
			"records.jsonl, /metrics snapshots, analysis.md and plots. Without --target it sweeps the built-in "+
			"simulator. See docs/sweep.md.")
		addSweepFlags(cmd, f, sweep.SurfaceSweep)
		return cmd.FullCommand(), func(e *env) int { return runSweep(e, f) }
	})
}

// buildSweepConfig turns the flags into a validated sweep.Config: the
// table's settings (applySettings), then the ones read from files or built
// together, then Config.Validate, the only validation. Errors are
// *flagError or *sweep.FieldError (exit 2; sweepErrorText names the flag)
// unless reading a file failed.
func buildSweepConfig(f *sweepFlags) (sweep.Config, error) {
	c := sweep.Config{Target: strings.TrimRight(f.str("target"), "/")}
	if err := applySettings(f, &c); err != nil {
		return c, err
	}
	if f.num("num-prompts") == 0 || f.isSet("duration") {
		c.Duration = f.dur("duration")
	}
	for _, apply := range []func(*sweepFlags, *sweep.Config) error{
		applyWorkload, applyLoad, applyGoodput, applyDecision, applyStepBytes, applyCredentials, applySweepTraceFlags,
	} {
		if err := apply(f, &c); err != nil {
			return c, err
		}
	}
	return c, c.Validate()
}

// applyWorkload sets the workload of --dataset, --workload or the length
// flags, and the request flags over it.
func applyWorkload(f *sweepFlags, c *sweep.Config) error {
	file := f.str("workload")
	switch {
	case f.str("dataset") != "":
		if err := applyDataset(f, c); err != nil {
			return err
		}
	case file != "":
		if f.isSet("input-len") || f.isSet("output-len") || f.isSet("range-ratio") {
			return &flagError{flag: "workload", err: errors.New("give --workload or --input-len/--output-len/--range-ratio, not both")}
		}
		w, err := lpconfig.LoadWorkloadFile(file)
		if err != nil {
			return &flagError{flag: "workload", err: err}
		}
		c.Workload = w
		if n := f.num("prefix-len"); n != 0 {
			c.Workload.PrefixTokens = n
		}
		c.WorkloadSource = file
	default:
		w, err := sweep.FlagWorkload(f.num("input-len"), f.num("output-len"), f.flt("range-ratio"), f.num("prefix-len"))
		if err != nil {
			return err
		}
		c.Workload, c.WorkloadSource = w, "flags"
	}
	return applyRequestFlags(f, &c.Workload)
}

// applyLoad sets --rates (default auto) or --concurrency.
func applyLoad(f *sweepFlags, c *sweep.Config) error {
	switch {
	case f.isSet("rates") && f.isSet("concurrency"):
		return &flagError{flag: "concurrency", err: errors.New("give --rates or --concurrency, not both (use --rates with --max-concurrency for an open loop with a cap)")}
	case f.isSet("concurrency"):
		return sweep.LookupField("Concurrency").Apply(c, f.str("concurrency"))
	}
	r := f.str("rates")
	if !f.isSet("rates") {
		r = "auto"
	}
	return sweep.LookupField("Rates").Apply(c, r)
}

// applyGoodput sets the SLO of --goodput and the pairs after it.
func applyGoodput(f *sweepFlags, c *sweep.Config) error {
	pairs := f.strs("goodput")
	if len(f.goodputArgs) > 0 && len(pairs) == 0 {
		return &flagError{flag: "goodput", err: fmt.Errorf("unexpected argument %q (KEY:VALUE pairs follow --goodput)", f.goodputArgs[0])}
	}
	return sweep.LookupField("SLO").Apply(c, append(append([]string{}, pairs...), f.goodputArgs...))
}

// applyDecision adds --decision and --rollback-if to the metadata.
func applyDecision(f *sweepFlags, c *sweep.Config) error {
	return addDecision(c.Metadata, f.str("decision"), f.str("rollback-if"))
}

// applyCredentials reads --api-key-file and --http.config.file.
func applyCredentials(f *sweepFlags, c *sweep.Config) error {
	keyFile := f.str("api-key-file")
	if keyFile != "" {
		b, err := readCapped(keyFile, maxAPIKeyFileBytes, "an API key file")
		if err != nil {
			return &flagError{flag: "api-key-file", err: fmt.Errorf("read: %w", err)}
		}
		c.APIKey = config.Secret(strings.TrimSpace(string(b)))
	}
	var err error
	c.HTTPConfig, err = loadHTTPConfigFlag("http.config.file", f.str("http.config.file"), keyFile)
	return err
}

// maxAPIKeyFileBytes caps what sweep reads from --api-key-file, as the
// configuration's api_key_file is capped.
const maxAPIKeyFileBytes = 64 << 10

// readCapped reads the file at path, at most limit bytes (config.ReadFile):
// a larger or endless file (/dev/zero) is an error naming the file and the
// cap on what (e.g. "a workload file").
func readCapped(path string, limit int64, what string) ([]byte, error) {
	b, err := lpconfig.ReadFile(path, limit)
	if te, ok := errors.AsType[*lpconfig.TooLargeError](err); ok {
		return nil, fmt.Errorf("%s: the file is larger than %v, the cap on %s", path, lpconfig.ByteSize(te.Limit), what)
	}
	return b, err
}

// oneLine joins the lines of a (YAML, multi-line) error message with "; ".
func oneLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	return strings.Join(lines, "; ")
}

// sweepHelp renders `llmprobe sweep --help` of this build (help.txt).
func sweepHelp() string {
	var b bytes.Buffer
	app, _, _ := newApp(&b, io.Discard)
	app.Terminate(func(int) {})
	_, _ = app.Parse([]string{"sweep", "--help"})
	return b.String()
}

func runSweep(e *env, f *sweepFlags) int {
	cfg, err := buildSweepConfig(f)
	if err != nil {
		fmt.Fprintf(e.stderr, "llmprobe: error: %s\n", oneLine(fingerprint.RedactSecrets(sweepErrorText(err), cfg.Secrets()...)))
		if isSweepFlagError(err) {
			return 2
		}
		return 1
	}
	if err := checkSweepExtraFlags(&f.extra); err != nil {
		fmt.Fprintf(e.stderr, "llmprobe: error: %v\n", err)
		return 2
	}
	if cfg.HasBurst() {
		fmt.Fprintln(e.stderr, "llmprobe: warning: --rates inf sends every request of the step at once: it is a "+
			"burst, not an open loop (no arrival process; latencies include queueing behind the whole burst).")
	}
	if cfg.Target == "" {
		stop, url, err := startEmbeddedSimulator(e.logger)
		if err != nil {
			level.Error(e.logger).Log("msg", "cannot start the built-in simulator", "err", err)
			return 1
		}
		defer stop()
		cfg.Target, cfg.Embedded = url, true
		if cfg.Trace == nil { // a trace's capacity is not computed
			cfg.ReferenceCapacity = embeddedCapacity(cfg.Workload)
		}
		level.Info(e.logger).Log("msg", "no --target given: sweeping the built-in vLLM simulator (in-process)", "url", url)
	}
	obs := &sweepObserver{stdout: e.stdout, logger: e.logger}
	if !f.noProgress {
		obs.stderr = e.stderr
	}
	res, err := rundir.Run(e.ctx, cfg, rundir.Options{
		Logger:       e.logger,
		Args:         append([]string{"llmprobe"}, e.args...),
		Help:         sweepHelp(),
		Observer:     obs,
		ServerLog:    f.extra.serverLog,
		SaveDetailed: f.saveDetailed,
	})
	if res != nil && res.Result != nil && f.extra.pushURL != "" {
		if perr := pushResult(context.WithoutCancel(e.ctx), &f.extra, cfg.Name, res.Result); perr != nil {
			level.Error(e.logger).Log("msg", "push failed", "url", fingerprint.RedactText(f.extra.pushURL), "err", perr)
			if err == nil && res.Complete {
				return 1
			}
		} else {
			level.Info(e.logger).Log("msg", "pushed the run's summary metrics", "url", fingerprint.RedactText(f.extra.pushURL))
		}
	}
	if err != nil {
		msg := fingerprint.RedactSecrets(sweepErrorText(err), cfg.Secrets()...)
		if isSweepFlagError(err) {
			// Refused before any load (e.g. the lengths exceed the model's
			// max_model_len): one line naming the flag, exit 2.
			fmt.Fprintf(e.stderr, "llmprobe: error: %s\n", oneLine(msg))
			return 2
		}
		level.Error(e.logger).Log("msg", "sweep failed", "err", msg)
		if res == nil || res.Dir == "" {
			return 1
		}
	}
	if res != nil && res.Dir != "" {
		fmt.Fprintf(e.stdout, "\nrun directory: %s\n", res.Dir)
	}
	switch {
	case err != nil:
		return 1
	case !res.Complete:
		return 130
	}
	return 0
}

// flagError is a command-line error that names the flag at fault; the CLI
// prints it as one line and exits 2.
type flagError struct {
	flag string
	err  error
}

// Error formats the error as "--flag: reason".
func (e *flagError) Error() string { return "--" + e.flag + ": " + e.err.Error() }

// Unwrap returns the reason.
func (e *flagError) Unwrap() error { return e.err }

// isSweepFlagError reports whether err names a flag (a *flagError or a
// *sweep.FieldError): a usage error, exit 2.
func isSweepFlagError(err error) bool {
	var fe *flagError
	return errors.As(err, &fe) || sweep.IsFieldError(err)
}

// sweepErrorText is err's message, a *sweep.FieldError in it as
// "--flag: reason" with the settings it refers to spelled as flags (a
// field without a flag keeps its name).
func sweepErrorText(err error) string {
	var fe *sweep.FieldError
	if !errors.As(err, &fe) {
		return err.Error()
	}
	name := fe.Field
	if flag := flagOf(fe); flag != "" {
		name = "--" + flag
	}
	return strings.Replace(err.Error(), fe.Error(), name+": "+fe.Reason(sweep.FlagSpelling), 1)
}

// stepProgress draws a progress bar per step on stderr (nil: none),
// labelled by label (nil: the step's label). The sweep and compare
// observers embed it.
type stepProgress struct {
	sweep.NopObserver
	stderr io.Writer
	label  func(*sweep.Step) string

	mu   sync.Mutex
	prog *report.Progress
}

// StepStarted implements sweep.Observer.
func (o *stepProgress) StepStarted(st *sweep.Step, planned int) {
	if o.stderr == nil {
		return
	}
	desc := st.Label
	if o.label != nil {
		desc = o.label(st)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.prog = report.NewProgress(o.stderr, planned, desc)
}

// RequestDone implements sweep.Observer.
func (o *stepProgress) RequestDone(*sweep.Step, *prober.Record) {
	o.mu.Lock()
	p := o.prog
	o.mu.Unlock()
	if p != nil {
		p.Add(1)
	}
}

// StepDone implements sweep.Observer.
func (o *stepProgress) StepDone(*sweep.Step) {
	o.mu.Lock()
	p := o.prog
	o.prog = nil
	o.mu.Unlock()
	if p != nil {
		p.Finish()
	}
}

// sweepObserver prints a progress bar per step on stderr (nil: none) and
// the final table on stdout.
type sweepObserver struct {
	stepProgress
	stdout io.Writer
	logger log.Logger
}

// SweepDone implements sweep.Observer: the final table.
func (o *sweepObserver) SweepDone(res *sweep.Result) {
	fmt.Fprintln(o.stdout)
	if err := report.WriteTable(o.stdout, res); err != nil {
		level.Error(o.logger).Log("msg", "cannot print the result table", "err", err)
	}
}

// embeddedCapacity is the built-in simulator's capacity (req/s) for a
// workload of fixed lengths without a shared prefix, from its parameters
// (simulator.Config.Capacity); 0 for any other workload (multi-turn
// sessions too: their rate is in sessions/s).
func embeddedCapacity(w workload.Spec) float64 {
	if w.PrefixTokens != 0 || w.MultiTurn != nil || w.InputTokens.Dist != workload.DistFixed || w.OutputTokens.Dist != workload.DistFixed {
		return 0
	}
	return simulator.DefaultConfig().Capacity(w.InputTokens.Value, w.OutputTokens.Value)
}

// startEmbeddedSimulator serves the built-in simulator (default config) on a
// free loopback port. stop closes it and waits for the server to end.
func startEmbeddedSimulator(logger log.Logger) (stop func(), url string, err error) {
	sim, err := simulator.New(simulator.DefaultConfig(), log.With(logger, "component", "simulator"))
	if err != nil {
		return nil, "", err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		sim.Close()
		return nil, "", err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sim.Serve(ctx, l) }()
	return func() {
		sim.Close()
		cancel()
		select {
		case <-done:
		case <-time.After(simulator.ShutdownGrace + 5*time.Second):
		}
	}, "http://" + l.Addr().String(), nil
}
