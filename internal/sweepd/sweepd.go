// Package sweepd runs capacity sweeps inside the daemon: the registry of
// sweep runs started through the sweep API or by a schedule (at most one per
// target at a time, a global cap, ids, status and progress, cancel, the
// files of each run directory), the scheduler of the targets' sweeps:
// blocks (every or cron, with jitter), the retention of run directories
// under --sweeps.dir, and the readback of the last results from the newest
// complete run directory at start, so that the capacity gauges survive a
// restart.
//
// A sweep is the sweep engine called as a library: internal/rundir.Run with
// a sweep.Config built from the target's config and the spec
// (sweep.FromSpec), its progress followed through a
// sweep.Observer. What finished sweeps measured goes to a capacity.Observer
// (collector/probemetrics in the daemon); the package imports no consumer.
//
// A Service is safe for concurrent use.
package sweepd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"go.opentelemetry.io/otel/trace"

	"github.com/llmprobe/llmprobe/prober/capacity"
	"github.com/llmprobe/llmprobe/prober/capfile"
	"github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/sweep"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// Statuses of a run (Status.Status).
const (
	StatusRunning  = "running"
	StatusDone     = "done"
	StatusFailed   = "failed"
	StatusCanceled = "canceled"
)

// Origins of a run (Status.Origin).
const (
	OriginAPI      = "api"
	OriginSchedule = "schedule"
)

// Defaults of Options.
const (
	DefaultMaxConcurrent = 1
	DefaultKeepFinished  = 100
)

// Errors of Start, Get, Cancel and File. A *BusyError and a
// *config.SpecError are returned as such.
var (
	ErrUnknownTarget = errors.New("no such target")
	ErrNotFound      = errors.New("no such sweep")
	ErrTooMany       = errors.New("too many sweeps running")
	ErrStopped       = errors.New("the sweep service is stopped")
	ErrNotFinished   = errors.New("the sweep is still running")
)

// noFileError is File's ErrNotFound when the sweep exists but its run
// directory has no regular file of that name (the text said "no such
// sweep" for a FIFO of a sweep that exists).
type noFileError struct{ name string }

func (e noFileError) Error() string {
	return fmt.Sprintf("file %q: no such regular file in the sweep's run directory", e.name)
}

func (e noFileError) Is(target error) bool { return target == ErrNotFound }

// BusyError is Start's error when the target already has a sweep running.
type BusyError struct {
	Target string
	// ID is the running sweep's id.
	ID string
}

// Error names the target and the running sweep.
func (e *BusyError) Error() string {
	return fmt.Sprintf("target %s already has a sweep running: %s", e.Target, e.ID)
}

// curve returns the goodput curve of res.
func curve(res *sweep.Result) []capacity.StepPoint {
	out := make([]capacity.StepPoint, 0, len(res.Steps))
	for _, st := range res.Steps {
		label := st.Label
		if st.Attempt > 1 {
			label += "/attempt=" + strconv.Itoa(st.Attempt)
		}
		out = append(out, capacity.StepPoint{Label: label, Goodput: finite(st.Stats.RequestGoodput), Throughput: finite(st.Stats.RequestThroughput),
			TTFTP99: finite(st.Stats.TTFT.P99) / 1e3, TPOTP99: finite(st.Stats.TPOT.P99) / 1e3, Valid: st.Validity.Valid})
	}
	return out
}

// Options configures a Service.
type Options struct {
	// Logger receives the sweeps' logs (nil: none).
	Logger log.Logger
	// Dir is --sweeps.dir: the run directories of a target go under
	// Dir/<target>/.
	Dir string
	// MaxConcurrent caps the sweeps running at once over all targets
	// (default DefaultMaxConcurrent).
	MaxConcurrent int
	// MaxBytes is --sweeps.retention.size: before each sweep starts, the
	// run directories under Dir are trimmed to at most this many bytes
	// (makeRoom). 0: no limit by size.
	MaxBytes int64
	// KeepFinished is how many finished runs the registry lists (default
	// DefaultKeepFinished; their directories stay on disk by retention).
	KeepFinished int
	// Observer receives results (nil: none).
	Observer capacity.Observer
	// Embedded reports whether a target is the in-process simulator, and
	// its capacity for a workload (0: unknown); nil: none is.
	Embedded func(target string, w workload.Spec) (embedded bool, capacity float64)
	// Tracer, when set, traces the sweeps' requests (sweep.Config.Tracer:
	// each sweep at its trace_sample_ratio). Nil: no tracing.
	Tracer func(ratio float64) trace.Tracer
	// HTTPClient and Now are rundir.Options' (nil: the defaults).
	HTTPClient *http.Client
	Now        func() time.Time
	// Jitter returns a random delay in [0, max) (nil: uniform).
	Jitter func(max time.Duration) time.Duration
}

