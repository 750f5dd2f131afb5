package report

import (
	"bytes"
	"fmt"
	"path/filepath"
	"time"

	"github.com/llmprobe/llmprobe/prober/capfile"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// Load reads a run directory back into the *sweep.Result the report
// renders, so that analysis.md, the plots and the table of a run can be
// rendered again from disk (llmprobe analyze) through the same code as at
// the end of the sweep. It reads result.json (sweep.DecodeResult) and fills
// the fields result.json does not hold from manifest.json: the fingerprint,
// whether the run completed and the interrupted reason, the rounds and the
// open loop's max concurrency (from the fingerprint's load settings). The
// name is the run directory's name without its UTC stamp: --name as
// artifacts.Create sanitized it, with any "-2" it added for a clash. Load
// does not verify the files' hashes (artifacts.Verify does).
func Load(dir string) (*sweep.Result, error) {
	b, err := capfile.ReadOwned(filepath.Join(dir, artifacts.ResultFile), artifacts.MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("load run: %w", err)
	}
	res, err := sweep.DecodeResult(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("load run: %s: %w", filepath.Join(dir, artifacts.ResultFile), err)
	}
	m, err := artifacts.ReadManifest(dir)
	if err != nil {
		return nil, fmt.Errorf("load run: %w", err)
	}
	res.Fingerprint = m.Fingerprint
	res.Complete = res.Complete && m.Complete
	res.InterruptedReason = m.InterruptedReason
	res.Rounds = m.Fingerprint.Load.Rounds
	if res.Mode != sweep.ModeClosed {
		res.MaxConcurrency = m.Fingerprint.Load.MaxConcurrency
	}
	res.Name = runName(dir)
	return res, nil
}

// runName is the name part of a run directory's base name
// (<StampLayout>-<name>), "" when it has no such stamp.
func runName(dir string) string {
	base := filepath.Base(filepath.Clean(dir))
	n := len(artifacts.StampLayout)
	if len(base) <= n+1 || base[n] != '-' {
		return ""
	}
	if _, err := time.Parse(artifacts.StampLayout, base[:n]); err != nil {
		return ""
	}
	return base[n+1:]
}
