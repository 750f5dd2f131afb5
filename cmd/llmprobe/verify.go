package main

import (
	"fmt"

	"github.com/alecthomas/kingpin/v2"

	"github.com/llmprobe/llmprobe/internal/artifacts"
)

func init() {
	register(func(app *kingpin.Application) (string, action) {
		cmd := app.Command("verify", "Check a run directory against its manifest.json: re-hash every file and report files "+
			"that are missing, changed or not listed. Exit 0 when every file matches, 1 on any mismatch, "+
			"2 when the manifest is missing or unreadable (docs/artifacts.md).")
		dir := cmd.Arg("dir", "Run directory (runs/<UTC stamp>-<name>).").Required().String()
		partial := cmd.Flag("partial", "Check a run directory that may have no manifest (the sweep was killed): every "+
			"records.jsonl / errors-redacted.jsonl line (finished or .partial) must be a whole JSON record and every "+
			"metrics snapshot file must parse; prints how many records are there. With a manifest, also verifies it.").Bool()
		return cmd.FullCommand(), func(e *env) int { return verify(e, *dir, artifacts.VerifyOptions{Partial: *partial}) }
	})
}

// verify prints each problem on stdout and a summary line; an unreadable
// manifest (or, with --partial, directory) goes to stderr. Exit 0 when
// every file matches (with --partial: every streamed file ends on a record
// boundary too), 1 on any problem, 2 on an unreadable manifest, a missing
// one but with --partial.
func verify(e *env, dir string, opts artifacts.VerifyOptions) int {
	v, err := artifacts.Verify(dir, opts)
	if err != nil {
		fmt.Fprintf(e.stderr, "llmprobe: error: %v\n", err)
		return 2
	}
	for _, p := range v.Problems {
		fmt.Fprintln(e.stdout, p)
	}
	switch {
	case v.Manifest == nil:
		fmt.Fprintf(e.stdout, "note: no %s (the run did not finish)\n", artifacts.ManifestFile)
	case !v.Manifest.Complete && !opts.Partial:
		fmt.Fprintf(e.stdout, "note: the run is incomplete (interrupted: %s)\n", v.Manifest.InterruptedReason)
	}
	// What the summary counts: the manifest's files, or with --partial the
	// records on disk.
	counted, ok := fmt.Sprintf("%d records", v.Records), fmt.Sprintf("%d files, %d whole records", len(v.Files), v.Records)
	if !opts.Partial {
		n := len(v.Manifest.Files)
		counted, ok = fmt.Sprintf("%d files in the manifest", n), fmt.Sprintf("%d files verified", n)
	}
	if len(v.Problems) > 0 {
		fmt.Fprintf(e.stdout, "FAILED: %d problem(s) in %s (%s)\n", len(v.Problems), dir, counted)
		return 1
	}
	fmt.Fprintf(e.stdout, "OK: %s\n", ok)
	return 0
}
