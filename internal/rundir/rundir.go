// Package rundir runs a sweep into a run directory (DESIGN.md §6): it
// composes prober/sweep (the engine, which knows no files), the streaming
// sink of internal/artifacts (records.jsonl, errors-redacted.jsonl, the
// /metrics snapshots) and internal/report (analysis.md and its plots), and
// writes command.txt, help.txt, result.json, every step again in vllm bench
// serve's --save-result form under vllm/ and, last, manifest.json with
// the fingerprint and whether the sweep completed. The CLI's `llmprobe
// sweep` calls Run; so can a daemon goroutine, with its own context,
// logger and output directory.
//
// It composes the other run directories too: RunCompare runs an A/B
// comparison (prober/compare.Procedure) into a compare run directory whose
// rounds are Run's sweep run directories, Merge joins the shards of a
// sharded sweep, and LoadInput, LoadEvidence and Analyze read run
// directories and result files back for `llmprobe analyze` (result.json
// through report.Load, records.jsonl through artifacts.ReadRecords).
//
// It also holds the command lines of those runs: SweepFlags (the flags of
// `llmprobe sweep`, generated from prober/sweep's settings table by
// AddSweepFlags, and their Config, validated by sweep.Config.Validate
// alone) and CompareFlags (compare's copy of them with each side's own
// flags, and their compare.Procedure). Their errors name the flag at fault
// (FlagError, FlagErrorText).
package rundir

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/report"
	"github.com/llmprobe/llmprobe/prober/fingerprint"
	"github.com/llmprobe/llmprobe/prober/redact"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// Options are Run's collaborators. The zero value works: no logging, no
// help.txt, no observer.
type Options struct {
	// Logger receives the sweep's progress and warnings (nil: none).
	Logger log.Logger
	// Args is the full command line, program name first: command.txt and
	// the fingerprint hold it redacted (redact.Args).
	Args []string
	// Help is written to help.txt (the command's --help of this build; ""
	// writes no help.txt).
	Help string
	// Observer follows the sweep (progress bars, the final table; nil:
	// none).
	Observer sweep.Observer
	// ServerLog is the path of the server's log file (--server-log): the
	// lines it gains during each step are copied into server.log, and the
	// manifest's server_log says so ("": not-recorded).
	ServerLog string
	// HTTPClient and Now are sweep.Options' (nil: the sweep's defaults).
	HTTPClient *http.Client
	Now        func() time.Time
	// SaveDetailed adds vllm bench serve's --save-detailed arrays to the
	// vLLM-form step files under VLLMDir (from records.jsonl).
	SaveDetailed bool
}

// Outcome is what Run produced.
type Outcome struct {
	// Dir is the run directory.
	Dir string
	// Result is result.json's content (nil when the sweep failed before
	// its first step).
	Result *sweep.Result
	// Complete is false when the sweep was interrupted or failed.
	Complete bool
}

// Run prepares the sweep cfg describes (sweep.Prepare: nothing is created
// for a bad config or target; those failures return a nil Outcome), then
// creates the run directory under cfg.OutDir named after cfg.Name (a
// failure there returns a nil Outcome too, before any load), runs the
// sweep into it and finishes it. When ctx is canceled mid-sweep (SIGINT),
// everything measured so far is written, the manifest says complete:
// false, and Run returns the Outcome and a nil error. A failure after the
// run directory exists returns the Outcome with the error; the directory is
// still finished (manifest.json lists what it holds).
func Run(ctx context.Context, cfg sweep.Config, o Options) (*Outcome, error) {
	logger := o.Logger
	if logger == nil {
		logger = log.NewNopLogger()
	}
	p, err := sweep.Prepare(ctx, cfg, sweep.Options{Logger: logger, Args: o.Args, HTTPClient: o.HTTPClient, Now: o.Now})
	if err != nil {
		return nil, err
	}
	defer p.Close()
	run, err := artifacts.Create(cfg.OutDir, cfg.Name, p.Start())
	if err != nil {
		return nil, fmt.Errorf("out dir: %w", err)
	}
	out := &Outcome{Dir: run.Dir()}
	level.Info(logger).Log("msg", "sweep starting", "target", redact.Text(cfg.Target), "model", p.Model(), "prompt_nonce", p.PromptNonce(),
		"mode", cfg.Mode(), "dir", run.Dir())
	sink, err := openFiles(run, o)
	if err != nil {
		return out, abort(run, cfg, p.Fingerprint(), err)
	}
	obs := o.Observer
	var slog *serverLog
	if o.ServerLog != "" {
		slog = newServerLog(o.ServerLog, obs, p.Redactor())
		obs = slog
	}
	res, runErr := p.Run(ctx, &fileSink{s: sink, limit: cfg.StepByteCap(), step: -1}, obs)
	if res == nil {
		return out, abort(run, cfg, p.Fingerprint(), errors.Join(runErr, sink.Close()))
	}
	out.Result, out.Complete = res, res.Complete
	if err := finish(run, sink, res, o.SaveDetailed, slog); err != nil {
		return out, err
	}
	return out, runErr
}

