package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/common/config"
	"go.yaml.in/yaml/v3"

	"github.com/llmprobe/llmprobe/internal/report"
	"github.com/llmprobe/llmprobe/internal/rundir"
	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/arrival"
	lpconfig "github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/fingerprint"
	"github.com/llmprobe/llmprobe/prober/sweep"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// sweepFlags holds the raw flag values of `llmprobe sweep`.
type sweepFlags struct {
	target, metricsURL, model, api, apiKeyFile, engine      string
	inputLen, outputLen, prefixLen                          int
	rangeRatio                                              float64
	workloadFile                                            string
	freshPrefix, savePrompts                                bool
	rates, concurrency                                      string
	ratesSet, concurrencySet, inputSet, outputSet, rangeSet bool
	maxConcurrency                                          int
	maxStepBytes                                            string
	arrivalKind                                             string
	burstiness                                              float64
	unscaled                                                bool
	numPrompts, minPrompts                                  int
	duration                                                time.Duration
	durationSet                                             bool
	warmups, rounds                                         int
	goodput, goodputArgs                                    []string
	percentiles                                             string
	seed                                                    int64
	shardIndex, shardCount                                  int
	startAt                                                 string
	stepInterval                                            time.Duration
	metricsInterval, idleTimeout                            time.Duration
	timeout, ttftTimeout, stallTimeout                      time.Duration
	maxSendLag                                              time.Duration
	maxClientCPU, maxErrorRate                              float64
	autoTolerance                                           float64
	autoStart                                               string
	autoMaxSteps                                            int
	out, name                                               string
	metadata                                                []string
	noProgress                                              bool
	saveDetailed                                            bool
	decision, rollbackIf                                    string
	extra                                                   sweepExtraFlags // --server-log, --push.* (sweepextra.go)
	httpConfigFile                                          string          // --http.config.file (httpconfig.go)
	request                                                 requestFlags    // --temperature, --top-p, ... (sweepfeatures.go)
	dataset                                                 datasetFlags    // --dataset* (sweepdataset.go)
	trace                                                   sweepTraceFlags // --trace, --trace-speed (sweeptrace.go)
	costPerHour                                             float64
}

func init() {
	register(func(app *kingpin.Application) (string, action) {
		f := &sweepFlags{}
		cmd := app.Command("sweep", "Run a fixed workload at increasing load against an OpenAI-compatible endpoint "+
			"(vLLM first), each step started from an idle server, and find the capacity knee: the highest load at "+
			"which goodput still keeps up with the offered rate and the SLO p99s hold. Writes a run directory with "+
			"manifest.json (fingerprint + SHA-256 of every file), result.json (vllm bench serve keys per step), "+
			"records.jsonl, /metrics snapshots, analysis.md and plots. Without --target it sweeps the built-in "+
			"simulator. See docs/sweep.md.")
		addSweepFlags(cmd, f)
		addSweepExtraFlags(cmd, &f.extra)
		addSweepTraceFlags(cmd, &f.trace)
		return cmd.FullCommand(), func(e *env) int { return runSweep(e, f) }
	})
}

