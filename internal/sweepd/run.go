package sweepd

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/llmprobe/llmprobe/internal/rundir"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/capacity"
	"github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// Status is a sweep run as the API shows it. It holds no secrets.
type Status struct {
	// ID names the run in the API; Target and Name are the target and the
	// sweep name; Origin is OriginAPI or OriginSchedule.
	ID     string `json:"id"`
	Target string `json:"target"`
	Name   string `json:"name"`
	Origin string `json:"origin"`
	// Status is StatusRunning, StatusDone, StatusFailed or StatusCanceled.
	Status string `json:"status"`
	// Created is when the run was accepted; Finished when it ended (nil
	// while running).
	Created  time.Time  `json:"created"`
	Finished *time.Time `json:"finished,omitempty"`
	// RunDir is the run directory's name (under --sweeps.dir/<target>/; ""
	// when the sweep failed before creating it).
	RunDir string `json:"run_dir,omitempty"`
	// Error says why a failed or canceled run ended.
	Error string `json:"error,omitempty"`
	// Step is the step in progress (nil when none is).
	Step *StepProgress `json:"step,omitempty"`
	// Steps are the finished steps, in run order.
	Steps []StepSummary `json:"steps"`
	// Result is set once the sweep ended after its first step.
	Result *ResultSummary `json:"result,omitempty"`
	// Files lists the run directory's files once the run ended
	// (GET /api/v1/sweeps/{id}/files/{name}).
	Files []string `json:"files,omitempty"`
	// Spec is the spec the run was started with.
	Spec config.SweepSpec `json:"spec"`

	dir string
}

// StepProgress is the step in progress.
type StepProgress struct {
	Index int    `json:"index"`
	Label string `json:"label"`
	// Planned is the number of requests the step sends (-1: not known in
	// advance); Done how many completed.
	Planned int   `json:"planned"`
	Done    int64 `json:"done"`
}

// StepSummary is one finished step.
type StepSummary struct {
	Index int    `json:"index"`
	Label string `json:"label"`
	// Requests, Failed and Good count the step's measured requests.
	Requests int `json:"requests"`
	Failed   int `json:"failed"`
	Good     int `json:"good"`
	// RequestThroughput and RequestGoodput are in req/s; the p99s in ms.
	RequestThroughput float64 `json:"request_throughput"`
	RequestGoodput    float64 `json:"request_goodput"`
	TTFTP99MS         float64 `json:"p99_ttft_ms"`
	TPOTP99MS         float64 `json:"p99_tpot_ms"`
	// SLOHeld says every SLO p99 held; Valid the step's validity and Flags
	// its validity flags.
	SLOHeld bool     `json:"slo_held"`
	Valid   bool     `json:"valid"`
	Flags   []string `json:"flags,omitempty"`
}

// ResultSummary is what a sweep found.
type ResultSummary struct {
	// Complete is false for an interrupted sweep; InterruptedReason says
	// why.
	Complete          bool   `json:"complete"`
	InterruptedReason string `json:"interrupted_reason,omitempty"`
	// KneeFound is true when the knee is bracketed; Knee is the knee level
	// (a lower bound when not bracketed, 0 when no level passed), KneeUpper
	// the lowest failing level above it, in KneeUnit.
	KneeFound bool    `json:"knee_found"`
	Knee      float64 `json:"knee"`
	KneeUpper float64 `json:"knee_upper,omitempty"`
	KneeUnit  string  `json:"knee_unit"`
	// MaxGoodput is the highest goodput of a valid level (req/s) and
	// MaxGoodputLevel that level.
	MaxGoodput      float64 `json:"max_goodput"`
	MaxGoodputLevel float64 `json:"max_goodput_level"`
	// KneeState is the knee's state: "decided" (bracketed, or a knee of 0
	// below the lowest level run), "bound" (a lower bound) or "undecided"
	// (no valid evidence; KneeUndecided says why: "no_valid_level",
	// "too_short" or "no_evidence_below"), as result.json's knee.state.
	KneeState     string `json:"knee_state"`
	KneeUndecided string `json:"knee_undecided,omitempty"`
	// Reason says in words how the knee was decided.
	Reason string `json:"reason"`
}