// Service is the registry and scheduler of the daemon's sweeps. Create it
// with New, give it the config with Apply, and Stop it at shutdown.
type Service struct {
	opts   Options
	logger log.Logger
	obs    capacity.Observer

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	stopped   bool
	targets   map[string]config.TargetConfig
	runs      map[string]*run
	order     []*run          // newest last
	running   map[string]*run // by target
	last      map[string]map[string]capacity.Last
	schedules map[string]*scheduled // by target + "/" + sweep name
	restored  map[string]bool       // targets whose directories were read back
}

// New returns a Service with no targets.
func New(o Options) *Service {
	if o.Logger == nil {
		o.Logger = log.NewNopLogger()
	}
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = DefaultMaxConcurrent
	}
	if o.KeepFinished <= 0 {
		o.KeepFinished = DefaultKeepFinished
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Jitter == nil {
		o.Jitter = uniformJitter
	}
	var obs capacity.Observer = capacity.NopObserver{}
	if o.Observer != nil {
		obs = o.Observer
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Service{
		opts: o, logger: o.Logger, obs: obs, ctx: ctx, cancel: cancel,
		targets: map[string]config.TargetConfig{}, runs: map[string]*run{}, running: map[string]*run{},
		last: map[string]map[string]capacity.Last{}, schedules: map[string]*scheduled{}, restored: map[string]bool{},
	}
}

// Start starts a sweep of target through the API and returns its status.
// Errors: ErrUnknownTarget (wrapped), a *config.SpecError naming the spec
// key at fault (over max_sweep_rate included), a *BusyError when the target
// has a sweep running, ErrTooMany at the global cap, ErrStopped.
//
// A spec naming a file (workload.dataset, workload.trace, a schema_file) is
// refused with a *config.SpecError: the API reads no file named by a
// request body (config.SweepSpec.CheckNoFiles).
func (s *Service) Start(target string, spec config.SweepSpec) (Status, error) {
	if err := spec.CheckNoFiles(); err != nil {
		return Status{}, config.AsSpecError(err)
	}
	r, err := s.start(target, spec, OriginAPI)
	if err != nil {
		return Status{}, err
	}
	return r.status(), nil
}

func (s *Service) start(target string, spec config.SweepSpec, origin string) (*run, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil, ErrStopped
	}
	t, ok := s.targets[target]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownTarget, target)
	}
	cfg, err := sweep.FromSpec(spec, t)
	if err != nil {
		return nil, config.AsSpecError(err)
	}
	if r := s.running[target]; r != nil {
		return nil, &BusyError{Target: target, ID: r.id}
	}
	if len(s.running) >= s.opts.MaxConcurrent {
		return nil, fmt.Errorf("%w: %d of --sweeps.max-concurrent=%d", ErrTooMany, len(s.running), s.opts.MaxConcurrent)
	}
	cfg.OutDir = s.targetDir(target)
	// The load the knee is measured under: the target's own probes keep
	// running beside the sweep (capacity.Last.ProbeLoad).
	cfg.Metadata[MetaProbeLoad] = strconv.FormatFloat(probeLoad(t), 'g', -1, 64)
	cfg.CostPerHour = t.CostPerHour // targets[].cost_per_hour: the cost per million good output tokens
	if s.opts.Embedded != nil {
		cfg.Embedded, cfg.ReferenceCapacity = s.opts.Embedded(target, cfg.Workload)
	}
	ctx, cancel := context.WithCancelCause(s.ctx)
	r := &run{
		id: newID(), target: target, name: cfg.Name, origin: origin, spec: spec,
		created: s.opts.Now().UTC(), cancel: cancel, done: make(chan struct{}), state: StatusRunning,
	}
	s.runs[r.id] = r
	s.order = append(s.order, r)
	s.running[target] = r
	s.trim()
	s.wg.Add(1)
	s.obs.SweepRunning(target, true)
	go s.execute(ctx, r, cfg, t)
	level.Info(s.logger).Log("msg", "sweep started", "id", r.id, "target", target, "sweep", r.name, "origin", origin)
	return r, nil
}

