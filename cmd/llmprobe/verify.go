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
		return cmd.FullCommand(), func(e *env) int {
			if *partial {
				return verifyPartial(e, *dir)
			}
			return verify(e, *dir)
		}
	})
}

// verify prints each problem on stdout and a summary line; manifest errors
// go to stderr.
func verify(e *env, dir string) int {
	m, err := artifacts.ReadManifest(dir)
	if err != nil {
		fmt.Fprintf(e.stderr, "llmprobe: error: %v\n", err)
		return 2
	}
	problems, err := artifacts.Verify(dir)
	if err != nil {
		fmt.Fprintf(e.stderr, "llmprobe: error: %v\n", err)
		return 2
	}
	for _, p := range problems {
		fmt.Fprintln(e.stdout, p)
	}
	if !m.Complete {
		fmt.Fprintf(e.stdout, "note: the run is incomplete (interrupted: %s)\n", m.InterruptedReason)
	}
	if len(problems) > 0 {
		fmt.Fprintf(e.stdout, "FAILED: %d problem(s) in %s (%d files in the manifest)\n", len(problems), dir, len(m.Files))
		return 1
	}
	fmt.Fprintf(e.stdout, "OK: %d files verified\n", len(m.Files))
	return 0
}

// verifyPartial checks what a possibly killed run left behind: exit 0 when
// every streamed file ends on a record boundary (and, with a manifest,
// every file matches it), 1 on any problem, 2 when dir is unreadable.
func verifyPartial(e *env, dir string) int {
	sum, problems, err := artifacts.VerifyPartial(dir)
	if err != nil {
		fmt.Fprintf(e.stderr, "llmprobe: error: %v\n", err)
		return 2
	}
	for _, p := range problems {
		fmt.Fprintln(e.stdout, p)
	}
	if !sum.Manifest {
		fmt.Fprintf(e.stdout, "note: no %s (the run did not finish)\n", artifacts.ManifestFile)
	}
	if len(problems) > 0 {
		fmt.Fprintf(e.stdout, "FAILED: %d problem(s) in %s (%d records)\n", len(problems), dir, sum.Records)
		return 1
	}
	fmt.Fprintf(e.stdout, "OK: %d files, %d whole records\n", len(sum.Files), sum.Records)
	return 0
}
