package sweepd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-kit/log"
	"go.uber.org/goleak"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/internal/testutil"
	"github.com/llmprobe/llmprobe/prober/capacity"
	"github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/sweep"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// TestMain fails the package when a sweep or a schedule leaves a goroutine
// behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder is an Observer that keeps every call.
type recorder struct {
	mu       sync.Mutex
	running  map[string]bool
	finished []finishCall
	restored map[string]capacity.Last
	removed  []string
}

type finishCall struct {
	target, sweep, result string
	last                  *capacity.Last
}

func newRecorder() *recorder {
	return &recorder{running: map[string]bool{}, restored: map[string]capacity.Last{}}
}

func (r *recorder) SweepRunning(target string, running bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.running[target] = running
}

func (r *recorder) SweepFinished(target, sweep, result string, _ time.Duration, last *capacity.Last) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.finished = append(r.finished, finishCall{target, sweep, result, last})
}

func (r *recorder) SweepRestored(target, sweep string, last capacity.Last) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.restored[target+"/"+sweep] = last
}

func (r *recorder) SweepScheduled(string, string, time.Duration) {}

func (r *recorder) TargetRemoved(target string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.removed = append(r.removed, target)
}

func (r *recorder) calls() []finishCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]finishCall(nil), r.finished...)
}

// targetsConfig is a config of the named targets at base URLs, with extra
// YAML under the first target.
func targetsConfig(t *testing.T, extra string, targets ...string) *config.Config {
	t.Helper()
	y := "targets:\n"
	for i := 0; i+1 < len(targets); i += 2 {
		y += fmt.Sprintf("  - name: %s\n    base_url: %s\n    timeout: 30s\n", targets[i], targets[i+1])
		if i == 0 {
			y += extra
		}
	}
	c, err := config.Parse([]byte(y), "test.yml")
	if err != nil {
		t.Fatalf("%v\n%s", err, y)
	}
	return c
}

func newService(t *testing.T, dir string, obs capacity.Observer) *Service {
	t.Helper()
	logs := &testutil.SyncBuffer{}
	s := New(Options{
		Logger: log.NewLogfmtLogger(logs), Dir: dir, Observer: obs, MaxConcurrent: 2,
		// The simulator shares the test process: no client CPU check.
		Embedded: func(string, workload.Spec) (bool, float64) { return true, 0 },
	})
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("service log:\n%s", logs.String())
		}
	})
	return s
}

// simService is newService with one target, "sim", at url.
func simService(t *testing.T, dir string, obs capacity.Observer, url string) *Service {
	t.Helper()
	s := newService(t, dir, obs)
	s.Apply(targetsConfig(t, "", "sim", url))
	return s
}

// startWait starts spec on target "sim" through the API and returns its
// status once it has ended; a refused start fails the test.
func startWait(t *testing.T, s *Service, spec config.SweepSpec) Status {
	t.Helper()
	st, err := s.Start("sim", spec)
	if err != nil {
		t.Fatal(err)
	}
	return wait(t, s, st.ID)
}

