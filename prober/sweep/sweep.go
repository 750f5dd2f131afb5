package sweep

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/go-kit/log"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/endpoint"
	"github.com/llmprobe/llmprobe/prober/engine"
	"github.com/llmprobe/llmprobe/prober/fingerprint"
	"github.com/llmprobe/llmprobe/prober/redact"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// Options are a sweep's collaborators. The zero value works: no logging,
// an own HTTP client, the system clock.
type Options struct {
	// Logger receives progress and warnings (nil: none).
	Logger log.Logger
	// Args is the full command line, program name first, recorded in the
	// fingerprint (redacted there: fingerprint.New).
	Args []string
	// HTTPClient reads /metrics (nil: a client built from
	// Config.HTTPConfig with a 10s timeout and a pool of its own, closed
	// when the sweep ends); its redirects are never followed. Discovery,
	// /tokenize and the requests under load always use the sweep's own
	// client, built from Config.HTTPConfig.
	HTTPClient *http.Client
	// Now is the clock of the sweep's start (Prepared.Start: the run
	// directory's name, the fingerprint's start; nil: time.Now).
	Now func() time.Time

	// rewritePrompt, set only by tests (export_test.go), replaces each
	// item just before its request is built (e.g. to force repeats).
	rewritePrompt func(workload.Item) workload.Item
}

// ErrUnreachable is wrapped by Prepare's error when the target cannot be
// reached.
var ErrUnreachable = errors.New("target unreachable")

// ErrStepCapReached is wrapped by a RecordSink's Record error when the
// records of the step in flight reached the cap on its bytes
// (Config.StepByteCap). The record was kept; the engine then stops the
// step's sending (its context canceled with that error as the cause), flags
// it FlagByteCap and ends the sweep cleanly after it. It is not a failure:
// Run returns the Result with InterruptedReason "byte cap: ..." and a nil
// error.
var ErrStepCapReached = errors.New("step byte cap reached")

// Snapshot phases (Snapshot.Phase), in the order a step takes them.
const (
	PhaseBeforeWarmup = "before-warmup"
	PhaseBefore       = "before"
	PhaseDuring       = "during"
	PhaseAfter        = "after"
)

// StepRecord is one measured request of a step, as a RecordSink receives
// it.
type StepRecord struct {
	// Step is the step's index (Step.Index), Round its round and Label its
	// label; Index is the request's position in the step's arrival order.
	Step  int
	Round int
	Label string
	Index int64
	// Record is the measurement. Its ErrorMessage is already redacted:
	// credentials removed and, without Config.SavePrompts, any echo of the
	// prompt scrubbed (redact.ScrubPrompt). The sink may keep it; the
	// sweep does not touch it after handing it over.
	Record *prober.Record
	// Prompt is the prompt text, only with Config.SavePrompts ("" else).
	Prompt string
	// Completed is when the sweep took the finished request (just after
	// client.Do returned). A sink receives a sweep's records in Completed
	// order.
	Completed time.Time
}

// Snapshot is one read of the server's /metrics around a step.
type Snapshot struct {
	// Step and Label name the step; Phase is PhaseBeforeWarmup, PhaseBefore,
	// PhaseDuring or PhaseAfter.
	Step  int
	Label string
	Phase string
	// Time is when the scrape started; Source the scraped URL (redacted).
	Time   time.Time
	Source string
	// NotRecorded says why there is no Body ("" when there is one).
	NotRecorded string
	// Body is the raw exposition text (nil when not recorded, and for
	// PhaseDuring: the during-step scrapes follow through
	// RecordSink.Scrape).
	Body []byte
}

// RecordSink receives a sweep's raw measurements as they are made: every
// measured request as soon as it completes, and the server's /metrics
// snapshots. Record calls never overlap (the sweep serializes them, in
// Completed order); Snapshot and Scrape may come concurrently with them.
// An error from Record is sticky for the sweep: the step in flight ends
// normally, then the sweep stops with it (an artifact write failure);
// except an error wrapping ErrStepCapReached, which stops the step at once
// and the sweep cleanly.
// Errors from Snapshot and Scrape are ignored and a failing Scrape stops the
// step's during-step recording (the snapshot files are evidence, not
// results).
type RecordSink interface {
	// Record receives one measured request.
	Record(StepRecord) error
	// Snapshot receives a /metrics snapshot of a step.
	Snapshot(Snapshot) error
	// Scrape receives one during-step scrape of step, an entry of
	// prober/scrape's recording format (scrape.WriteScrape), after that
	// step's PhaseDuring Snapshot. entry is valid only during the call.
	Scrape(step int, entry []byte) error
}