// run is one sweep in the registry.
type run struct {
	id, target, name, origin string
	spec                     config.SweepSpec
	created                  time.Time
	cancel                   context.CancelCauseFunc
	done                     chan struct{}

	mu       sync.Mutex
	state    string
	finished time.Time
	dir      string
	err      string
	step     *StepProgress
	stepDone atomic.Int64
	steps    []StepSummary
	result   *ResultSummary
}

func (r *run) isRunning() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state == StatusRunning
}

// status returns a copy of the run's state.
func (r *run) status() Status {
	r.mu.Lock()
	st := Status{
		ID: r.id, Target: r.target, Name: r.name, Origin: r.origin, Status: r.state, Created: r.created,
		Error: r.err, Steps: append([]StepSummary{}, r.steps...), Spec: r.spec, dir: r.dir,
	}
	if r.dir != "" {
		st.RunDir = filepath.Base(r.dir)
	}
	if r.step != nil {
		p := *r.step
		p.Done = r.stepDone.Load()
		st.Step = &p
	}
	if r.result != nil {
		res := *r.result
		st.Result = &res
	}
	running := r.state == StatusRunning
	if !running {
		f := r.finished
		st.Finished = &f
	}
	r.mu.Unlock()
	if !running && st.dir != "" {
		if es, err := os.ReadDir(st.dir); err == nil {
			for _, e := range es {
				if e.Type().IsRegular() {
					st.Files = append(st.Files, e.Name())
				}
			}
		}
	}
	return st
}

// execute runs r's sweep into its run directory and records the outcome.
func (s *Service) execute(ctx context.Context, r *run, cfg sweep.Config, t config.TargetConfig) {
	defer s.wg.Done()
	logger := log.With(s.logger, "sweep_id", r.id, "target", r.target, "sweep", r.name)
	start := s.opts.Now()
	if cfg.PromptNonce == 0 { // drawn here, so that the manifest's command line repeats the run
		cfg.PromptNonce = sweep.NewPromptNonce()
	}
	cfg.Tracer = s.opts.Tracer
	// Room on disk first: a sweep that cannot be kept is not run.
	var out *rundir.Outcome
	err := s.makeRoom()
	if err == nil {
		out, err = rundir.Run(ctx, cfg, rundir.Options{
			Logger: logger, Args: sweep.CommandLine(&cfg), Observer: &progress{r: r, obs: s.obs},
			HTTPClient: s.opts.HTTPClient, Now: s.opts.Now,
		})
	}
	took := s.opts.Now().Sub(start)
	state, result := StatusDone, capacity.ResultSuccess
	msg := ""
	switch {
	case err == nil && out != nil && out.Complete && !measured(out.Result):
		// Complete, but no step could be measured (every one invalid: errors,
		// a busy server): nothing to replace the last good knee with.
		state, result = StatusFailed, capacity.ResultFailed
		msg = "no valid step: " + invalidWhy(out.Result)
	case err == nil && out != nil && out.Complete:
	case ctx.Err() != nil:
		state, result = StatusCanceled, capacity.ResultCanceled
		msg = context.Cause(ctx).Error()
		if errors.Is(context.Cause(ctx), context.Canceled) {
			msg = "the daemon is shutting down"
		}
	default:
		state, result = StatusFailed, capacity.ResultFailed
		switch {
		case err != nil:
			msg = sweep.SpecErrorText(err)
		case out != nil && out.Result != nil:
			msg = out.Result.InterruptedReason
		}
	}
	var last *capacity.Last
	r.mu.Lock()
	r.step = nil
	if out != nil {
		r.dir = out.Dir
		if res := out.Result; res != nil {
			r.result = Summarize(res)
			if result == capacity.ResultSuccess {
				l := LastOf(res)
				l.Duration, l.Dir = took, out.Dir
				last = &l
				if last.Finished.IsZero() {
					last.Finished = s.opts.Now()
				}
			}
		}
	}
	r.mu.Unlock()
	if state == StatusDone {
		level.Info(logger).Log("msg", "sweep done", "dir", r.dir, "knee", knee(last), "took", took)
	} else {
		level.Warn(logger).Log("msg", "sweep ended", "status", state, "dir", r.dir, "err", msg)
	}
	s.retain(t.Name, r.name, retentionOf(t, r.name))

	s.mu.Lock()
	if last != nil {
		s.setLast(r.target, r.name, *last)
	}
	delete(s.running, r.target)
	r.mu.Lock()
	r.state, r.err, r.finished = state, msg, s.opts.Now().UTC()
	r.mu.Unlock()
	s.obs.SweepFinished(r.target, r.name, result, took, last)
	s.obs.SweepRunning(r.target, false)
	s.mu.Unlock()
	close(r.done)
}

