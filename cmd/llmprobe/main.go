// Command llmprobe is a Prometheus-native exporter and continuous prober for
// LLM serving endpoints (vLLM and any OpenAI-compatible server).
//
// main is thin: it parses flags, builds the logger and dispatches to the
// command's run function; the logic lives in prober/, collector/ and internal/.
package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/common/version"

	"github.com/llmprobe/llmprobe/internal/logging"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// env is what every command gets: the root context (canceled on SIGINT or
// SIGTERM), the logger, and the output streams.
type env struct {
	ctx    context.Context
	logger log.Logger
	stdout io.Writer
	stderr io.Writer
	args   []string
}

// action runs a parsed command and returns the process exit code.
type action func(e *env) int

// command registrations, one per file; each adds its kingpin command to app
// and returns its action.
var registrations []func(app *kingpin.Application) (string, action)

func register(f func(app *kingpin.Application) (string, action)) {
	registrations = append(registrations, f)
}

func newApp(stdout, stderr io.Writer) (*kingpin.Application, *logging.Config, map[string]action) {
	app := kingpin.New("llmprobe", "Prometheus-native exporter and continuous prober for LLM serving endpoints "+
		"(vLLM and any OpenAI-compatible server). Without a command it runs 'serve'; without a target or config "+
		"file, 'serve' probes a built-in vLLM simulator.")
	app.Version(version.Print("llmprobe"))
	app.HelpFlag.Short('h')
	app.UsageWriter(stdout)
	app.ErrorWriter(stderr)
	app.Terminate(nil)
	lc := &logging.Config{}
	logging.AddFlags(app, lc)
	actions := map[string]action{}
	for _, r := range registrations {
		name, a := r(app)
		actions[name] = a
	}
	return app, lc, actions
}

// commandHelp renders `llmprobe <name> --help` of this build (the run
// directory's help.txt).
func commandHelp(name string) string {
	var b bytes.Buffer
	app, _, _ := newApp(&b, io.Discard)
	app.Terminate(func(int) {})
	_, _ = app.Parse([]string{name, "--help"})
	return b.String()
}

// run parses args and runs the command until it ends or ctx is canceled (the
// root context: SIGINT or SIGTERM in main). It returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	app, lc, actions := newApp(stdout, stderr)
	exited := false
	app.Terminate(func(int) { exited = true })
	cmd, err := app.Parse(args)
	if exited {
		// --help or --version was printed.
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "llmprobe: error: %v, try --help\n", err)
		return 2
	}
	if err := lc.Validate(); err != nil {
		fmt.Fprintf(stderr, "llmprobe: error: %v\n", err)
		return 2
	}
	a, ok := actions[cmd]
	if !ok {
		fmt.Fprintf(stderr, "llmprobe: error: unknown command %q\n", cmd)
		return 2
	}
	logger := logging.New(*lc, stderr)
	level.Debug(logger).Log("msg", "starting", "command", cmd, "version", version.Info(), "build_context", version.BuildContext())
	return a(&env{ctx: ctx, logger: logger, stdout: stdout, stderr: stderr, args: args})
}
