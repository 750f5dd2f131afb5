package main

import (
	"fmt"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/version"
)

func init() {
	register(func(app *kingpin.Application) (string, action) {
		cmd := app.Command("version", "Print version and build information, then exit.")
		return cmd.FullCommand(), func(e *env) int {
			fmt.Fprintln(e.stdout, version.Print("llmprobe"))
			return 0
		}
	})
}
