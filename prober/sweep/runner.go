package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/llmprobe/llmprobe/collector/scrape"
	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/fingerprint"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/arrival"
	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/schedule"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// Options are Run's collaborators. The zero value works: no logging, no
// output, no progress.
type Options struct {
	// Logger receives progress and warnings (nil: none).
	Logger log.Logger
	// Args is the full command line, program name first (redacted before
	// it is written to command.txt and the fingerprint).
	Args []string
	// Help is written to help.txt (the command's --help of this build).
	Help string
	// Stdout receives the final table; Stderr the progress bars (nil:
	// none).
	Stdout, Stderr io.Writer
	// Progress shows a progress reporter per step on Stderr.
	Progress bool
	// NewProgress makes a step's progress reporter on Stderr when Progress
	// is set (nil: none); total <= 0 means unknown. Temporary wiring: the
	// CLI sets it to internal/report's NewProgress, until an observer
	// replaces it.
	NewProgress func(w io.Writer, total int, desc string) StepProgress
	// Report renders the finished run's reports: the CLI sets it to write
	// analysis.md and the plots into run (report.WriteFiles) and to print the
	// terminal table (report.WriteTable). It is called after result.json is
	// written and before the manifest, with res's fingerprint and
	// interrupted reason set (nil: no reports). Temporary wiring, so that
	// prober/sweep does not import internal/report; it moves to the
	// run-directory package.
	Report func(run *artifacts.Run, res *Result) error
	// HTTPClient reads /v1/models, /version and /metrics (nil: a client
	// with a 10s timeout). Requests under load use their own client.
	HTTPClient *http.Client
	// Now is the clock of the run directory's name (nil: time.Now).
	Now func() time.Time
}

// Outcome is what Run produced.
type Outcome struct {
	// Dir is the run directory ("" when Run failed before creating it).
	Dir string
	// Result is result.json's content.
	Result *Result
	// Complete is false when the sweep was interrupted.
	Complete bool
}

// ErrUnreachable is wrapped by Run's error when the target cannot be
// reached before any step.
var ErrUnreachable = errors.New("target unreachable")

// maxStepRequests bounds the requests of one open-loop step bounded by a
// duration (their prompts are built in advance).
const maxStepRequests = 2_000_000

// idlePollInterval is how often the idle wait reads /metrics.
const idlePollInterval = 200 * time.Millisecond

type runner struct {
	cfg    Config
	opts   Options
	logger log.Logger
	http   *http.Client

	client        *client.Client
	loadTransport *http.Transport
	model         string
	metricsURL    string
	metricsOK     bool   // /metrics was readable at preflight
	metricsReason string // why not
	idleKnown     bool   // /metrics has vllm:num_requests_*
	tokenizer     string // fingerprint tokenizer method
	runID         string

	run                                  *artifacts.Run
	records, errs, before, during, after *artifacts.Appender
	fp                                   fingerprint.Fingerprint
	steps                                []*Step
	current                              string    // the step running now, "3 (rate=8)"
	levels                               []float64 // levels in first-run order
	prompts                              *promptSource
	modelInfo                            fingerprint.ModelInfo
	search                               *SearchResult    // --rates auto: how the search ended
	probe                                *ThroughputProbe // --rates auto: the throughput probe
}

// redact removes credentials from text that may quote a server (an error
// message, a reason): fingerprint.RedactText plus the literal API key.
func (r *runner) redact(s string) string {
	return fingerprint.RedactSecrets(s, string(r.cfg.APIKey))
}

// Run executes the sweep cfg describes and writes its run directory. It
// checks the target (GET /v1/models) and the out dir before sending any
// load; those failures return a nil Outcome. When ctx is canceled mid-sweep
// (SIGINT), the step in flight stops, everything measured so far is written
// and the manifest says complete: false; Run then returns the Outcome and
// a nil error. A write failure after the run directory exists returns the
// Outcome with the error.
func Run(ctx context.Context, cfg Config, opts Options) (*Outcome, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &runner{cfg: cfg, opts: opts, logger: opts.Logger, http: opts.HTTPClient}
	if r.logger == nil {
		r.logger = log.NewNopLogger()
	}
	// Own transports, so that no idle connection outlives Run.
	r.loadTransport = client.NewTransport()
	defer r.loadTransport.CloseIdleConnections()
	if r.http == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		defer tr.CloseIdleConnections()
		r.http = &http.Client{Timeout: 10 * time.Second, Transport: tr}
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	start := now()
	r.runID = strconv.FormatInt(start.UnixNano()%1e12, 36)
	if err := r.preflight(ctx); err != nil {
		return nil, r.redactErr(err)
	}
	run, err := artifacts.Create(cfg.OutDir, cfg.Name, start)
	if err != nil {
		return nil, fmt.Errorf("out dir: %w", err)
	}
	r.run = run
	out := &Outcome{Dir: run.Dir()}
	level.Info(r.logger).Log("msg", "sweep starting", "target", fingerprint.RedactText(cfg.Target), "model", r.model,
		"mode", cfg.Mode(), "dir", run.Dir())
	r.fingerprintStart(ctx, start)
	if err := r.openFiles(); err != nil {
		return r.abort(out, err)
	}
	var runErr error
	if r.prompts, err = newPromptSource(ctx, r); err != nil && ctx.Err() == nil {
		return r.abort(out, fmt.Errorf("workload: %w", err))
	}
	r.fp.Target.Tokenizer = fingerprint.OrNotRecorded(r.tokenizer)
	if err == nil {
		runErr = r.runLevels(ctx)
	}
	complete := ctx.Err() == nil && runErr == nil
	res := r.result(complete)
	out.Result, out.Complete = res, complete
	reason := ""
	switch {
	case complete:
	case runErr != nil && ctx.Err() == nil:
		reason = "failed: " + r.redact(runErr.Error())
	case r.current != "":
		reason = "interrupted during step " + r.current
	default:
		reason = "interrupted before the first step"
	}
	if err := r.finish(res, complete, reason); err != nil {
		return out, r.redactErr(err)
	}
	if runErr != nil && ctx.Err() == nil {
		return out, r.redactErr(runErr)
	}
	return out, nil
}

