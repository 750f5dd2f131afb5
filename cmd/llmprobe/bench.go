package main

import (
	"fmt"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-kit/log/level"

	"github.com/llmprobe/llmprobe/internal/bench"
)

func init() {
	register(func(app *kingpin.Application) (string, action) {
		cmd := app.Command("bench", "Benchmark llmprobe itself on loopback: read-delay accuracy against the simulator's "+
			"write times, open-loop capacity and CPU per streamed token, arrival fidelity, and the daemon's footprint; "+
			"prints one table (about 9 minutes, --quick about 2). See docs/performance.md.")
		s := &bench.Settings{}
		bench.AddFlags(cmd, s)
		return cmd.FullCommand(), func(e *env) int { return runBench(e, s) }
	})
}

// benchEnv is added to the environment of the benchmark's children (tests
// set it to make the test binary act as llmprobe).
var benchEnv []string

// runBench runs the benchmark (internal/bench) and prints its table: 2 for
// a bad flag, 1 when the benchmark or its outputs fail.
func runBench(e *env, s *bench.Settings) int {
	o, err := s.Options()
	if err != nil {
		fmt.Fprintf(e.stderr, "llmprobe: error: %v, try --help\n", err)
		return 2
	}
	o.Progress, o.Env = e.stderr, benchEnv
	dir, cleanup, err := s.WorkDir()
	if err != nil {
		level.Error(e.logger).Log("msg", "work directory", "err", err)
		return 1
	}
	defer cleanup()
	o.Dir = dir
	rep, runErr := bench.Run(e.ctx, o)
	if rep != nil {
		if err := bench.WriteTable(e.stdout, rep); err != nil {
			level.Error(e.logger).Log("msg", "write table", "err", err)
			return 1
		}
		if s.JSON != "" {
			if err := bench.WriteJSON(s.JSON, rep); err != nil {
				level.Error(e.logger).Log("msg", "write report", "err", err)
				return 1
			}
		}
	}
	if runErr != nil {
		level.Error(e.logger).Log("msg", "benchmark failed", "err", runErr, "dir", o.Dir)
		return 1
	}
	if s.Keep {
		fmt.Fprintf(e.stderr, "work directory kept: %s\n", o.Dir)
	}
	return 0
}
