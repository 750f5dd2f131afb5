package rundir

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/report"
	"github.com/llmprobe/llmprobe/prober/compare"
	"github.com/llmprobe/llmprobe/prober/fingerprint"
	"github.com/llmprobe/llmprobe/prober/redact"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// CompareOptions are RunCompare's collaborators. The zero value works: no
// help.txt, no notice of the directory.
type CompareOptions struct {
	// Help is written to help.txt (compare's --help of this build; "":
	// none).
	Help string
	// Started is called with the compare run directory once it exists,
	// before the first round (nil: not called).
	Started func(dir string)
	// SaveDetailed is Options.SaveDetailed, for every round.
	SaveDetailed bool
	// Now is the clock of the run directory's stamp and the fingerprint
	// (nil: time.Now).
	Now func() time.Time
}

// CompareOutcome is what RunCompare produced.
type CompareOutcome struct {
	// Dir is the compare run directory.
	Dir string
	// Result is its result.json: the rounds, the settings and the verdict.
	Result *compare.Result
}

// OutDirError is RunCompare's failure to create the compare run directory
// (nothing was written).
type OutDirError struct{ Err error }

func (e *OutDirError) Error() string { return "out dir: " + e.Err.Error() }

// Unwrap returns the error of artifacts.Create.
func (e *OutDirError) Unwrap() error { return e.Err }

// RunCompare runs the A/B comparison p into a compare run directory
// (docs/compare.md "The run directory"): both targets are prepared first
// (p.Preflight; a failure returns a nil outcome and creates nothing), then
// the directory is created under the baseline's OutDir, named after its
// Name (a failure is an *OutDirError), with command.txt and help.txt; every
// round is an ordinary sweep run directory inside it (Run, the round's
// records read back by LoadEvidence, as analyze reads them); last come
// result.json (compare.Result), analysis.md (report.WriteCompareAnalysis)
// and manifest.json, whose fingerprint has one step window per round and
// the comparison's settings as metadata. A failure to write after the
// rounds returns the outcome with the error; an interrupted or failed
// round makes the verdict inconclusive and the manifest incomplete.
func RunCompare(ctx context.Context, p *compare.Procedure, o CompareOptions) (*CompareOutcome, error) {
	if err := p.Preflight(ctx); err != nil {
		return nil, err
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	start := now()
	run, err := artifacts.Create(p.Baseline.OutDir, p.Baseline.Name, start)
	if err != nil {
		return nil, &OutDirError{Err: err}
	}
	fp := fingerprint.New(p.Args, start)
	cmd := fingerprint.ShellJoin(redact.Args(p.Args)) + "\n"
	if err := errors.Join(run.WriteFile(artifacts.CommandFile, []byte(cmd)), writeHelp(run, o.Help)); err != nil {
		_ = run.Finish(artifacts.Manifest{Fingerprint: fp, InterruptedReason: "failed: " + err.Error()}, false)
		return nil, err
	}
	if o.Started != nil {
		o.Started(run.Dir())
	}
	rounds := *p
	rounds.RunRound = func(ctx context.Context, r *compare.RoundRun) (*compare.RoundOutcome, error) {
		out, err := runRound(ctx, run.Dir(), r, Options{Logger: r.Logger, Args: p.Args, Observer: r.Observer, SaveDetailed: o.SaveDetailed})
		if out != nil && out.Result != nil {
			fp.Steps = append(fp.Steps, fingerprint.StepWindow{Index: len(fp.Steps), Label: r.Config.Name,
				Start: out.Result.Fingerprint.Start, End: out.Result.Fingerprint.End, Requests: requestsOf(out.Result)})
			if r.Index == 0 {
				fp.Workload, fp.Load = out.Result.Fingerprint.Workload, out.Result.Fingerprint.Load
				fp.Load.Rounds, fp.Load.Seed = p.Rounds, p.Seed
			}
		}
		return out, err
	}
	cr := rounds.Run(ctx)
	fp.End = now().UTC()
	fp.Metadata = compareMetadata(p, cr)
	var md bytes.Buffer
	report.WriteCompareAnalysis(&md, cr, p.Rounds)
	werr := errors.Join(run.WriteJSON(artifacts.ResultFile, cr), run.WriteFile(artifacts.AnalysisFile, md.Bytes()))
	reason := ""
	if !cr.Complete {
		reason = cr.Result.Reasons[0]
	}
	if werr != nil && reason == "" {
		reason = "failed: " + werr.Error()
	}
	if err := run.Finish(artifacts.Manifest{Fingerprint: fp, InterruptedReason: reason}, cr.Complete && werr == nil); err != nil {
		werr = errors.Join(werr, err)
	}
	return &CompareOutcome{Dir: run.Dir(), Result: cr}, werr
}

func writeHelp(run *artifacts.Run, help string) error {
	if help == "" {
		return nil
	}
	return run.WriteFile(artifacts.HelpFile, []byte(help))
}

// runRound runs one round of a comparison as a sweep run directory inside
// dir and reads its evidence back.
func runRound(ctx context.Context, dir string, r *compare.RoundRun, o Options) (*compare.RoundOutcome, error) {
	cfg := r.Config
	cfg.OutDir = dir
	out, err := Run(ctx, cfg, o)
	if out == nil || out.Result == nil {
		return nil, err
	}
	rel, rerr := filepath.Rel(dir, out.Dir)
	if rerr != nil {
		rel = out.Dir
	}
	ro := &compare.RoundOutcome{Result: out.Result, Complete: out.Complete, Dir: filepath.ToSlash(rel)}
	ev, lerr := LoadEvidence(out.Dir)
	if lerr != nil {
		return ro, errors.Join(err, lerr)
	}
	ro.Evidence = ev
	return ro, err
}

func requestsOf(res *sweep.Result) int {
	n := 0
	for _, s := range res.Steps {
		n += s.Stats.Requests
	}
	return n
}

// compareMetadata records the comparison's settings in the manifest,
// beside the baseline's own metadata (--metadata, --decision).
func compareMetadata(p *compare.Procedure, cr *compare.Result) map[string]string {
	m := map[string]string{}
	for k, v := range p.Baseline.Metadata {
		m[k] = v
	}
	m["compare.baseline"] = cr.Baseline.Target
	m["compare.candidate"] = cr.Candidate.Target
	m["compare.baseline_model"] = fingerprint.OrNotRecorded(cr.Baseline.Model)
	m["compare.candidate_model"] = fingerprint.OrNotRecorded(cr.Candidate.Model)
	m["compare.order"] = p.Order
	m["compare.rounds"] = fmt.Sprint(p.Rounds)
	m["compare.budget"] = p.Budget.String()
	if cr.Sequential != nil {
		m["compare.looks"] = fmt.Sprint(len(cr.Sequential.Looks))
	}
	m["compare.vary"] = strings.Join(cr.Vary, ",")
	m["compare.max_regression"] = p.MaxRegression
	if p.AnswerChecks != nil {
		m["compare.answer_checks"] = p.AnswerChecks.Name
	}
	if cr.PromptNonce != 0 {
		m["compare.prompt_nonce"] = strconv.FormatInt(cr.PromptNonce, 10)
	}
	for _, s := range []struct {
		key   string
		price float64
	}{{"compare.baseline_cost_per_hour_usd", cr.Baseline.CostPerHour}, {"compare.candidate_cost_per_hour_usd", cr.Candidate.CostPerHour}} {
		if s.price > 0 {
			m[s.key] = strconv.FormatFloat(s.price, 'g', -1, 64)
		}
	}
	return m
}