// measured reports whether some step of res counts for the knee.
func measured(res *sweep.Result) bool {
	if res == nil {
		return false
	}
	for _, st := range res.Steps {
		if st.InKnee() {
			return true
		}
	}
	return false
}

// invalidWhy lists the validity flags of res's last step.
func invalidWhy(res *sweep.Result) string {
	if res == nil || len(res.Steps) == 0 {
		return "no step ran"
	}
	st := res.Steps[len(res.Steps)-1]
	if len(st.Validity.Flags) == 0 {
		return st.Label + " was a burst"
	}
	return st.Label + " was flagged " + strings.Join(st.Validity.Flags, ", ")
}

func knee(l *capacity.Last) string {
	if l == nil {
		return "none"
	}
	return strconv.FormatFloat(l.Knee, 'g', 4, 64)
}

// setLast records a success. s.mu is held.
func (s *Service) setLast(target, name string, l capacity.Last) {
	m := s.last[target]
	if m == nil {
		m = map[string]capacity.Last{}
		s.last[target] = m
	}
	m[name] = l
}

// retentionOf is the retention of the target's scheduled sweep of that
// name, the default for any other.
func retentionOf(t config.TargetConfig, name string) config.Retention {
	for _, sw := range t.Sweeps {
		if sw.Name() == name {
			return sw.Retention
		}
	}
	return config.Retention{}
}

// Summarize is what the sweep API reports of a finished sweep's result
// (Status.Result).
func Summarize(res *sweep.Result) *ResultSummary {
	sum := &ResultSummary{
		Complete: res.Complete, InterruptedReason: res.InterruptedReason,
		KneeFound: res.Knee.Found, Knee: res.Knee.Estimate(), KneeUpper: res.Knee.Upper, KneeUnit: res.KneeUnit,
		MaxGoodput: res.Knee.MaxGoodput, MaxGoodputLevel: res.Knee.MaxGoodputLevel, Reason: res.Knee.Reason,
	}
	sum.KneeState, sum.KneeUndecided = kneeState(res)
	return sum
}

// progress follows a sweep for its run's status, and counts its successful
// requests for the observer (capacity.RequestObserver).
type progress struct {
	sweep.NopObserver
	r   *run
	obs capacity.Observer
}

// StepStarted implements sweep.Observer.
func (p *progress) StepStarted(st *sweep.Step, planned int) {
	p.r.mu.Lock()
	defer p.r.mu.Unlock()
	p.r.stepDone.Store(0)
	p.r.step = &StepProgress{Index: st.Index, Label: st.Label, Planned: planned}
}

// RequestDone implements sweep.Observer.
func (p *progress) RequestDone(_ *sweep.Step, rec *prober.Record) {
	p.r.stepDone.Add(1)
	if ro, ok := p.obs.(capacity.RequestObserver); ok && rec.OK() {
		ro.SweepRequestsDone(p.r.target, 1)
	}
}

// StepDone implements sweep.Observer.
func (p *progress) StepDone(st *sweep.Step) {
	s := StepSummary{
		Index: st.Index, Label: st.Label, Requests: st.Stats.Requests, Failed: st.Stats.Failed, Good: st.Stats.Good,
		RequestThroughput: finite(st.Stats.RequestThroughput), RequestGoodput: finite(st.Stats.RequestGoodput),
		TTFTP99MS: finite(st.Stats.TTFT.P99), TPOTP99MS: finite(st.Stats.TPOT.P99),
		SLOHeld: st.Stats.SLOHeld, Valid: st.Validity.Valid, Flags: append([]string(nil), st.Validity.Flags...),
	}
	p.r.mu.Lock()
	defer p.r.mu.Unlock()
	p.r.steps = append(p.r.steps, s)
	p.r.step = nil
}

// finite maps NaN and infinities to 0 (JSON has no such numbers).
func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}