// redactErr returns err with its text redacted (r.redact), keeping it
// wrapped for errors.Is and errors.As.
func (r *runner) redactErr(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if red := r.redact(msg); red != msg {
		return &redactedError{msg: red, err: err}
	}
	return err
}

// redactedError is an error whose message had credentials removed.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// abort finishes an incomplete run directory after a setup failure.
func (r *runner) abort(out *Outcome, err error) (*Outcome, error) {
	r.fp.End = time.Now().UTC()
	ferr := r.run.Finish(artifacts.Manifest{Fingerprint: r.fp, InterruptedReason: "failed: " + r.redact(err.Error())}, false)
	return out, r.redactErr(errors.Join(err, ferr))
}

// preflight checks the target before anything is created: /v1/models must
// answer (and list the model), /metrics is probed once.
func (r *runner) preflight(ctx context.Context) error {
	c := r.cfg
	models, err := r.listModels(ctx)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrUnreachable, fingerprint.RedactText(c.Target), err)
	}
	switch {
	case c.Model == "" && len(models) == 0:
		return fmt.Errorf("target %s lists no model in /v1/models; give --model", fingerprint.RedactText(c.Target))
	case c.Model == "":
		r.model = models[0]
	case len(models) > 0 && !slices.Contains(models, c.Model):
		return fmt.Errorf("model %q is not served by %s (it serves: %s)", c.Model, fingerprint.RedactText(c.Target), strings.Join(models, ", "))
	default:
		r.model = c.Model
	}
	if err := r.checkContext(ctx); err != nil {
		return err
	}
	r.metricsURL = c.MetricsURL
	if r.metricsURL == "" {
		r.metricsURL = strings.TrimSuffix(strings.TrimRight(c.Target, "/"), "/v1") + "/metrics"
	}
	snap, err := scrape.Fetch(ctx, r.http, r.metricsURL, r.scrapeOpts()...)
	switch {
	case err != nil:
		r.metricsReason = r.redact(err.Error())
		level.Warn(r.logger).Log("msg", "server /metrics not readable: snapshots, idle proofs and server-side figures will be not-recorded", "err", r.metricsReason)
	default:
		r.metricsOK = true
		if _, known := scrape.Idle(snap); known {
			r.idleKnown = true
		} else {
			level.Warn(r.logger).Log("msg", "server /metrics has no vllm:num_requests_running/waiting: idle proofs will be not-recorded")
		}
	}
	cl, err := client.New(client.Options{
		BaseURL:      c.Target,
		API:          c.API,
		Model:        r.model,
		APIKey:       c.APIKey,
		Timeout:      c.Timeout,
		TTFTTimeout:  c.TTFTTimeout,
		StallTimeout: c.StallTimeout,
		HTTPClient:   &http.Client{Transport: r.loadTransport},
		Trace:        true,
	})
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	r.client = cl
	return nil
}

// checkContext reads the model's max_model_len (GET /v1/models, else the
// max_model_len of a POST /tokenize answer) and refuses a workload whose
// longest request (prefix + input + output tokens) does not fit, before any
// run directory exists. An unknown max_model_len is not checked.
func (r *runner) checkContext(ctx context.Context) error {
	c := r.cfg
	f := fingerprint.Fetcher{Client: r.http, BaseURL: c.Target, Header: r.authHeader()}
	r.modelInfo = f.Model(ctx, r.model)
	maxLen, source := r.modelInfo.MaxModelLen.Value, "GET /v1/models"
	if !r.modelInfo.MaxModelLen.Recorded {
		maxLen, source = 0, "POST /tokenize"
		st, err := workload.NewServerTokenizer(workload.ServerTokenizerOptions{
			BaseURL: c.Target, Model: r.model, Chat: c.API == "chat",
			Client: &http.Client{Timeout: 10 * time.Second, Transport: r.http.Transport}, Header: r.authHeader(),
		})
		if err == nil {
			if _, err := st.Count(ctx, "the"); err == nil {
				maxLen = int64(st.MaxModelLen())
			}
		}
	}
	if maxLen <= 0 {
		return nil
	}
	return checkFits(c, maxLen, source)
}

// checkFits returns a *FlagError naming the length flags when the longest
// request of c's workload needs more than maxLen tokens.
func checkFits(c Config, maxLen int64, source string) error {
	w := c.Workload
	in, err := workload.NewLengthSampler(w.InputTokens)
	if err != nil {
		return nil // Validate reports it
	}
	out, err := workload.NewLengthSampler(w.OutputTokens)
	if err != nil {
		return nil
	}
	_, inHi := in.Range()
	_, outHi := out.Range()
	need := int64(w.PrefixTokens) + int64(inHi) + int64(outHi)
	if need <= maxLen {
		return nil
	}
	if c.WorkloadSource != "" && c.WorkloadSource != "flags" {
		return flagErr("workload", "the longest request of %s needs %d tokens (prefix %d + input up to %d + output up to %d), "+
			"more than the model's max_model_len %d (from %s)", c.WorkloadSource, need, w.PrefixTokens, inHi, outHi, maxLen, source)
	}
	parts := fmt.Sprintf("--input-len %d + --output-len %d", inHi, outHi)
	if w.PrefixTokens > 0 {
		parts = fmt.Sprintf("--prefix-len %d + ", w.PrefixTokens) + parts
	}
	if w.InputTokens.Dist == workload.DistUniform {
		parts += " at --range-ratio's upper end"
	}
	return flagErr("input-len", "%s = %d tokens per request, more than the model's max_model_len %d (from %s): lower them",
		parts, need, maxLen, source)
}