// DiscardSink is a RecordSink that keeps nothing.
type DiscardSink struct{}

// Record implements RecordSink.
func (DiscardSink) Record(StepRecord) error { return nil }

// Snapshot implements RecordSink.
func (DiscardSink) Snapshot(Snapshot) error { return nil }

// Scrape implements RecordSink.
func (DiscardSink) Scrape(int, []byte) error { return nil }

// SweepInfo describes a sweep when it starts.
type SweepInfo struct {
	// Target is the redacted base URL, Model the model requested, Mode the
	// load mode (Config.Mode).
	Target, Model, Mode string
	// Start is Prepared.Start.
	Start time.Time
}

// Observer follows a sweep's progress, for progress bars, tables and live
// status. Methods are called from the goroutine running Prepared.Run, except
// RequestDone, which is called from the request's own goroutine (calls
// overlap). A *Step passed in is the sweep's own: read it during the call,
// do not keep or modify it. Embed NopObserver to implement only some
// methods.
type Observer interface {
	// SweepStarted is called once, before the first step.
	SweepStarted(SweepInfo)
	// StepStarted is called when a step's measured load begins (after its
	// warmups and idle wait); planned is the number of requests it will
	// send, or -1 when not known in advance (a closed loop bounded by a
	// duration).
	StepStarted(st *Step, planned int)
	// RequestDone is called when a measured request of st completed, after
	// the sink received it.
	RequestDone(st *Step, rec *prober.Record)
	// StepDone is called when st is finished: Stats, Server and Validity
	// are set.
	StepDone(st *Step)
	// SweepDone is called once with the Result Run returns (also for an
	// interrupted or failed sweep once steps could start).
	SweepDone(res *Result)
}

// NopObserver is an Observer that does nothing.
type NopObserver struct{}

// SweepStarted implements Observer.
func (NopObserver) SweepStarted(SweepInfo) {}

// StepStarted implements Observer.
func (NopObserver) StepStarted(*Step, int) {}

// RequestDone implements Observer.
func (NopObserver) RequestDone(*Step, *prober.Record) {}

// StepDone implements Observer.
func (NopObserver) StepDone(*Step) {}

// SweepDone implements Observer.
func (NopObserver) SweepDone(*Result) {}

type runner struct {
	cfg    Config
	opts   Options
	logger log.Logger
	http   *http.Client
	close  func() // closes the transports runner created

	client        *client.Client
	loadClient    *http.Client     // carries the endpoint's requests (client.NewHTTPClient)
	red           *redact.Redactor // the secrets the sweep sends (redact)
	model         string
	metricsURL    string
	metricsOK     bool           // /metrics was readable at preflight
	metricsReason string         // why not
	energy        *energySource  // the GPU metrics (energy.go)
	eng           *engine.Engine // the server engine's adapter (configured or detected)
	idleKnown     bool           // /metrics has the engine's running and waiting gauges
	idleReason    string         // why not (names the engine)
	tokenizer     string         // fingerprint tokenizer method
	runID         string
	start         time.Time

	sink RecordSink
	obs  Observer
	// sinkMu serializes Record calls (completion order); sinkErr is the
	// first error one returned.
	sinkMu  sync.Mutex
	sinkErr error
	// stopStep cancels the sending of the step in flight; capErr is the
	// first ErrStepCapReached of that step (both under sinkMu).
	stopStep context.CancelCauseFunc
	capErr   error

	fp      fingerprint.Fingerprint
	steps   []*Step
	current string    // the step running now, "3 (rate=8)"
	levels  []float64 // levels in first-run order
	prompts *promptSource
	ep      *endpoint.Endpoint // the one request path: discovery, sizing, requests
	info    endpoint.Info      // what discovery learned
	sizing  *endpoint.Sizing   // how prompts are sized
	// stepNotes are result notes about single steps (a prefix-cache check
	// that could not be applied).
	stepNotes []string
	search    *SearchResult         // --rates auto: how the search ended
	probe     *ThroughputProbe      // --rates auto: the throughput probe
	features  *workload.RequestPlan // the workload's request features (nil: none)
	// dataset is the workload's dataset (nil: drawn prompts), datasetInfo
	// its measurement at preflight.
	dataset     *workload.DatasetSource
	datasetInfo *workload.DatasetInfo
	trace       *traceRun // --trace: the replay (trace.go)
	// bg collects a background sweep's readings of the server's production
	// traffic (background.go; nil for an isolated sweep).
	bg *bgState
}