// runFile reads the file name of run id through the API; an error fails
// the test.
func runFile(t *testing.T, s *Service, id, name string) []byte {
	t.Helper()
	f, err := s.File(id, name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// lag is the send-lag validity limit of the tests' sweeps: the machine is
// shared and busy, a scheduler hiccup must not flag a step.
const lag = config.Duration(250 * time.Millisecond)

// small is a short open-loop sweep: two steps of 20 requests.
func small() config.SweepSpec {
	s, err := config.ParseSweepSpec("rates: [20, 40]\nnum_prompts: 20\ninput_len: 32\noutput_len: 4\nwarmups: -1\nmax_send_lag: 250ms\nmax_sched_latency: 250ms")
	if err != nil {
		panic(err)
	}
	return s
}

func wait(t *testing.T, s *Service, id string) Status {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := s.Wait(ctx, id)
	if err != nil {
		t.Fatalf("wait for %s: %v (status %+v)", id, err, st)
	}
	return st
}

func TestLifecycle(t *testing.T) {
	url, _ := simtest.Start(t, simtest.Fast())
	dir := t.TempDir()
	rec := newRecorder()
	s := newService(t, dir, rec)
	s.Apply(targetsConfig(t, "    max_sweep_rate: 50\n    cost_per_hour: 2.5\n", "sim", url))

	st, err := s.Start("sim", small())
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != StatusRunning || st.Name != sweep.DefaultSpecName || st.Origin != OriginAPI {
		t.Errorf("started: %+v", st)
	}
	// One sweep per target.
	var busy *BusyError
	if _, err := s.Start("sim", small()); !errors.As(err, &busy) || busy.ID != st.ID {
		t.Errorf("second start: %v, want a BusyError naming %s", err, st.ID)
	}
	if id, ok := s.Running("sim"); !ok || id != st.ID {
		t.Errorf("Running = %q %v", id, ok)
	}
	done := wait(t, s, st.ID)
	if done.Status != StatusDone || done.Result == nil || !done.Result.Complete || len(done.Steps) != 2 || done.Finished == nil {
		t.Fatalf("done: %+v", done)
	}
	if done.Result.Knee <= 0 || done.Result.MaxGoodput <= 0 || done.Result.KneeUnit != "req/s" {
		t.Errorf("result: %+v", done.Result)
	}
	for _, s := range done.Steps {
		if s.Requests != 20 {
			t.Errorf("step %s: %d requests", s.Label, s.Requests)
		}
	}
	// The files, and nothing outside the run directory.
	if len(done.Files) == 0 || done.RunDir == "" {
		t.Fatalf("files %v dir %q", done.Files, done.RunDir)
	}
	b := runFile(t, s, st.ID, artifacts.ManifestFile)
	if len(b) == 0 {
		t.Error("empty manifest")
	}
	// The target's cost_per_hour prices the sweep (result.json, the
	// manifest's fingerprint).
	rb := runFile(t, s, st.ID, artifacts.ResultFile)
	if !bytes.Contains(rb, []byte(`"cost_per_hour_usd": 2.5`)) || !bytes.Contains(b, []byte(`"cost_per_hour_usd": 2.5`)) ||
		!bytes.Contains(rb, []byte(`"cost_per_million_good_output_tokens": `)) {
		t.Errorf("the target's cost_per_hour is not in result.json and the manifest:\n%s", rb)
	}
	if err := os.WriteFile(filepath.Join(dir, "secret.txt"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "secret.txt"), filepath.Join(dir, "sim", done.RunDir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"../../secret.txt", "..", ".", "", "link.txt", "nope.txt", "/etc/passwd"} {
		if f, err := s.File(st.ID, name); !errors.Is(err, ErrNotFound) {
			if f != nil {
				f.Close()
			}
			t.Errorf("File(%q) = %v, want ErrNotFound", name, err)
		}
	}
	os.Remove(filepath.Join(dir, "sim", done.RunDir, "link.txt"))
	// A hard link in the run directory is not served (issue 22 risk).
	hard := filepath.Join(dir, "sim", done.RunDir, "hard.txt")
	if err := os.Link(filepath.Join(dir, "secret.txt"), hard); err == nil {
		if f, err := s.File(st.ID, "hard.txt"); !errors.Is(err, ErrNotFound) {
			if f != nil {
				f.Close()
			}
			t.Errorf("File(hard link) = %v, want ErrNotFound", err)
		}
		os.Remove(hard)
	}
	// A FIFO in the run directory is not found, at once (issue 22 D6: its
	// open blocked GET …/files/fifo forever).
	fifo := filepath.Join(dir, "sim", done.RunDir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err == nil {
		errc := make(chan error, 1)
		go func() {
			f, err := s.File(st.ID, "fifo")
			if f != nil {
				f.Close()
			}
			errc <- err
		}()
		select {
		case err := <-errc:
			if !errors.Is(err, ErrNotFound) {
				t.Errorf("File(fifo) = %v, want ErrNotFound", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("File(fifo) still blocked after 20 s")
		}
		os.Remove(fifo)
	}
	// The observer saw it, and LastOf has it.
	calls := rec.calls()
	if len(calls) != 1 || calls[0].result != capacity.ResultSuccess || calls[0].last == nil || calls[0].last.Knee != done.Result.Knee {
		t.Errorf("observer: %+v", calls)
	}
	if name, l, ok := s.LastOf("sim"); !ok || name != sweep.DefaultSpecName || l.Knee != done.Result.Knee {
		t.Errorf("LastOf = %q %+v %v", name, l, ok)
	}
	// Refusals.
	over := small()
	over = with(t, over, "rates: [60]")
	var se *config.SpecError
	if _, err := s.Start("sim", over); !errors.As(err, &se) || se.Key != "rates" ||
		se.Error() != "rates: rate 60 req/s is over the target's max_sweep_rate (50 req/s)" {
		t.Errorf("over the cap: %v", err)
	}
	if _, err := s.Start("nope", small()); !errors.Is(err, ErrUnknownTarget) {
		t.Errorf("unknown target: %v", err)
	}
	if _, err := s.Get("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown id: %v", err)
	}
	if l := s.List(); len(l) != 1 || l[0].ID != st.ID {
		t.Errorf("List = %+v", l)
	}
}

// TestCancel cancels a sweep mid-step: the run directory is finished as
// incomplete and verifies.
func TestCancel(t *testing.T) {
	url, _ := simtest.Start(t, simtest.Fast())
	rec := newRecorder()
	s := simService(t, t.TempDir(), rec, url)
	spec := specOf(t, "rates: [5]\nduration: 1m\ninput_len: 32\noutput_len: 4\nwarmups: -1")
	st, err := s.Start("sim", spec)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "the step to make progress", func() bool {
		g, _ := s.Get(st.ID)
		return g.Step != nil && g.Step.Done > 0
	})
	got, err := s.Cancel(st.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != StatusCanceled || got.Error != errCanceled.Error() || got.RunDir == "" {
		t.Fatalf("canceled: %+v", got)
	}
	m, err := artifacts.ReadManifest(got.dir)
	if err != nil || m.Complete {
		t.Errorf("manifest complete=%v err=%v", m.Complete, err)
	}
	if v, err := artifacts.Verify(got.dir, artifacts.VerifyOptions{}); err != nil || len(v.Problems) > 0 {
		t.Errorf("verify: %v %v", v.Problems, err)
	}
	if c := rec.calls(); len(c) != 1 || c[0].result != capacity.ResultCanceled || c[0].last != nil {
		t.Errorf("observer: %+v", c)
	}
	if _, _, ok := s.LastOf("sim"); ok {
		t.Error("a canceled sweep set the last result")
	}
}

// TestScheduleRestartAndFailure runs a scheduled sweep (every: 1h runs at
// once without history), restarts the service on the same directory (the
// last knee is read back), then has a sweep fail: the knee stays.
func TestScheduleRestartAndFailure(t *testing.T) {
	url, sim := simtest.Start(t, simtest.Fast())
	dir := t.TempDir()
	block := `    sweeps:
      - name: nightly
        every: 1h
        rates: [20, 40]
        num_prompts: 20
        input_len: 32
        output_len: 4
        warmups: -1
        max_send_lag: 250ms
        max_sched_latency: 250ms
        retention: {count: 1}
`
	cfg := targetsConfig(t, block, "sim", url)
	rec := newRecorder()
	s := newService(t, dir, rec)
	s.Apply(cfg)
	testutil.EventuallyWithin(t, 2*time.Minute, "the scheduled sweep to finish", func() bool { return len(rec.calls()) == 1 })
	c := rec.calls()[0]
	if c.sweep != "nightly" || c.result != capacity.ResultSuccess || c.last == nil || c.last.Knee <= 0 {
		t.Fatalf("scheduled sweep: %+v", c)
	}
	if l := s.List(); len(l) != 1 || l[0].Origin != OriginSchedule {
		t.Errorf("List = %+v", l)
	}
	s.Stop()

	// A restarted daemon reads the knee back.
	rec2 := newRecorder()
	s2 := newService(t, dir, rec2)
	s2.Apply(cfg)
	r, ok := rec2.restored["sim/nightly"]
	if !ok || r.Knee != c.last.Knee || r.MaxGoodput != c.last.MaxGoodput || r.Finished.IsZero() {
		t.Fatalf("restored %+v (%v), want the knee %v", r, ok, c.last.Knee)
	}
	// every: 1h with a fresh success: no run at start.
	if len(rec2.calls()) != 0 {
		t.Errorf("a sweep ran although the last is fresh: %+v", rec2.calls())
	}

	// A failing sweep keeps the previous knee.
	sim.SetFaults(simulator.Faults{HTTP500: 1})
	st, err := s2.Start("sim", specOf(t, "name: nightly\nrates: [20]\nnum_prompts: 5\ninput_len: 32\noutput_len: 4\nwarmups: -1\nmax_send_lag: 250ms\nmax_sched_latency: 250ms"))
	if err != nil {
		t.Fatal(err)
	}
	end := wait(t, s2, st.ID)
	if end.Status != StatusFailed || end.Error != "no valid step: rate=20 was flagged errors" {
		t.Errorf("with faults: status %s error %q", end.Status, end.Error)
	}
	if c := rec2.calls(); len(c) != 1 || c[0].result != capacity.ResultFailed || c[0].last != nil {
		t.Errorf("observer: %+v", c)
	}
	_, l, ok := s2.LastOf("sim")
	if !ok || l.Knee != c.last.Knee {
		t.Errorf("last after the faulty sweep: %+v %v, want the knee %v", l, ok, c.last.Knee)
	}
	// Retention count 1 keeps the newest good run only (not the failed
	// one, newer), which a third restart reads back.
	es, _ := os.ReadDir(filepath.Join(dir, "sim"))
	if len(es) != 1 || es[0].Name() != filepath.Base(c.last.Dir) {
		t.Errorf("run directories left: %v, want only %s", es, filepath.Base(c.last.Dir))
	}
	s2.Stop()
	rec3 := newRecorder()
	newService(t, dir, rec3).Apply(cfg)
	if r := rec3.restored["sim/nightly"]; r.Knee != c.last.Knee {
		t.Errorf("restored after the failure: %+v, want the knee %v", r, c.last.Knee)
	}
}

// TestGlobalCap refuses a sweep beyond --sweeps.max-concurrent.
func TestGlobalCap(t *testing.T) {
	url, _ := simtest.Start(t, simtest.Fast())
	s := New(Options{Dir: t.TempDir(), MaxConcurrent: 1})
	defer s.Stop()
	s.Apply(targetsConfig(t, "", "a", url, "b", url))
	spec := specOf(t, "rates: [5]\nduration: 1m\ninput_len: 32\noutput_len: 4")
	if _, err := s.Start("a", spec); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Start("b", spec); !errors.Is(err, ErrTooMany) {
		t.Errorf("second target: %v, want ErrTooMany", err)
	}
	// A reload that removes a target cancels its sweep.
	s.Apply(targetsConfig(t, "", "b", url))
	testutil.Eventually(t, "the removed target's sweep to end", func() bool { _, ok := s.Running("a"); return !ok })
}
