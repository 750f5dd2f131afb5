package main

import (
	"fmt"

	"github.com/alecthomas/kingpin/v2"

	"github.com/llmprobe/llmprobe/prober/config"
)

func init() {
	register(func(app *kingpin.Application) (string, action) {
		cmd := app.Command("check-config", "Validate configuration files as the daemon loads them (API keys and the files file_sd_configs match now are read too) and exit: "+
			"0 when all are valid, 1 otherwise. Prints FILE: OK for each valid file, the exact problems of the others, one per line (file:line: field: why), in file order.")
		files := cmd.Arg("file", "Configuration file to check (docs/configuration.md). Repeatable.").Required().Strings()
		return cmd.FullCommand(), func(e *env) int { return checkConfig(e, *files) }
	})
}

// checkConfig loads every file; valid ones are reported on stdout, the
// problems of the others (every one, one per line, never an API key) on
// stderr.
func checkConfig(e *env, files []string) int {
	rc := 0
	for _, f := range files {
		c, err := config.Load(f)
		if err == nil {
			// The file_sd files too (the daemon starts without them,
			// counting the failure): a FIFO, /dev/zero, a file over the
			// bound or one that does not parse.
			err = config.CheckDiscoveryFiles(f, c)
		}
		if err != nil {
			fmt.Fprintln(e.stderr, err)
			rc = 1
			continue
		}
		fmt.Fprintf(e.stdout, "%s: OK\n", f)
	}
	return rc
}
