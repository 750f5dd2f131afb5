package main

import (
	"github.com/alecthomas/kingpin/v2"

	"github.com/llmprobe/llmprobe/prober/sweep"
)

// addHTTPConfigFlag adds --http.config.file, the flag of that name in
// promtool and the exporters, with the sweep setting's help (`workload
// stats` takes it too).
func addHTTPConfigFlag(cmd *kingpin.CmdClause, p *string) {
	cmd.Flag("http.config.file", sweep.LookupFlag("http.config.file").Doc).StringVar(p)
}