// trim forgets the oldest finished runs beyond KeepFinished. s.mu is held.
func (s *Service) trim() {
	for len(s.order) > s.opts.KeepFinished {
		i := slices.IndexFunc(s.order, func(r *run) bool { return !r.isRunning() })
		if i < 0 {
			return
		}
		delete(s.runs, s.order[i].id)
		s.order = slices.Delete(s.order, i, i+1)
	}
}

// targetDir is Dir/<target> (a ':' in the name becomes '_').
func (s *Service) targetDir(target string) string {
	return filepath.Join(s.opts.Dir, strings.ReplaceAll(target, ":", "_"))
}

// List returns every run the registry holds, newest first.
func (s *Service) List() []Status {
	s.mu.Lock()
	rs := slices.Clone(s.order)
	s.mu.Unlock()
	out := make([]Status, 0, len(rs))
	for i := len(rs) - 1; i >= 0; i-- {
		out = append(out, rs[i].status())
	}
	return out
}

// Get returns the status of run id (ErrNotFound when unknown).
func (s *Service) Get(id string) (Status, error) {
	r, err := s.lookup(id)
	if err != nil {
		return Status{}, err
	}
	return r.status(), nil
}

func (s *Service) lookup(id string) (*run, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.runs[id]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	return r, nil
}

// errCanceled is the cancel cause of a sweep canceled through Cancel.
var errCanceled = errors.New("canceled through the sweep API")

// Cancel cancels run id and waits until it ended: its run directory is
// kept, finished with a manifest that says complete: false. Canceling a
// finished run changes nothing. ErrNotFound when unknown.
func (s *Service) Cancel(id string) (Status, error) {
	r, err := s.lookup(id)
	if err != nil {
		return Status{}, err
	}
	r.cancel(errCanceled)
	<-r.done
	return r.status(), nil
}

// Wait blocks until run id ended or ctx is done, and returns its status.
func (s *Service) Wait(ctx context.Context, id string) (Status, error) {
	r, err := s.lookup(id)
	if err != nil {
		return Status{}, err
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		return r.status(), ctx.Err()
	}
	return r.status(), nil
}

// File opens file name of run id's directory; the caller closes it. name is one
// path element naming a regular file inside the directory (symbolic links
// are not followed out of it); anything else is ErrNotFound.
func (s *Service) File(id, name string) (*os.File, error) {
	r, err := s.lookup(id)
	if err != nil {
		return nil, err
	}
	dir := r.status().dir
	if dir == "" || name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
		return nil, noFileError{name}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, noFileError{name}
	}
	defer root.Close()
	// Checked before the open too: opening a FIFO blocks until a writer
	// appears (issue 22 D6: GET …/files/fifo hung and leaked a goroutine).
	if fi, err := root.Stat(name); err != nil || !fi.Mode().IsRegular() {
		return nil, noFileError{name}
	}
	f, err := root.Open(name)
	if err != nil {
		return nil, noFileError{name}
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || capfile.CheckOwned(name, fi) != nil {
		f.Close() // a hard link would serve a file from elsewhere (issue 22 risk)
		return nil, noFileError{name}
	}
	return f, nil
}

// LastOf returns the newest successful result of any sweep of target, and
// the sweep's name; ok is false when there is none.
func (s *Service) LastOf(target string) (name string, last capacity.Last, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for n, l := range s.last[target] {
		if !ok || l.Finished.After(last.Finished) {
			name, last, ok = n, l, true
		}
	}
	return name, last, ok
}

// Running reports whether target has a sweep running, and its id.
func (s *Service) Running(target string) (id string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.running[target]; r != nil {
		return r.id, true
	}
	return "", false
}

// Stop cancels every running sweep and schedule and waits for them: the
// run directories of the sweeps cut short are finished as incomplete.
func (s *Service) Stop() {
	s.mu.Lock()
	s.stopped = true
	for _, sc := range s.schedules {
		sc.cancel()
	}
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
}

func newID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