// Prepared is a sweep that passed its preflight and may now run. Create it
// with Prepare; call Run once (or Close to give it up).
type Prepared struct {
	r    *runner
	once sync.Once
	ran  bool
	mu   sync.Mutex
}

// Prepare validates cfg and checks the target before anything is created
// or any load is sent: /v1/models must answer and list the model, the
// workload's longest request must fit the model's max_model_len, and
// /metrics is read once (a server without it is swept with not-recorded
// server figures). It also reads what the fingerprint needs (/version, the
// engine config from /metrics). A config error is a *FieldError naming the
// Config field; an unreachable target wraps ErrUnreachable. Error text is
// redacted (credentials removed).
func Prepare(ctx context.Context, cfg Config, opts Options) (*Prepared, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.PromptNonce == 0 {
		cfg.PromptNonce = NewPromptNonce()
	}
	r := &runner{cfg: cfg, opts: opts, logger: opts.Logger, http: opts.HTTPClient}
	if r.logger == nil {
		r.logger = log.NewNopLogger()
	}
	// Own clients, so that no idle connection outlives the sweep; both
	// built from the HTTP config (httpconfig.go), so that /metrics gets
	// the same TLS settings and headers as the requests.
	closers, err := r.httpClients()
	r.close = func() {
		for _, c := range closers {
			c()
		}
	}
	if err != nil {
		r.close()
		return nil, err
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	r.start = now()
	r.runID = strconv.FormatInt(r.start.UnixNano()%1e12, 36)
	if err := r.loadDataset(); err != nil {
		r.close()
		return nil, err
	}
	if err := r.preflight(ctx); err != nil {
		r.close()
		return nil, r.redactErr(err)
	}
	r.energy = newEnergySource(ctx, &r.cfg, r.logger) // energy.go
	r.fingerprintStart(ctx, r.start)
	return &Prepared{r: r}, nil
}

// Start returns the sweep's start time (Options.Now when Prepare began).
func (p *Prepared) Start() time.Time { return p.r.start }

// PromptNonce returns the sweep's prompt nonce: Config.PromptNonce, or the
// one Prepare drew (Result.PromptNonce); 0 for a dataset, sent as it is.
func (p *Prepared) PromptNonce() int64 {
	if p.r.dataset != nil {
		return 0
	}
	return p.r.cfg.PromptNonce
}

// Model returns the model the sweep requests (Config.Model, or the first
// one /v1/models lists).
func (p *Prepared) Model() string { return p.r.model }

// Fingerprint returns the experiment fingerprint as Prepare filled it (Run
// completes it into Result.Fingerprint). A caller that gives up before Run
// (its output could not be opened) records this one.
func (p *Prepared) Fingerprint() fingerprint.Fingerprint { return p.r.fp }

// Close releases what Prepare opened (idle connections). Run closes them
// itself; Close is for a Prepared that will not run. It is idempotent.
func (p *Prepared) Close() { p.once.Do(p.r.close) }

// Run executes the sweep: every step's warmups, idle wait, snapshots, load
// and drain, handing each measured Record to sink as soon as it completes
// and reporting progress to obs (nil sink: DiscardSink; nil obs:
// NopObserver). It may be called once, from any goroutine, with its own
// context.
//
// With Config.AnswerChecks, a sweep whose every step completed then sends
// the check set once (answers.go) into Result.Answers.
//
// When ctx is canceled mid-sweep (SIGINT), the step in flight stops, what
// was measured is kept and Run returns the Result with Complete false and
// InterruptedReason saying where, and a nil error; a sweep canceled during
// its answer checks is incomplete too, without Answers. When a step fails
// (a sink error), Run returns the Result so far, InterruptedReason
// "failed: ...", and the error. When the workload cannot be set up before the first step
// (prompt sizing failed), Run returns a nil Result and the error. Errors
// are redacted.
func (p *Prepared) Run(ctx context.Context, sink RecordSink, obs Observer) (*Result, error) {
	p.mu.Lock()
	if p.ran {
		p.mu.Unlock()
		return nil, errors.New("sweep: Run called twice")
	}
	p.ran = true
	p.mu.Unlock()
	defer p.Close()
	r := p.r
	if sink == nil {
		sink = DiscardSink{}
	}
	if obs == nil {
		obs = NopObserver{}
	}
	r.sink, r.obs = sink, obs
	obs.SweepStarted(SweepInfo{Target: redact.Text(r.cfg.Target), Model: r.model, Mode: r.cfg.Mode(), Start: r.start})
	var runErr error
	var err error
	if r.prompts, err = newPromptSource(r); err != nil && ctx.Err() == nil {
		return nil, r.redactErr(fmt.Errorf("workload: %w", err))
	}
	r.fp.Target.Tokenizer = fingerprint.OrNotRecorded(r.tokenizer)
	if err == nil {
		runErr = r.runLevels(ctx)
	}
	var answers *Answers
	inChecks := false
	// A sharded sweep sends them from shard 0 alone (merge keeps shard 0's).
	if ctx.Err() == nil && runErr == nil && r.cfg.AnswerChecks != nil && r.cfg.ShardIndex == 0 {
		answers, inChecks = r.sendAnswerChecks(ctx), true
	}
	complete := ctx.Err() == nil && runErr == nil
	res := r.result(complete)
	if complete {
		res.Answers = answers
	}
	reason := ""
	switch {
	case complete:
	case inChecks:
		reason = "interrupted during the answer checks"
	case errors.Is(runErr, ErrStepCapReached) && ctx.Err() == nil:
		reason = "byte cap: " + r.redact(runErr.Error())
		runErr = nil
	case runErr != nil && ctx.Err() == nil:
		reason = "failed: " + r.redact(runErr.Error())
	case r.current != "":
		reason = "interrupted during step " + r.current
	default:
		reason = "interrupted before the first step"
	}
	r.fp.End = time.Now().UTC()
	res.InterruptedReason, res.Fingerprint = reason, r.fp
	obs.SweepDone(res)
	if runErr != nil && ctx.Err() == nil {
		return res, r.redactErr(runErr)
	}
	return res, nil
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

// deliver redacts a completed request's error message, adds it to the
// step's statistics and hands it to the sink and the observer. The sink
// sees the records in the order deliver takes its lock.
func (r *runner) deliver(st *Step, acc *StatsAccumulator, i int64, rec *prober.Record, prompt string) {
	// The prompt is used to cut it out of error messages; it reaches the
	// sink only with --save-prompts.
	if rec.ErrorMessage != "" {
		msg := r.redact(rec.ErrorMessage)
		if !r.cfg.SavePrompts {
			msg = redact.ScrubPrompt(msg, prompt)
		}
		rec.ErrorMessage = msg
	}
	acc.Add(i, rec)
	sr := StepRecord{Step: st.Index, Round: st.Round, Label: st.Label, Index: i, Record: rec}
	if r.cfg.SavePrompts {
		sr.Prompt = prompt
	}
	r.sinkMu.Lock()
	sr.Completed = time.Now()
	switch err := r.sink.Record(sr); {
	case err == nil:
	case errors.Is(err, ErrStepCapReached):
		if r.capErr == nil {
			r.capErr = err
			if r.stopStep != nil {
				r.stopStep(err)
			}
		}
	case r.sinkErr == nil:
		r.sinkErr = err
	}
	r.sinkMu.Unlock()
	r.bg.own(rec)
	r.obs.RequestDone(st, rec)
}

// beginStep makes stop the step's cancel for a cap the sink reports and
// clears the last step's cap error.
func (r *runner) beginStep(stop context.CancelCauseFunc) {
	r.sinkMu.Lock()
	defer r.sinkMu.Unlock()
	r.stopStep, r.capErr = stop, nil
}

// endStep returns the step's ErrStepCapReached (nil when its records
// stayed under the cap) and forgets its cancel.
func (r *runner) endStep() error {
	r.sinkMu.Lock()
	defer r.sinkMu.Unlock()
	err := r.capErr
	r.stopStep, r.capErr = nil, nil
	return err
}

// sinkError returns the first error the sink's Record returned.
func (r *runner) sinkError() error {
	r.sinkMu.Lock()
	defer r.sinkMu.Unlock()
	return r.sinkErr
}

// scrapeWriter hands a Recorder's entries to the sink, without the API key
// (runner.redactBody).
type scrapeWriter struct {
	r    *runner
	step int
}

func (w scrapeWriter) Write(p []byte) (int, error) {
	if err := w.r.sink.Scrape(w.step, w.r.redactBody(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}