func addSweepFlags(cmd *kingpin.CmdClause, f *sweepFlags) {
	def := workload.DefaultSpec()
	// Target.
	cmd.Flag("target", "Base URL of the OpenAI-compatible server, without /v1 (e.g. http://127.0.0.1:8000). "+
		"Without it, the built-in vLLM simulator is started in-process on a free loopback port and swept.").
		StringVar(&f.target)
	cmd.Flag("model", "Model id to request. Default: the first model /v1/models lists.").StringVar(&f.model)
	// Enums are plain strings checked by sweep.Config.Validate, so that a
	// bad value is one line naming the flag (exit 2), not kingpin's message.
	cmd.Flag("api", "OpenAI API to call: completions (/v1/completions) or chat (/v1/chat/completions).").
		Default("completions").StringVar(&f.api)
	cmd.Flag("api-key-file", "File holding the API key, sent as a bearer token. Keys are never taken from flags "+
		"and never written to logs or artifacts.").StringVar(&f.apiKeyFile)
	addHTTPConfigFlag(cmd, &f.httpConfigFile)
	cmd.Flag("metrics-url", "The server's Prometheus /metrics, read before, during and after each step. "+
		"Default: --target + /metrics.").StringVar(&f.metricsURL)
	cmd.Flag("engine", "The server's engine, whose metric names the idle proofs, server-side figures and the throughput "+
		"probe read: auto (detected from /metrics names, /v1/models owned_by or the engine's info endpoint), vllm, "+
		"sglang, tgi, llamacpp or ollama. See docs/engines.md.").Default("auto").StringVar(&f.engine)
	cmd.Flag("timeout", "Total time limit of one request.").Default(sweep.DefaultTimeout.String()).DurationVar(&f.timeout)
	cmd.Flag("ttft-timeout", "Time limit to the first token event of a request (0: only --timeout).").
		Default("0s").DurationVar(&f.ttftTimeout)
	cmd.Flag("stall-timeout", "Longest pause between events of a stream before the request fails as a stall (0: none).").
		Default("0s").DurationVar(&f.stallTimeout)

	// Workload.
	cmd.Flag("input-len", "Prompt tokens per request (vllm bench serve's --random-input-len), sized with the "+
		"server's tokenizer.").Default(fmt.Sprint(def.InputTokens.Value)).IsSetByUser(&f.inputSet).IntVar(&f.inputLen)
	cmd.Flag("output-len", "Output tokens per request (max_tokens, with ignore_eos).").
		Default(fmt.Sprint(def.OutputTokens.Value)).IsSetByUser(&f.outputSet).IntVar(&f.outputLen)
	cmd.Flag("range-ratio", "Draw input and output lengths uniformly from [len*(1-r), len*(1+r)] (vLLM's "+
		"--random-range-ratio, 0 <= r < 1; 0 = fixed lengths).").Default("0").IsSetByUser(&f.rangeSet).Float64Var(&f.rangeRatio)
	cmd.Flag("prefix-len", "Tokens of a shared prefix prepended to every prompt (vLLM's --random-prefix-len). "+
		"Steps then report the prefix-cache hit rate of the warmup (cold) and the measured part (warm).").
		Default("0").IntVar(&f.prefixLen)
	cmd.Flag("fresh-prefix", "Draw a new shared prefix for every step, so steps do not warm each other's prefix cache.").
		BoolVar(&f.freshPrefix)
	cmd.Flag("workload", "YAML workload file (input_tokens, output_tokens, prefix_tokens, ignore_eos, multi_turn; "+
		"distributions fixed, uniform, lognormal, choice) instead of --input-len/--output-len/--range-ratio. "+
		"With multi_turn (--api chat) each arrival starts a chat session and --rates are sessions/s.").
		StringVar(&f.workloadFile)
	addDatasetFlags(cmd, &f.dataset)
	cmd.Flag("save-prompts", "Write the prompt text of every request into records.jsonl (off: no prompt text in artifacts).").
		BoolVar(&f.savePrompts)
	addRequestFlags(cmd, &f.request)

	// Load.
	cmd.Flag("rates", "Open-loop request rates in req/s, one step each: a list such as 1,2,4,8; auto (adaptive "+
		"knee search: doubling, then bisection to within --auto-tolerance); or inf (every request of the step at "+
		"once: a burst, not an open loop). Default auto, unless --concurrency is given.").
		IsSetByUser(&f.ratesSet).StringVar(&f.rates)
	cmd.Flag("concurrency", "Closed loop instead of rates: a list of concurrency levels (e.g. 1,2,4,8), each step "+
		"keeping exactly N requests in flight.").IsSetByUser(&f.concurrencySet).StringVar(&f.concurrency)
	cmd.Flag("max-concurrency", "With --rates: cap the requests in flight; arrivals wait for a free slot, the wait "+
		"is reported as client queue time and the achieved rate beside the requested one (0: no cap).").
		Default("0").IntVar(&f.maxConcurrency)
	cmd.Flag("max-step-bytes", "Cap on the bytes one step's records take in records.jsonl (a size such as 512MiB): "+
		"a step that reaches it stops sending, is flagged byte-cap and the sweep stops cleanly after it.").
		Default("1GiB").StringVar(&f.maxStepBytes)
	cmd.Flag("arrival", "Arrival process of the open loop: "+strings.Join(arrival.Kinds, ", ")+" (gamma with --burstiness).").
		Default(arrival.KindPoisson).StringVar(&f.arrivalKind)
	cmd.Flag("burstiness", "Gamma shape of the inter-arrival times (vLLM's parametrisation): 1 = Poisson, "+
		"< 1 burstier, > 1 more regular.").Default("1").Float64Var(&f.burstiness)
	cmd.Flag("unscaled-arrivals", "Send each open-loop step on the arrival process's own absolute schedule "+
		"(the number of arrivals in the step varies as the process does) instead of vllm bench serve's "+
		"normalized schedule (N = rate x duration arrivals, the last at exactly N / rate).").BoolVar(&f.unscaled)
	cmd.Flag("num-prompts", "Requests per step (instead of --duration).").Default("0").IntVar(&f.numPrompts)
	cmd.Flag("duration", "Length of each step's arrival window (instead of --num-prompts); the step then drains "+
		"its requests in flight.").Default(sweep.DefaultDuration.String()).IsSetByUser(&f.durationSet).DurationVar(&f.duration)
	cmd.Flag("min-prompts", "With --duration: the least number of requests of an open-loop step; at a low rate the "+
		"step runs past --duration until this many have been sent, so every step has a sample.").
		Default(fmt.Sprint(sweep.DefaultMinPrompts)).IntVar(&f.minPrompts)
	cmd.Flag("warmups", "Unmeasured warmup requests sent before each step (they warm connections and the prefix cache).").
		Default(fmt.Sprint(sweep.DefaultWarmups)).IntVar(&f.warmups)
	cmd.Flag("rounds", "Repeat each step this many times and report the spread; the knee uses every valid round.").
		Default(fmt.Sprint(sweep.DefaultRounds)).IntVar(&f.rounds)
	cmd.Flag("seed", "Seed of the arrival times and workload draws (each step derives its own).").
		Default("0").Int64Var(&f.seed)
	cmd.Flag("shard-index", "This process's shard, 0..--shard-count-1 (a Kubernetes Indexed Job's $(JOB_COMPLETION_INDEX)): "+
		"it sends each rate divided by --shard-count with a seed of its own; `llmprobe merge` combines the shards' run directories.").
		Default("0").IntVar(&f.shardIndex)
	cmd.Flag("shard-count", "Number of shards sending the sweep together (0 or 1: not sharded); needs --rates LIST.").
		Default("0").IntVar(&f.shardCount)
	cmd.Flag("start-at", "Align the steps on the wall clock: the k-th step's load starts at this time + k x --step-interval "+
		"(RFC 3339, or Unix seconds), so shards start each step together.").StringVar(&f.startAt)
	cmd.Flag("step-interval", "With --start-at: the wall-clock period between step starts (longer than a step with its idle wait and warmups).").
		DurationVar(&f.stepInterval)

	// SLO and statistics.
	cmd.Flag("goodput", "SLO thresholds in milliseconds, vllm bench serve's syntax: --goodput ttft:800 tpot:50 "+
		"e2el:5000 (keys ttft, tpot, e2el; several pairs after one flag, or the flag repeated). A request is good "+
		"when it succeeded and every threshold holds; a step's SLOs hold when their p99s do.").
		StringsVar(&f.goodput)
	cmd.Flag("percentiles", "Extra latency percentiles reported beside p50, p90 and p99 (e.g. 75,99.9).").
		StringVar(&f.percentiles)
	cmd.Flag("max-send-lag", "Validity: a step whose client send-lag p99 exceeds this is client-saturated.").
		Default(sweep.DefaultMaxSendLag.String()).DurationVar(&f.maxSendLag)
	cmd.Flag("max-client-cpu", "Validity: a step during which this process used more CPU than this many cores "+
		"is client-saturated (not checked against the in-process simulator, which shares the process).").
		Default(fmt.Sprint(sweep.DefaultMaxClientCPU)).Float64Var(&f.maxClientCPU)
	cmd.Flag("max-error-rate", "Validity: a step whose failed/requests ratio exceeds this is flagged errors.").
		Default(fmt.Sprint(sweep.DefaultMaxErrorRate)).Float64Var(&f.maxErrorRate)
	cmd.Flag("auto-start", "--rates auto: the first rate tried, in req/s, or probe: a short closed-loop throughput probe "+
		"(concurrency 32, 128, 512, 2048 until the throughput stops growing) estimates the capacity and the search starts there.").
		Default("probe").StringVar(&f.autoStart)
	cmd.Flag("auto-max-steps", "--rates auto: the most steps run, reruns of invalid levels included.").
		Default(fmt.Sprint(sweep.DefaultAutoMaxSteps)).IntVar(&f.autoMaxSteps)
	cmd.Flag("auto-tolerance", "--rates auto: stop when the highest passing and lowest failing rates are within "+
		"this relative distance.").Default(fmt.Sprint(sweep.DefaultAutoTolerance)).Float64Var(&f.autoTolerance)

	// Server metrics.
	cmd.Flag("metrics-interval", "Period of the /metrics scrapes during a step (metrics-during.txt, max running, "+
		"waiting and KV usage).").Default(sweep.DefaultMetricsInterval.String()).DurationVar(&f.metricsInterval)
	cmd.Flag("idle-timeout", "Before each step, wait up to this long for vllm:num_requests_running + "+
		"vllm:num_requests_waiting to read 0; a step that never saw it is flagged not-idle.").
		Default(sweep.DefaultIdleTimeout.String()).DurationVar(&f.idleTimeout)

	// Output.
	cmd.Flag("out", "Directory under which the run directory <UTC stamp>-<name>/ is created.").
		Default("runs").StringVar(&f.out)
	cmd.Flag("name", "Run name, the suffix of the run directory.").Default("sweep").StringVar(&f.name)
	cmd.Flag("metadata", "KEY=VALUE written into result.json and the fingerprint (repeatable), as vLLM's --metadata.").
		StringsVar(&f.metadata)
	cmd.Flag("no-progress", "No progress bar, plain log lines (the default when stderr is not a terminal).").
		BoolVar(&f.noProgress)
	cmd.Flag("decision", "The decision this run serves (methodology §1), e.g. \"ship TP=2 if goodput at 8 req/s "+
		"rises\": written as metadata key decision (result.json, the manifest) and opening analysis.md with the SLO.").
		StringVar(&f.decision)
	cmd.Flag("rollback-if", "The condition that rolls the decision back, written as metadata key rollback_if beside it.").
		StringVar(&f.rollbackIf)
	cmd.Flag("cost-per-hour", "Price of the target's serving in USD per hour (e.g. 2.5 for one GPU): every step and "+
		"the knee then report the cost per million good output tokens, price / (good output tokens/s x 3600) x 1e6, "+
		"counting only requests that met every SLO (so SLO misses cost more). Recorded in result.json and the manifest. "+
		"0: no price.").Default("0").Float64Var(&f.costPerHour)
	cmd.Flag("save-detailed", "Write vllm bench serve's --save-detailed arrays (input_lens, output_lens, ttfts, itls, "+
		"start_times, errors) into the vLLM-form file of every step (vllm/ in the run directory).").BoolVar(&f.saveDetailed)
	cmd.Arg("goodput-pairs", "More --goodput KEY:VALUE pairs (vLLM's `--goodput ttft:800 tpot:50` form).").
		StringsVar(&f.goodputArgs)
}