// openFiles writes command.txt and help.txt and opens the sink's files.
func openFiles(run *artifacts.Run, o Options) (*artifacts.Sink, error) {
	cmd := fingerprint.ShellJoin(redact.Args(o.Args)) + "\n"
	if err := run.WriteFile(artifacts.CommandFile, []byte(cmd)); err != nil {
		return nil, err
	}
	if o.Help != "" {
		if err := run.WriteFile(artifacts.HelpFile, []byte(o.Help)); err != nil {
			return nil, err
		}
	}
	return run.OpenSink()
}

// abort finishes an incomplete run directory after a failure before the
// first step; it returns err joined with the failure to finish.
func abort(run *artifacts.Run, cfg sweep.Config, fp fingerprint.Fingerprint, err error) error {
	fp.End = time.Now().UTC()
	reason := "failed: " + redact.Secrets(err.Error(), cfg.Secrets()...)
	ferr := run.Finish(artifacts.Manifest{Fingerprint: fp, InterruptedReason: reason}, false)
	return errors.Join(err, ferr)
}

// finish closes the streamed files and writes result.json, the vLLM-form
// step files, analysis.md with its plots, server.log (with slog) and the
// manifest.
func finish(run *artifacts.Run, sink *artifacts.Sink, res *sweep.Result, detailed bool, slog *serverLog) error {
	var errs []error
	m := artifacts.Manifest{Fingerprint: res.Fingerprint, InterruptedReason: res.InterruptedReason}
	if slog != nil {
		if err := slog.write(run); err != nil {
			errs = append(errs, err)
		} else {
			m.ServerLog = ServerLogFile
		}
	}
	if err := sink.Close(); err != nil {
		errs = append(errs, err)
		if res.Complete { // the records are not all there (a full disk): say so
			res.Complete, res.InterruptedReason = false, "writing the records failed: "+err.Error()
			m.InterruptedReason = res.InterruptedReason
		}
	}
	return writeResult(run, res, detailed, m, errs)
}

// writeResult writes result.json, the vLLM-form step files, analysis.md
// with its plots and, last, the manifest m (run and merge end so); it
// returns errs joined with each failure.
func writeResult(run *artifacts.Run, res *sweep.Result, detailed bool, m artifacts.Manifest, errs []error) error {
	if err := run.WriteJSON(artifacts.ResultFile, res); err != nil {
		errs = append(errs, err)
	}
	if err := writeVLLMFiles(run, res, detailed); err != nil {
		errs = append(errs, fmt.Errorf("vllm files: %w", err))
	}
	if err := report.WriteFiles(run, res); err != nil {
		errs = append(errs, fmt.Errorf("analysis: %w", err))
	}
	if err := run.Finish(m, res.Complete); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// fileSink adapts an artifacts.Sink to sweep.RecordSink. It applies the
// sweep's cap on a step's bytes (sweep.Config.StepByteCap): once the
// records of the step took more than limit bytes of records.jsonl, Record
// returns an error wrapping sweep.ErrStepCapReached (the record itself is
// written whole; the engine stops the step). Record calls never overlap.
type fileSink struct {
	s     *artifacts.Sink
	limit int64
	step  int   // the step of the last record
	base  int64 // RecordBytes when that step's first record came
}

// Record implements sweep.RecordSink.
func (f *fileSink) Record(r sweep.StepRecord) error {
	if r.Step != f.step {
		f.step, f.base = r.Step, f.s.RecordBytes()
	}
	if err := f.s.WriteRecord(artifacts.RecordLine{Step: r.Step, Round: r.Round, Record: r.Record, Prompt: r.Prompt}, r.Label); err != nil {
		return err
	}
	if n := f.s.RecordBytes() - f.base; n > f.limit {
		return fmt.Errorf("%w: its records took %d bytes of %s, over the cap of %d", sweep.ErrStepCapReached, n, artifacts.RecordsFile, f.limit)
	}
	return nil
}

// Snapshot implements sweep.RecordSink.
func (f *fileSink) Snapshot(s sweep.Snapshot) error {
	return f.s.WriteSnapshot(artifacts.Snapshot{Step: s.Step, Label: s.Label, Phase: s.Phase, Time: s.Time,
		Source: s.Source, NotRecorded: s.NotRecorded}, s.Body)
}

// Scrape implements sweep.RecordSink.
func (f *fileSink) Scrape(_ int, entry []byte) error { return f.s.WriteScrape(entry) }
