package main

import (
	"fmt"

	"github.com/alecthomas/kingpin/v2"

	"github.com/llmprobe/llmprobe/internal/sweepd"
	"github.com/llmprobe/llmprobe/prober/config"
)

func init() {
	register(func(app *kingpin.Application) (string, action) {
		cmd := app.Command("check-config", "Validate configuration files as the daemon loads them (API keys and the files file_sd_configs match now are read too) and exit: "+
			"0 when all are valid, 1 otherwise. Prints FILE: OK for each valid file, the exact problems of the others, one per line (file:line: field: why), in file order.")
		files := cmd.Arg("file", "Configuration file to check (docs/configuration.md). Repeatable.").Required().Strings()
		dir := cmd.Flag("sweeps.dir", "serve's --sweeps.dir: a config that schedules sweeps needs it writable (checked without creating it).").
			Default("sweeps").Envar(sweepsDirEnv).String()
		return cmd.FullCommand(), func(e *env) int { return checkConfig(e, *files, *dir) }
	})
}

// checkConfig loads every file; valid ones are reported on stdout, the
// problems of the others (every one, one per line, never an API key) on
// stderr.
func checkConfig(e *env, files []string, sweepsDir string) int {
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
		if name := firstSweep(c); name != "" {
			if err := sweepd.ProbeDir(sweepsDir); err != nil {
				fmt.Fprintf(e.stderr, "%s: %s schedules sweeps, but %v\n", f, name, err)
				rc = 1
				continue
			}
		}
		fmt.Fprintf(e.stdout, "%s: OK\n", f)
	}
	return rc
}

// firstSweep names the first scheduled sweep of c (targets[i].sweeps[j]),
// "" when c schedules none.
func firstSweep(c *config.Config) string {
	for i, t := range c.Targets {
		if len(t.Sweeps) > 0 {
			return fmt.Sprintf("targets[%d].sweeps[0] (%s)", i, t.Sweeps[0].Name())
		}
	}
	for i, d := range c.Discovery {
		if len(d.Target.Sweeps) > 0 {
			return fmt.Sprintf("discovery[%d].target.sweeps[0] (%s)", i, d.Target.Sweeps[0].Name())
		}
	}
	return ""
}
