package main

import (
	"fmt"

	"github.com/alecthomas/kingpin/v2"

	"github.com/llmprobe/llmprobe/internal/report"
	"github.com/llmprobe/llmprobe/internal/rundir"
	"github.com/llmprobe/llmprobe/prober/redact"
)

func init() {
	register(func(app *kingpin.Application) (string, action) {
		cmd := app.Command("merge", "Merge the run directories of a sharded sweep (sweep --shard-index K --shard-count N, "+
			"e.g. the pods of a Kubernetes Indexed Job) into one run directory: records concatenated, statistics recomputed "+
			"from the records (exact), fingerprints checked to match, validity and knee recomputed (docs/scaling.md). "+
			"Exit 0 when merged, 1 when the merge failed, 2 when the shards do not belong together.")
		dirs := cmd.Arg("dir", "The shards' run directories, every shard once.").Required().ExistingDirs()
		out := cmd.Flag("out", "Parent directory of the merged run directory.").Default("runs").String()
		name := cmd.Flag("name", "Name of the merged run (default: the shards' name + \"-merged\").").String()
		return cmd.FullCommand(), func(e *env) int {
			o, err := rundir.Merge(*dirs, rundir.MergeOptions{OutDir: *out, Name: *name, Args: append([]string{"llmprobe"}, e.args...)})
			if err != nil {
				fmt.Fprintf(e.stderr, "llmprobe: error: %s\n", redact.Text(err.Error()))
				if o == nil {
					return 2
				}
				return 1
			}
			if err := report.WriteTable(e.stdout, o.Result); err != nil {
				fmt.Fprintf(e.stderr, "llmprobe: error: %v\n", err)
				return 1
			}
			fmt.Fprintf(e.stdout, "merged %d shards into %s\n", len(*dirs), o.Dir)
			return 0
		}
	})
}