// buildSweepConfig turns the flags into a validated sweep.Config. Errors are
// *flagError or *sweep.FieldError (exit 2; sweepErrorText names the flag)
// unless reading a file failed.
func buildSweepConfig(f *sweepFlags) (sweep.Config, error) {
	c := sweep.Config{
		Target:       strings.TrimRight(f.target, "/"),
		MetricsURL:   f.metricsURL,
		Engine:       f.engine,
		Model:        f.model,
		API:          f.api,
		Timeout:      f.timeout,
		TTFTTimeout:  f.ttftTimeout,
		StallTimeout: f.stallTimeout,
		FreshPrefix:  f.freshPrefix,
		SavePrompts:  f.savePrompts,

		MaxConcurrency:  f.maxConcurrency,
		Arrival:         f.arrivalKind,
		Burstiness:      f.burstiness,
		Unscaled:        f.unscaled,
		NumPrompts:      f.numPrompts,
		MinPrompts:      f.minPrompts,
		Warmups:         f.warmups,
		Rounds:          f.rounds,
		Seed:            f.seed,
		ShardIndex:      f.shardIndex,
		ShardCount:      f.shardCount,
		StepInterval:    f.stepInterval,
		MetricsInterval: f.metricsInterval,
		IdleTimeout:     f.idleTimeout,
		Validity: sweep.ValidityOptions{
			MaxSendLag: f.maxSendLag, MaxClientCPU: f.maxClientCPU, MaxErrorRate: f.maxErrorRate,
		},
		Search: sweep.SearchOptions{MaxSteps: f.autoMaxSteps, Tolerance: f.autoTolerance},
		OutDir: f.out,
		Name:   f.name,
	}
	if f.numPrompts == 0 || f.durationSet {
		c.Duration = f.duration
	}
	if f.startAt != "" {
		t, err := parseStartAt(f.startAt)
		if err != nil {
			return c, &flagError{flag: "start-at", err: err}
		}
		c.StartAt = t
	}
	if f.numPrompts < 0 {
		return c, &flagError{flag: "num-prompts", err: fmt.Errorf("must be >= 1, got %d", f.numPrompts)}
	}
	if start := strings.TrimSpace(f.autoStart); !strings.EqualFold(start, "probe") {
		v, err := strconv.ParseFloat(start, 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return c, &flagError{flag: "auto-start", err: fmt.Errorf("must be probe or a rate > 0 in req/s, got %q", f.autoStart)}
		}
		c.Search.Start = v
	}
	if f.autoMaxSteps < 1 {
		return c, &flagError{flag: "auto-max-steps", err: fmt.Errorf("must be >= 1, got %d", f.autoMaxSteps)}
	}
	if !(f.autoTolerance > 0 && f.autoTolerance < 1) {
		return c, &flagError{flag: "auto-tolerance", err: fmt.Errorf("must be in (0, 1), got %v", f.autoTolerance)}
	}
	if f.maxSendLag <= 0 {
		return c, &flagError{flag: "max-send-lag", err: fmt.Errorf("must be > 0, got %s", f.maxSendLag)}
	}
	if !(f.maxClientCPU > 0) {
		return c, &flagError{flag: "max-client-cpu", err: fmt.Errorf("must be > 0, got %v", f.maxClientCPU)}
	}
	if !(f.maxErrorRate > 0 && f.maxErrorRate <= 1) {
		return c, &flagError{flag: "max-error-rate", err: fmt.Errorf("must be in (0, 1], got %v", f.maxErrorRate)}
	}
	if c.Target != "" && !strings.HasPrefix(c.Target, "http://") && !strings.HasPrefix(c.Target, "https://") {
		return c, &flagError{flag: "target", err: fmt.Errorf("must be an http:// or https:// URL, got %q", f.target)}
	}

	// Workload.
	var err error
	if f.dataset.path != "" {
		if err := applyDataset(f, &c); err != nil {
			return c, err
		}
	} else if f.workloadFile != "" {
		if f.inputSet || f.outputSet || f.rangeSet {
			return c, &flagError{flag: "workload", err: errors.New("give --workload or --input-len/--output-len/--range-ratio, not both")}
		}
		b, rerr := readCapped(f.workloadFile, maxWorkloadFileBytes, "a workload file")
		if rerr != nil {
			return c, &flagError{flag: "workload", err: rerr}
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		if derr := dec.Decode(&c.Workload); derr != nil && !errors.Is(derr, io.EOF) {
			return c, &flagError{flag: "workload", err: fmt.Errorf("%s: %w", f.workloadFile, derr)}
		}
		if f.prefixLen != 0 {
			c.Workload.PrefixTokens = f.prefixLen
		}
		c.WorkloadSource = f.workloadFile
	} else {
		if c.Workload, err = sweep.FlagWorkload(f.inputLen, f.outputLen, f.rangeRatio, f.prefixLen); err != nil {
			return c, err
		}
		c.WorkloadSource = "flags"
	}
	if err := applyRequestFlags(&f.request, &c.Workload, f.workloadFile); err != nil {
		return c, err
	}

	// Load.
	switch {
	case f.ratesSet && f.concurrencySet:
		return c, &flagError{flag: "concurrency", err: errors.New("give --rates or --concurrency, not both (use --rates with --max-concurrency for an open loop with a cap)")}
	case f.concurrencySet:
		if c.Concurrency, err = sweep.ParseConcurrency(f.concurrency); err != nil {
			return c, err
		}
	default:
		r := f.rates
		if !f.ratesSet {
			r = "auto"
		}
		if c.Rates, c.Auto, err = sweep.ParseRates(r); err != nil {
			return c, err
		}
		c.RatesText = r
	}
	if c.Percentiles, err = sweep.ParsePercentiles(f.percentiles); err != nil {
		return c, err
	}
	if len(f.goodputArgs) > 0 && len(f.goodput) == 0 {
		return c, &flagError{flag: "goodput", err: fmt.Errorf("unexpected argument %q (KEY:VALUE pairs follow --goodput)", f.goodputArgs[0])}
	}
	if c.SLO, err = sweep.ParseGoodput(append(append([]string{}, f.goodput...), f.goodputArgs...)); err != nil {
		return c, err
	}
	if c.Metadata, err = sweep.ParseMetadata(f.metadata); err != nil {
		return c, err
	}
	if err := addDecision(c.Metadata, f.decision, f.rollbackIf); err != nil {
		return c, err
	}
	c.CostPerHour = f.costPerHour
	stepBytes, perr := lpconfig.ParseByteSize(f.maxStepBytes)
	switch {
	case perr != nil:
		return c, &flagError{flag: "max-step-bytes", err: perr}
	case stepBytes <= 0:
		return c, &flagError{flag: "max-step-bytes", err: fmt.Errorf("must be > 0, got %q", f.maxStepBytes)}
	}
	c.MaxStepBytes = int64(stepBytes)
	if f.apiKeyFile != "" {
		b, rerr := readCapped(f.apiKeyFile, maxAPIKeyFileBytes, "an API key file")
		if rerr != nil {
			return c, &flagError{flag: "api-key-file", err: fmt.Errorf("read: %w", rerr)}
		}
		c.APIKey = config.Secret(strings.TrimSpace(string(b)))
	}
	if c.HTTPConfig, err = loadHTTPConfigFlag("http.config.file", f.httpConfigFile, f.apiKeyFile); err != nil {
		return c, err
	}
	if err := applySweepTraceFlags(f, &c); err != nil {
		return c, err
	}
	return c, c.Validate()
}

// maxWorkloadFileBytes caps what sweep reads from --workload, as
// config.MaxConfigFileBytes caps a configuration file.
const maxWorkloadFileBytes = lpconfig.MaxConfigFileBytes

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

// sweepFieldFlags maps the sweep.Config fields that sweep.FieldError names
// to the flags that set them.
var sweepFieldFlags = map[string]string{
	"API":                              "api",
	"Arrival":                          "arrival",
	"Burstiness":                       "burstiness",
	"Concurrency":                      "concurrency",
	"CostPerHour":                      "cost-per-hour",
	"Duration":                         "duration",
	"Engine":                           "engine",
	"FreshPrefix":                      "fresh-prefix",
	"HTTPConfig":                       "http.config.file",
	"IdleTimeout":                      "idle-timeout",
	"MaxConcurrency":                   "max-concurrency",
	"MaxStepBytes":                     "max-step-bytes",
	"Metadata":                         "metadata",
	"MetricsInterval":                  "metrics-interval",
	"MinPrompts":                       "min-prompts",
	"NumPrompts":                       "num-prompts",
	"OutDir":                           "out",
	"Percentiles":                      "percentiles",
	"Rates":                            "rates",
	"Rounds":                           "rounds",
	"SLO":                              "goodput",
	"ShardCount":                       "shard-count",
	"ShardIndex":                       "shard-index",
	"StartAt":                          "start-at",
	"StepInterval":                     "step-interval",
	"Search.MaxSteps":                  "auto-max-steps",
	"Search.Start":                     "auto-start",
	"Search.Tolerance":                 "auto-tolerance",
	"StallTimeout":                     "stall-timeout",
	"TTFTTimeout":                      "ttft-timeout",
	"Timeout":                          "timeout",
	"Validity.MaxErrorRate":            "max-error-rate",
	"Validity.MaxSendLag":              "max-send-lag",
	"Warmups":                          "warmups",
	"Workload":                         "workload",
	"Workload.InputTokens":             "input-len",
	"Workload.InputTokens.RangeRatio":  "range-ratio",
	"Workload.OutputTokens":            "output-len",
	"Workload.OutputTokens.RangeRatio": "range-ratio",
	"Workload.PrefixTokens":            "prefix-len",
	"Workload.Dataset":                 "dataset",
}

// isSweepFlagError reports whether err names a flag (a *flagError or a
// *sweep.FieldError): a usage error, exit 2.
func isSweepFlagError(err error) bool {
	var fe *flagError
	return errors.As(err, &fe) || sweep.IsFieldError(err)
}

// sweepErrorText is err's message, a *sweep.FieldError in it as
// "--flag: reason" (the field's flag; a field without one keeps its name).
func sweepErrorText(err error) string {
	var fe *sweep.FieldError
	if !errors.As(err, &fe) {
		return err.Error()
	}
	flag, ok := sweepFieldFlags[fe.Field]
	if !ok {
		return err.Error()
	}
	return strings.Replace(err.Error(), fe.Error(), "--"+flag+": "+fe.Err.Error(), 1)
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

// parseStartAt parses --start-at: RFC 3339 or Unix seconds.
func parseStartAt(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if v, err := strconv.ParseFloat(s, 64); err == nil && v > 0 && !math.IsInf(v, 0) {
		sec, frac := math.Modf(v)
		return time.Unix(int64(sec), int64(frac*1e9)), nil
	}
	return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time nor Unix seconds", s)
}