func (r *runner) scrapeOpts() []scrape.Option {
	if r.cfg.APIKey != "" && r.cfg.MetricsURL == "" {
		return []scrape.Option{scrape.WithBearerToken(r.cfg.APIKey)}
	}
	return nil
}

func (r *runner) authHeader() http.Header {
	h := http.Header{}
	if r.cfg.APIKey != "" {
		h.Set("Authorization", "Bearer "+string(r.cfg.APIKey))
	}
	return h
}

// listModels returns the ids GET /v1/models lists.
func (r *runner) listModels(ctx context.Context) ([]string, error) {
	u := strings.TrimSuffix(strings.TrimRight(r.cfg.Target, "/"), "/v1") + "/v1/models"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range r.authHeader() {
		req.Header[k] = v
	}
	resp, err := r.http.Do(req)
	if err != nil {
		var ue interface{ Unwrap() error }
		if errors.As(err, &ue) {
			return nil, fmt.Errorf("GET /v1/models: %w", ue.Unwrap())
		}
		return nil, fmt.Errorf("GET /v1/models: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, fmt.Errorf("GET /v1/models: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /v1/models: status %s", resp.Status)
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("GET /v1/models: not an OpenAI model list: %w", err)
	}
	ids := make([]string, 0, len(list.Data))
	for _, m := range list.Data {
		if m.ID != "" {
			ids = append(ids, m.ID)
		}
	}
	return ids, nil
}

// fingerprintStart fills the fingerprint's fixed parts.
func (r *runner) fingerprintStart(ctx context.Context, start time.Time) {
	c := r.cfg
	fp := fingerprint.New(r.opts.Args, start)
	f := fingerprint.Fetcher{Client: r.http, BaseURL: c.Target, Header: r.authHeader()}
	mi := r.modelInfo
	fp.Target.URL = fingerprint.RedactText(c.Target)
	fp.Target.API = c.API
	fp.Target.Model = r.model
	fp.Target.ServedModel, fp.Target.Root, fp.Target.MaxModelLen = mi.ID, mi.Root, mi.MaxModelLen
	fp.Target.ServerVersion = f.ServerVersion(ctx)
	if r.metricsOK {
		fp.Target.MetricsURL = fingerprint.RedactText(r.metricsURL)
		if snap, err := scrape.Fetch(ctx, r.http, r.metricsURL, r.scrapeOpts()...); err == nil {
			fp.Target.EngineConfig = fingerprint.EngineConfig(snap.Raw)
		}
	}
	if w, err := fingerprint.HashWorkload(c.Workload, c.WorkloadSource); err == nil {
		fp.Workload = w
	}
	fp.Workload.SavePrompts = c.SavePrompts
	fp.Load = fingerprint.Load{
		Mode:           c.Mode(),
		Arrival:        c.Arrival,
		Burstiness:     c.Burstiness,
		Unscaled:       c.Unscaled,
		Concurrency:    c.Concurrency,
		MaxConcurrency: c.MaxConcurrency,
		NumPrompts:     c.NumPrompts,
		Warmups:        c.Warmups,
		Rounds:         c.Rounds,
		Seed:           c.Seed,
		Goodput:        sloMillis(c),
		FreshPrefix:    c.FreshPrefix,
		Validity:       r.validityFingerprint(),
	}
	if c.NumPrompts == 0 {
		fp.Load.MinPrompts = c.MinPrompts
	}
	if c.Auto {
		so := c.Search.withDefaults()
		start := "probe"
		if c.Search.Start > 0 {
			start = fmtLevel(c.Search.Start)
		}
		fp.Load.Search = &fingerprint.Search{Start: start, MaxSteps: so.MaxSteps, Tolerance: so.Tolerance, Retries: so.Retries}
	}
	if c.Mode() == ModeClosed {
		fp.Load.Arrival, fp.Load.Burstiness = "", 0
	}
	if c.Duration > 0 {
		fp.Load.Duration = c.Duration.String()
	}
	switch {
	case c.Auto:
		fp.Load.Rates = []string{"auto"}
	default:
		for _, x := range c.Rates {
			fp.Load.Rates = append(fp.Load.Rates, fmtLevel(x))
		}
	}
	if len(c.Metadata) > 0 {
		fp.Metadata = fingerprint.RedactMetadata(c.Metadata)
	}
	r.fp = fp
}

// validityOptions returns the thresholds Judge uses for every step.
func (r *runner) validityOptions() ValidityOptions {
	v := r.cfg.Validity
	if r.cfg.Embedded {
		v.MaxClientCPU = -1
	}
	return v
}

func (r *runner) validityFingerprint() *fingerprint.Validity {
	v := r.cfg.Validity.withDefaults()
	return &fingerprint.Validity{
		MaxSendLagMS: ms(v.MaxSendLag),
		MaxClientCPU: v.MaxClientCPU,
		CPUChecked:   r.validityOptions().withDefaults().MaxClientCPU > 0,
		MaxErrorRate: v.MaxErrorRate,
		GoodputRatio: DefaultGoodputRatio,
	}
}

func sloMillis(c Config) map[string]float64 {
	m := map[string]float64{}
	for _, t := range c.SLO.Thresholds() {
		m[t.Name] = float64(t.Value) / 1e6
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// openFiles writes command.txt and help.txt and opens the appenders.
func (r *runner) openFiles() error {
	cmd := fingerprint.ShellJoin(fingerprint.Redact(r.opts.Args)) + "\n"
	if err := r.run.WriteFile(artifacts.CommandFile, []byte(cmd)); err != nil {
		return err
	}
	if r.opts.Help != "" {
		if err := r.run.WriteFile(artifacts.HelpFile, []byte(r.opts.Help)); err != nil {
			return err
		}
	}
	var err error
	open := func(name string) *artifacts.Appender {
		if err != nil {
			return nil
		}
		var a *artifacts.Appender
		a, err = r.run.Append(name)
		return a
	}
	r.records = open(artifacts.RecordsFile)
	r.errs = open(artifacts.ErrorsFile)
	r.before = open(artifacts.MetricsBeforeFile)
	r.during = open(artifacts.MetricsDuringFile)
	r.after = open(artifacts.MetricsAfterFile)
	return err
}

// runLevels runs the ladder or the adaptive search.
func (r *runner) runLevels(ctx context.Context) error {
	c := r.cfg
	if c.Auto {
		opts := c.Search
		if opts.Start <= 0 {
			r.probe = r.runProbe(ctx)
			if ctx.Err() != nil {
				return nil
			}
			switch {
			case r.probe.EstimateReqPerS > 0:
				opts.Start = roundRate(r.probe.EstimateReqPerS)
				// The estimate is the saturated throughput: the knee is
				// rarely more than a factor 1.4 away from it, so the
				// search brackets with x/÷ sqrt 2 rather than 2, which
				// saves a narrowing step in the common case.
				if opts.Factor == 0 {
					opts.Factor = ProbeSearchFactor
				}
			default:
				opts.Start = DefaultAutoStart
				level.Warn(r.logger).Log("msg", "throughput probe gave no estimate: the search starts at the default rate",
					"start", opts.Start, "why", r.probe.Note)
			}
			r.probe.StartRate = opts.Start
			level.Info(r.logger).Log("msg", "throughput probe done", "estimate_req_per_s", fmt.Sprintf("%.4g", r.probe.EstimateReqPerS),
				"search_start", opts.Start, "note", r.probe.Note)
		}
		res, err := Search(opts, func(rate float64) (StepOutcome, error) {
			if err := ctx.Err(); err != nil {
				return StepOutcome{}, err
			}
			l, err := r.runLevel(ctx, rate)
			if err != nil {
				return StepOutcome{}, err
			}
			if ctx.Err() != nil {
				return StepOutcome{}, ctx.Err()
			}
			return l.Outcome, nil
		})
		r.search = &res
		if res.Stop != "" {
			level.Warn(r.logger).Log("msg", "knee search stopped early", "why", res.Stop)
		}
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	levels := c.Rates
	if len(c.Concurrency) > 0 {
		levels = nil
		for _, n := range c.Concurrency {
			levels = append(levels, float64(n))
		}
	}
	for _, lv := range levels {
		if ctx.Err() != nil {
			return nil
		}
		if _, err := r.runLevel(ctx, lv); err != nil {
			return err
		}
	}
	return nil
}

// roundRate rounds a rate estimate to three significant digits, so the
// first level of a search reads "rate=287" rather than "rate=286.9371".
func roundRate(v float64) float64 {
	if v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return v
	}
	p := math.Pow(10, math.Floor(math.Log10(v))-2)
	return math.Round(v/p) * p
}

// runLevel runs every round of one level and aggregates them. Running a
// level again (the search reruns an invalid one) adds attempts to it.
func (r *runner) runLevel(ctx context.Context, lv float64) (Level, error) {
	if !slices.Contains(r.levels, lv) {
		r.levels = append(r.levels, lv)
	}
	var rounds []*Step
	for round := 1; round <= r.cfg.Rounds; round++ {
		if ctx.Err() != nil && len(rounds) > 0 {
			break
		}
		st, err := r.runStep(ctx, lv, round)
		if st != nil {
			rounds = append(rounds, st)
		}
		if err != nil {
			return Level{}, err
		}
	}
	return aggregate(r.levelLabel(lv), lv, r.stepMode(lv), rounds, DefaultGoodputRatio), nil
}

func (r *runner) stepMode(lv float64) string {
	switch {
	case len(r.cfg.Concurrency) > 0:
		return ModeClosed
	case math.IsInf(lv, 1):
		return ModeBurst
	case r.cfg.MaxConcurrency > 0:
		return ModeBoth
	}
	return ModeOpen
}

func (r *runner) levelLabel(lv float64) string {
	if len(r.cfg.Concurrency) > 0 {
		return "concurrency=" + fmtLevel(lv)
	}
	return "rate=" + fmtLevel(lv)
}

// stepSeed derives a step's seed from the sweep seed and the step's level
// and round, so a level's arrivals and prompts do not depend on the order in
// which the search visits levels.
func stepSeed(seed int64, lv float64, round int) uint64 {
	return attemptSeed(seed, lv, round, 1)
}

// attemptSeed is stepSeed for the attempt-th run of a step (a rerun of an
// invalid level draws new arrivals and prompts; attempt 1 is stepSeed).
func attemptSeed(seed int64, lv float64, round, attempt int) uint64 {
	x := uint64(seed) ^ math.Float64bits(lv)*0x9e3779b97f4a7c15 ^ uint64(round)*0xbf58476d1ce4e5b9
	if attempt > 1 {
		x ^= uint64(attempt-1) * 0xd6e8feb86659fd93
	}
	x ^= x >> 31
	x *= 0x94d049bb133111eb
	return x ^ x>>29
}

// runStep runs one step: warmups, idle wait, snapshot, load, drain,
// snapshot, statistics. It returns the step (nil when ctx ended before it
// began) and an error only for artifact write failures.
func (r *runner) runStep(ctx context.Context, lv float64, round int) (*Step, error) {
	if ctx.Err() != nil {
		return nil, nil
	}
	c := r.cfg
	idx := len(r.steps)
	label := r.levelLabel(lv)
	if c.Rounds > 1 {
		label += "/round=" + strconv.Itoa(round)
	}
	attempt := 1
	for _, s := range r.steps {
		if s.Level == lv && s.Round == round {
			attempt++
		}
	}
	if attempt > 1 {
		label += "/attempt=" + strconv.Itoa(attempt)
	}
	st := &Step{Index: idx, Label: label, Level: lv, Round: round, Attempt: attempt, Mode: r.stepMode(lv), Warmups: c.Warmups}
	r.current = fmt.Sprintf("%d (%s)", idx, label)
	if st.Mode == ModeClosed {
		st.Concurrency = int(lv)
	} else {
		st.MaxConcurrency = c.MaxConcurrency
	}
	seed := attemptSeed(c.Seed, lv, round, attempt)
	logger := log.With(r.logger, "step", idx, "label", label)

	// Items first (prompt building may call /tokenize): nothing of it may
	// happen on the send path.
	n, byDuration, err := r.plannedCount(st, seed)
	if err != nil {
		return nil, err
	}
	items, err := r.buildItems(ctx, seed, n, c.Warmups)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil
		}
		return nil, fmt.Errorf("step %s: build prompts: %w", label, err)
	}
	if c.Workload.PrefixTokens > 0 {
		st.PrefixGeneration = r.prompts.prefixGeneration()
	}

	var preWarm *scrape.Snapshot
	if c.Warmups > 0 {
		preWarm = r.snapshot(ctx, st, "before-warmup", r.before)
		st.WarmupFailed = r.warmup(ctx, st, items.warmups)
	}
	idle := r.waitIdle(ctx, logger)
	before := r.snapshot(ctx, st, "before", r.before)

	var maxima map[string]float64
	var stopRec func() error
	if r.metricsOK {
		_ = r.during.WriteSnapshot(artifacts.Snapshot{Step: idx, Label: label, Phase: "during", Time: time.Now(), Source: fingerprint.RedactText(r.metricsURL)}, nil)
		rec := scrape.NewRecorder(r.http, r.metricsURL, c.MetricsInterval, r.during, r.scrapeOpts()...)
		stop := rec.Start(ctx)
		stopRec = func() error {
			err := stop()
			maxima = rec.Max()
			return err
		}
	} else {
		_ = r.during.WriteSnapshot(artifacts.Snapshot{Step: idx, Label: label, Phase: "during", Time: time.Now(), NotRecorded: r.metricsReason}, nil)
	}

	level.Info(logger).Log("msg", "step starting", "mode", st.Mode, "requests", countText(n))
	cpu0, cpuOK := processCPU()
	t0 := time.Now()
	st.Start = t0.UTC()
	recs, prompts := r.load(ctx, st, t0, seed, items.measured, n)
	dur := time.Since(t0)
	cpu1, cpuOK1 := processCPU()
	st.End = time.Now().UTC()
	if stopRec != nil {
		if err := stopRec(); err != nil {
			level.Warn(logger).Log("msg", "during-step scrapes incomplete", "err", r.redact(err.Error()))
		}
	}
	st.Interrupted = ctx.Err() != nil
	var after *scrape.Snapshot
	if st.Interrupted {
		_ = r.after.WriteSnapshot(artifacts.Snapshot{Step: idx, Label: label, Phase: "after", Time: time.Now(), NotRecorded: "interrupted"}, nil)
	} else {
		after = r.snapshot(ctx, st, "after", r.after)
	}

	requested := lv
	if st.Mode == ModeClosed {
		requested = 0
	}
	window := time.Duration(0)
	if byDuration {
		window = c.Duration
	}
	st.Stats = ComputeStats(recs, StatsOptions{
		SLO: c.SLO, Percentiles: c.Percentiles, Duration: dur, RequestedRate: requested, Seed: seed,
		Start: t0, Window: window,
	})
	st.Server = computeServerStats(preWarm, before, after, maxima, st.Stats.TTFT)
	if !r.metricsOK {
		st.Server.Reason = "the server's /metrics could not be read: " + r.metricsReason
	}
	cores := -1.0
	if cpuOK && cpuOK1 && dur > 0 {
		cores = float64(cpu1-cpu0) / float64(dur)
	}
	st.Validity = Judge(st.Stats, cores, idle, st.Interrupted, r.validityOptions())
	r.steps = append(r.steps, st)
	r.fp.Steps = append(r.fp.Steps, fingerprint.StepWindow{Index: idx, Label: label, Start: st.Start, End: st.End, Requests: st.Stats.Requests})
	if err := r.writeRecords(st, recs, prompts); err != nil {
		return st, err
	}
	kv := []any{"msg", "step done", "completed", st.Stats.Completed, "failed", st.Stats.Failed,
		"req_per_s", fmt.Sprintf("%.3g", st.Stats.RequestThroughput), "goodput", fmt.Sprintf("%.3g", st.Stats.RequestGoodput),
		"ttft_p99_ms", fmt.Sprintf("%.4g", st.Stats.TTFT.P99), "tpot_p99_ms", fmt.Sprintf("%.4g", st.Stats.TPOT.P99),
		"valid", st.Validity.Valid}
	if !st.Validity.Valid {
		kv = append(kv, "flags", strings.Join(st.Validity.Flags, ","))
	}
	level.Info(logger).Log(kv...)
	return st, nil
}

func countText(n int) string {
	if n < 0 {
		return "until the duration ends"
	}
	return strconv.Itoa(n)
}

// plannedCount returns the number of requests a step will send, or -1 when
// it is not known in advance (closed loop bounded by a duration), and
// whether the step's arrival window is the duration (closed loop only). An
// open loop sends --num-prompts, or round(rate x --duration) raised to
// MinPrompts, on a schedule normalized as vllm bench serve's
// (normalizedOffsets): its window ends at the last arrival, N / rate.
func (r *runner) plannedCount(st *Step, seed uint64) (n int, byDuration bool, err error) {
	c := r.cfg
	if c.NumPrompts > 0 {
		return c.NumPrompts, false, nil
	}
	if st.Mode == ModeClosed {
		return -1, true, nil
	}
	x := math.Round(st.Level * c.Duration.Seconds())
	if x > maxStepRequests {
		return 0, false, fmt.Errorf("step %s would send more than %d requests: shorten --duration", st.Label, maxStepRequests)
	}
	return max(int(x), c.MinPrompts, 1), false, nil
}

// snapshot scrapes /metrics, appends it to w as the given phase and returns
// it (nil when not recorded).
func (r *runner) snapshot(ctx context.Context, st *Step, phase string, w *artifacts.Appender) *scrape.Snapshot {
	meta := artifacts.Snapshot{Step: st.Index, Label: st.Label, Phase: phase, Time: time.Now()}
	if !r.metricsOK {
		meta.NotRecorded = r.metricsReason
		_ = w.WriteSnapshot(meta, nil)
		return nil
	}
	meta.Source = fingerprint.RedactText(r.metricsURL)
	snap, err := scrape.Fetch(ctx, r.http, r.metricsURL, r.scrapeOpts()...)
	if err != nil {
		meta.NotRecorded = r.redact(err.Error())
		_ = w.WriteSnapshot(meta, nil)
		return nil
	}
	meta.Time = snap.Time
	_ = w.WriteSnapshot(meta, snap.Raw)
	return snap
}

// waitIdle polls /metrics until running + waiting reads 0 or the idle
// timeout passes.
func (r *runner) waitIdle(ctx context.Context, logger log.Logger) IdleProof {
	p := IdleProof{Status: IdleNotRecorded}
	switch {
	case !r.metricsOK:
		p.Reason = "the server's /metrics could not be read: " + r.metricsReason
		return p
	case !r.idleKnown:
		p.Reason = "the server's /metrics has no vllm:num_requests_running and vllm:num_requests_waiting"
		return p
	}
	start := time.Now()
	deadline := start.Add(r.cfg.IdleTimeout)
	t := time.NewTimer(0)
	defer t.Stop()
	<-t.C
	logged := false
	for {
		snap, err := scrape.Fetch(ctx, r.http, r.metricsURL, r.scrapeOpts()...)
		now := time.Now()
		p.Waited = now.Sub(start).Seconds()
		if err == nil {
			p.At = snap.Time.UTC()
			p.Running, _ = snap.Sum(scrape.MetricNumRequestsRunning, nil)
			p.Waiting, _ = snap.Sum(scrape.MetricNumRequestsWaiting, nil)
			idle, known := scrape.Idle(snap)
			switch {
			case !known:
				p.Status, p.Reason = IdleNotRecorded, "vllm:num_requests_running/waiting missing from /metrics"
				return p
			case idle:
				p.Status, p.Reason = IdleProven, ""
				return p
			}
			p.Status, p.Reason = IdleNotIdle, fmt.Sprintf("running %g, waiting %g", p.Running, p.Waiting)
		} else if p.Status != IdleNotIdle {
			p.Status, p.Reason = IdleNotRecorded, r.redact(err.Error())
		}
		if ctx.Err() != nil || !now.Before(deadline) {
			if p.Status == IdleNotIdle {
				level.Warn(logger).Log("msg", "server not idle before the step", "running", p.Running, "waiting", p.Waiting, "waited", time.Duration(p.Waited*float64(time.Second)))
			}
			return p
		}
		if !logged && now.Sub(start) > 2*time.Second {
			level.Info(logger).Log("msg", "waiting for the server to be idle", "running", p.Running, "waiting", p.Waiting)
			logged = true
		}
		t.Reset(min(idlePollInterval, time.Until(deadline)))
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
}

// warmup sends the warmup requests (concurrently, at most MaxConcurrency
// or 8 at once) and returns how many failed. They are not measured.
func (r *runner) warmup(ctx context.Context, st *Step, items []promptItem) int {
	limit := 8
	if r.cfg.MaxConcurrency > 0 {
		limit = min(limit, r.cfg.MaxConcurrency)
	}
	if st.Mode == ModeClosed {
		limit = min(limit, st.Concurrency)
	}
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := 0
	for i, it := range items {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			rec := prober.Record{Model: r.model, Scheduled: time.Now()}
			r.client.Do(ctx, r.request(fmt.Sprintf("llmprobe-%s-%d-warmup-%d", r.runID, st.Index, i), it), &rec)
			if !rec.OK() {
				mu.Lock()
				failed++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return failed
}

// request builds the client request of an item.
func (r *runner) request(id string, it promptItem) client.Request {
	req := client.Request{
		ID:          id,
		MaxTokens:   it.OutputTokens,
		IgnoreEOS:   r.cfg.Workload.IgnoreEOSOrDefault(),
		InputTokens: it.PrefixTokens + it.InputTokens,
	}
	if r.cfg.API == "chat" {
		req.Messages = []client.Message{{Role: "user", Content: it.Prompt}}
	} else {
		req.Prompt = it.Prompt
	}
	return req
}

// load runs the step's schedule and returns its records in arrival order,
// with their prompts when --save-prompts.
func (r *runner) load(ctx context.Context, st *Step, t0 time.Time, seed uint64, items *itemList, n int) ([]prober.Record, []string) {
	c := r.cfg
	sc := schedule.Config{Start: t0}
	switch st.Mode {
	case ModeClosed:
		sc.Mode, sc.Workers = schedule.Closed, st.Concurrency
	case ModeBurst:
		sc.Mode = schedule.Burst
	default:
		if c.Unscaled {
			proc, err := arrival.New(c.Arrival, st.Level, c.Burstiness, seed)
			if err != nil { // validated
				panic(err)
			}
			sc.Mode, sc.Process = schedule.Open, proc
		} else {
			offsets, err := normalizedOffsets(c.Arrival, st.Level, c.Burstiness, seed, n)
			if err != nil { // validated
				panic(err)
			}
			sc.Mode, sc.Process = schedule.Open, &offsetProcess{offsets: offsets}
		}
		if c.MaxConcurrency > 0 {
			sc.MaxConcurrency, sc.OnFull = c.MaxConcurrency, schedule.Wait
		}
	}
	switch {
	case n >= 0:
		// Open loop and burst: exactly the planned arrivals.
		sc.Count = int64(n)
	case c.NumPrompts > 0:
		sc.Count = int64(c.NumPrompts)
	default:
		sc.Duration = c.Duration
	}
	var prog StepProgress
	if r.opts.Progress && r.opts.Stderr != nil && r.opts.NewProgress != nil {
		prog = r.opts.NewProgress(r.opts.Stderr, n, st.Label)
	}
	type indexed struct {
		i      int64
		rec    prober.Record
		prompt string
	}
	var mu sync.Mutex
	var got []indexed
	sched, err := schedule.New(sc, func(ctx context.Context, scheduled time.Time, queueWait time.Duration) {
		i, _ := schedule.Index(ctx)
		it, err := items.get(ctx, int(i))
		rec := prober.Record{
			Target:    r.fp.Target.URL,
			Probe:     st.Label,
			Model:     r.model,
			RequestID: fmt.Sprintf("llmprobe-%s-%d-%d", r.runID, st.Index, i),
			Scheduled: scheduled,
			QueueWait: queueWait,
		}
		if err != nil {
			now := time.Now()
			rec.Sent, rec.WallStart, rec.SendLag = now, now, now.Sub(scheduled)
			rec.Error, rec.ErrorMessage = prober.ClassCanceled, "building the prompt: "+err.Error()
		} else {
			r.client.Do(ctx, r.request(rec.RequestID, it), &rec)
		}
		// The prompt is kept (shared, not copied) to cut it out of error
		// messages; it is written only with --save-prompts.
		prompt := it.Prompt
		mu.Lock()
		got = append(got, indexed{i, rec, prompt})
		mu.Unlock()
		if prog != nil {
			prog.Add(1)
		}
	})
	if err != nil { // validated
		panic(err)
	}
	if _, err := sched.Run(ctx); err != nil {
		level.Error(r.logger).Log("msg", "schedule", "err", r.redact(err.Error()))
	}
	if prog != nil {
		prog.Finish()
	}
	slices.SortFunc(got, func(a, b indexed) int { return int(a.i - b.i) })
	out := make([]prober.Record, len(got))
	var prompts []string
	for k := range got {
		out[k] = got[k].rec
		prompts = append(prompts, got[k].prompt)
	}
	return out, prompts
}

// recordLine is one line of records.jsonl.
type recordLine struct {
	Step  int `json:"step"`
	Round int `json:"round"`
	*prober.Record
	Prompt string `json:"prompt,omitempty"`
}

// errorLine is one line of errors-redacted.jsonl.
type errorLine struct {
	Step       int       `json:"step"`
	Label      string    `json:"label"`
	RequestID  string    `json:"request_id"`
	Time       time.Time `json:"time"`
	Error      string    `json:"error"`
	HTTPStatus int       `json:"http_status,omitempty"`
	Message    string    `json:"message,omitempty"`
}

// writeRecords appends a step's records (and errors) to records.jsonl and
// errors-redacted.jsonl. Error messages lose credentials (r.redact) and,
// without --save-prompts, any piece of the request's prompt a server
// echoed (fingerprint.ScrubPrompt).
func (r *runner) writeRecords(st *Step, recs []prober.Record, prompts []string) error {
	for i := range recs {
		rec := &recs[i]
		prompt := ""
		if i < len(prompts) {
			prompt = prompts[i]
		}
		if rec.ErrorMessage != "" {
			msg := r.redact(rec.ErrorMessage)
			if !r.cfg.SavePrompts {
				msg = fingerprint.ScrubPrompt(msg, prompt)
			}
			rec.ErrorMessage = msg
		}
		line := recordLine{Step: st.Index, Round: st.Round, Record: rec}
		if r.cfg.SavePrompts {
			line.Prompt = prompt
		}
		if err := r.records.WriteLine(line); err != nil {
			return err
		}
		if !rec.OK() {
			el := errorLine{Step: st.Index, Label: st.Label, RequestID: rec.RequestID, Time: rec.WallStart.UTC(),
				Error: string(rec.Error), HTTPStatus: rec.HTTPStatus, Message: rec.ErrorMessage}
			if err := r.errs.WriteLine(el); err != nil {
				return err
			}
		}
	}
	return nil
}

// result assembles result.json from the steps run.
func (r *runner) result(complete bool) *Result {
	c := r.cfg
	res := &Result{
		Date:        r.fp.Start.Format("20060102-150405"),
		Backend:     "openai",
		ModelID:     r.model,
		TokenizerID: r.fp.Target.Root,
		Metadata:    c.Metadata,
		Mode:        c.Mode(),
		Arrival:     c.Arrival,
		Burstiness:  c.Burstiness,
		Rates:       c.RatesText,
		SLO:         sloMillis(c),
		Percentiles: c.Percentiles,
		Steps:       r.steps,
		KneeUnit:    "req/s",
		Complete:    complete,
		Name:        c.Name,
		Rounds:      c.Rounds,
	}
	if c.API == "chat" {
		res.Backend = "openai-chat"
	}
	if res.TokenizerID == fingerprint.NotRecorded {
		res.TokenizerID = r.model
	}
	for k := range c.Metadata {
		res.MetadataOrder = append(res.MetadataOrder, k)
	}
	slices.Sort(res.MetadataOrder)
	if len(c.Concurrency) > 0 {
		res.KneeUnit, res.Rates = "concurrency", ""
	}
	var outcomes []StepOutcome
	for _, lv := range r.levels {
		var rounds []*Step
		for _, s := range r.steps {
			if s.Level == lv {
				rounds = append(rounds, s)
			}
		}
		if len(rounds) == 0 {
			continue
		}
		l := aggregate(r.levelLabel(lv), lv, r.stepMode(lv), rounds, DefaultGoodputRatio)
		res.Levels = append(res.Levels, l)
		outcomes = append(outcomes, l.Outcome)
	}
	slices.SortStableFunc(res.Levels, func(a, b Level) int {
		switch {
		case a.Level < b.Level:
			return -1
		case a.Level > b.Level:
			return 1
		}
		return 0
	})
	res.Knee = LadderKnee(outcomes, DefaultGoodputRatio)
	res.Probe = r.probe
	if c.Mode() != ModeClosed {
		res.ReferenceCapacity = c.ReferenceCapacity
		res.MaxConcurrency = c.MaxConcurrency
	}
	if r.search != nil {
		res.Knee.Stop = r.search.Stop
		res.SearchEnd = r.search.End
	}
	if len(c.Concurrency) == 0 {
		res.Notes = append(res.Notes, "goodput is vllm bench serve's request_goodput: good requests per second of the step's duration, "+
			"drain included, so it never exceeds what the server served. keep-up % is the knee's criterion (result.json goodput_ratio, "+
			"capped at 100 % for display): the fraction of the step's requests that were good, times its arrival window over the time "+
			"the server needed to finish them less one unloaded request latency; a level keeps up at 90 % or more.")
	}
	if c.HasBurst() {
		res.Notes = append(res.Notes, "rate inf is a burst, not an open loop: every request of the step was sent at once, so its latencies include queueing behind the whole burst; it is not used for the knee.")
	}
	if c.Embedded {
		res.Notes = append(res.Notes, "target: the built-in vLLM simulator, started in-process (no --target); the client CPU check is skipped because the simulator shares the process.")
	}
	if !r.metricsOK {
		res.Notes = append(res.Notes, "the server's /metrics could not be read ("+r.metricsReason+"): snapshots, idle proofs and server-side figures are not-recorded.")
	} else if !r.idleKnown {
		res.Notes = append(res.Notes, "the server's /metrics has no vllm:num_requests_running/waiting: idle proofs are not-recorded.")
	}
	if r.probe != nil {
		res.Notes = append(res.Notes, r.probeNote())
	}
	if r.search != nil && complete {
		switch r.search.End {
		case SearchMaxSteps, SearchInvalid:
			res.Notes = append(res.Notes, "the adaptive search stopped early: "+r.search.Stop+".")
		}
	}
	return res
}

// probeNote describes the throughput probe in one sentence.
func (r *runner) probeNote() string {
	p := r.probe
	if p.EstimateReqPerS <= 0 {
		return fmt.Sprintf("the throughput probe gave no estimate (%s); the search started at %s req/s.", p.Note, fmtLevel(p.StartRate))
	}
	return fmt.Sprintf("before the search, a closed-loop throughput probe (concurrency %s, %s each) estimated the capacity at %s req/s (%s); the search started there and stepped by a factor sqrt 2 to bracket the knee.",
		probeLevelsText(p.Levels), ProbeDuration, fmtLevel(roundRate(p.EstimateReqPerS)), p.Note)
}

func probeLevelsText(ls []ProbeLevel) string {
	var parts []string
	for _, l := range ls {
		parts = append(parts, strconv.Itoa(l.Concurrency))
	}
	return strings.Join(parts, ", ")
}

// finish writes result.json, has Options.Report render analysis.md with its
// plots and print the table, and writes the manifest.
func (r *runner) finish(res *Result, complete bool, reason string) error {
	var errs []error
	for _, a := range []*artifacts.Appender{r.records, r.errs, r.before, r.during, r.after} {
		if a != nil {
			if err := a.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := r.run.WriteJSON(artifacts.ResultFile, res); err != nil {
		errs = append(errs, err)
	}
	r.fp.End = time.Now().UTC()
	res.InterruptedReason, res.Fingerprint = reason, r.fp
	if r.opts.Report != nil {
		if err := r.opts.Report(r.run, res); err != nil {
			errs = append(errs, err)
		}
	}
	m := artifacts.Manifest{Fingerprint: r.fp, InterruptedReason: reason}
	if err := r.run.Finish(m, complete); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
