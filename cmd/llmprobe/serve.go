package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/exporter-toolkit/web"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"

	"github.com/llmprobe/llmprobe/internal/daemon"
	"github.com/llmprobe/llmprobe/internal/sweepd"
	"github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/engine"
	"github.com/llmprobe/llmprobe/prober/manager"
)

// defaultConfigFile is read when present in the working directory.
const defaultConfigFile = "llmprobe.yml"

type serveFlags struct {
	configFile      string
	configFileSet   bool
	configCheck     bool
	target          string
	targetName      string
	slo, sloArgs    []string
	model           string
	api             string
	engine          string
	web             *web.FlagConfig
	pushURL         string
	pushInterval    time.Duration
	pushExtraLabels []string
	pushMethod      string
	shutdownTimeout time.Duration
	// Hardening (docs/security.md): HTTP surfaces that are off by default.
	enableLifecycle bool
	enablePprof     bool
	// Sweeps inside the daemon (docs/sweep-api.md).
	enableSweeps        bool
	shard               string
	sweepsDir           string
	sweepsMaxConcurrent int
}

func init() {
	register(func(app *kingpin.Application) (string, action) {
		f := &serveFlags{}
		cmd := app.Command("serve", "Run the continuous prober daemon: scheduled open-loop probes of every target, metrics on /metrics. "+
			"Config comes from --config.file, or --target for a single endpoint; with neither (and no ./llmprobe.yml) it probes a built-in simulator.").Default()
		cmd.Flag("config.file", "llmprobe configuration file (see docs/configuration.md).").
			Default(defaultConfigFile).IsSetByUser(&f.configFileSet).StringVar(&f.configFile)
		cmd.Flag("config.check", "Validate the configuration file and exit: 0 when valid, 1 with the exact problem otherwise.").
			BoolVar(&f.configCheck)
		cmd.Flag("target", "Probe this one OpenAI-compatible base URL (e.g. http://vllm:8000) with the default probe, without a config file.").
			StringVar(&f.target)
		cmd.Flag("target.name", "Name (the target label) of --target; default: the URL's host:port and path, "+
			"e.g. gw:8080_llama for http://gw:8080/llama.").StringVar(&f.targetName)
		cmd.Flag("slo", "SLO of --target in milliseconds, vllm bench serve's --goodput syntax: --slo ttft:800 tpot:50 "+
			"e2el:5000 (several pairs after one flag, or the flag repeated). Without it every successful request "+
			"is good: goodput is the success rate and the latency SLO alerts cannot fire.").StringsVar(&f.slo)
		cmd.Arg("slo-pairs", "More --slo KEY:VALUE pairs (the `--slo ttft:800 tpot:50` form).").StringsVar(&f.sloArgs)
		cmd.Flag("model", "Model to request with --target (default: the first model of GET /v1/models).").StringVar(&f.model)
		cmd.Flag("api", "API to probe with --target: completions or chat.").Default("completions").StringVar(&f.api)
		engines := []string{"auto"}
		for _, n := range engine.Names {
			engines = append(engines, string(n))
		}
		cmd.Flag("engine", "Server engine of --target, for its metric names, info endpoints and tokenizer: "+
			strings.Join(engines, ", ")+" (auto detects it; see docs/engines.md).").Default("auto").EnumVar(&f.engine, engines...)
		cmd.Flag("push.url", "Also push all metrics in Prometheus text format to this URL on an interval (VictoriaMetrics /api/v1/import/prometheus, vmagent, or a Pushgateway /metrics/job/<job>).").
			StringVar(&f.pushURL)
		cmd.Flag("push.interval", "Interval between pushes with --push.url.").Default("15s").DurationVar(&f.pushInterval)
		cmd.Flag("push.extra-label", "Extra label added to every pushed series, as name=value. Repeatable.").StringsVar(&f.pushExtraLabels)
		cmd.Flag("push.method", "HTTP method of pushes (PUT replaces a Pushgateway group as a whole).").Default("POST").StringVar(&f.pushMethod)
		cmd.Flag("shard", "Probe only this replica's share of the config's targets, as INDEX/COUNT (0-based, e.g. 2/5; a StatefulSet pod's "+
			"ordinal): each target is owned by exactly one of COUNT replicas, by rendezvous hashing of its name (docs/scaling.md).").
			StringVar(&f.shard)
		cmd.Flag("shutdown-timeout", "How long to wait for in-flight probes and the web server on shutdown.").Default("10s").DurationVar(&f.shutdownTimeout)
		f.web = kingpinflag.AddFlags(cmd, ":9741")
		cmd.Flag("web.enable-lifecycle", "Enable POST /-/reload (as Prometheus' flag); without it only SIGHUP reloads the config.").
			BoolVar(&f.enableLifecycle)
		cmd.Flag("web.enable-pprof", "Serve Go profiling under /debug/pprof/ (memory and goroutine dumps: protect it with --web.config.file basic auth).").
			BoolVar(&f.enablePprof)
		cmd.Flag("web.enable-sweeps", "Serve the sweep API under /api/v1/sweeps (start, follow, cancel capacity sweeps: it generates load; "+
			"protect it with --web.config.file). Scheduled sweeps (sweeps: in the config) run without it. See docs/sweep-api.md.").
			BoolVar(&f.enableSweeps)
		cmd.Flag("sweeps.dir", "Directory of the daemon's sweep run directories (<dir>/<target>/<UTC stamp>-<name>/); "+
			"the last results are read back from it at start.").Default("sweeps").StringVar(&f.sweepsDir)
		cmd.Flag("sweeps.max-concurrent", "Most sweeps running at once over all targets (one per target at most).").
			Default(fmt.Sprint(sweepd.DefaultMaxConcurrent)).IntVar(&f.sweepsMaxConcurrent)
		return cmd.FullCommand(), func(e *env) int { return runServe(e, f) }
	})
}

// configSource says where the daemon's config comes from.
type configSource int

const (
	sourceFile configSource = iota
	sourceTarget
	sourceSimulator
)

func (f *serveFlags) source() configSource {
	switch {
	case f.target != "":
		return sourceTarget
	case f.configFileSet:
		return sourceFile
	}
	if _, err := os.Stat(f.configFile); err == nil {
		return sourceFile
	}
	return sourceSimulator
}

// runServe checks the flags (a bad one: exit 2), then runs the daemon
// (internal/daemon) until the root context ends.
func runServe(e *env, f *serveFlags) int {
	src := f.source()
	// Take SIGHUP before anything else, so an early one cannot kill the
	// process; the daemon handles it once the config is loaded.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	if f.configCheck {
		return checkServeConfig(e, f, src)
	}
	o, err := serveOptions(f, src)
	if err != nil {
		fmt.Fprintf(e.stderr, "llmprobe: error: %v\n", err)
		return 2
	}
	o.Logger, o.Hup = e.logger, hup
	switch err := daemon.Run(e.ctx, o); {
	case err == nil:
		return 0
	case errors.Is(err, daemon.ErrUsage):
		return 2
	}
	return 1
}

// checkServeConfig is --config.check: 0 when the config file is valid, 1
// with the exact problem otherwise.
func checkServeConfig(e *env, f *serveFlags, src configSource) int {
	if src != sourceFile {
		fmt.Fprintf(e.stderr, "llmprobe: error: --config.check needs a config file: %s not found\n", f.configFile)
		return 1
	}
	if _, err := config.Load(f.configFile); err != nil {
		fmt.Fprintf(e.stderr, "%v\n", err)
		return 1
	}
	fmt.Fprintf(e.stdout, "%s: OK\n", f.configFile)
	return 0
}

// serveOptions checks the flags and turns them into the daemon's options;
// the error's text starts with the flag it is about.
func serveOptions(f *serveFlags, src configSource) (daemon.Options, error) {
	o := daemon.Options{
		Web:             f.web,
		Push:            daemon.Push{URL: f.pushURL, Interval: f.pushInterval, ExtraLabels: f.pushExtraLabels, Method: f.pushMethod},
		ShutdownTimeout: f.shutdownTimeout,
		EnableLifecycle: f.enableLifecycle, EnablePprof: f.enablePprof, EnableSweeps: f.enableSweeps,
		SweepsDir: f.sweepsDir, SweepsMaxConcurrent: f.sweepsMaxConcurrent,
	}
	var err error
	switch {
	case f.api != "completions" && f.api != "chat":
		return o, fmt.Errorf("--api must be completions or chat, got %q", f.api)
	case f.pushMethod != "POST" && f.pushMethod != "PUT":
		return o, fmt.Errorf("--push.method must be POST or PUT, got %q", f.pushMethod)
	case f.sweepsMaxConcurrent < 1:
		return o, fmt.Errorf("--sweeps.max-concurrent must be >= 1, got %d", f.sweepsMaxConcurrent)
	}
	if err = daemon.ValidatePushLabels(f.pushExtraLabels); err != nil {
		return o, fmt.Errorf("--push.extra-label: %w", err)
	}
	if err = checkTargetOnlyFlags(f, src); err != nil {
		return o, err
	}
	if o.Shard, err = manager.ParseShard(f.shard); err != nil {
		return o, fmt.Errorf("--shard: %w", err)
	}
	switch src {
	case sourceFile:
		o.ConfigFile = f.configFile
	case sourceTarget:
		if o.Config, err = targetConfig(f); err != nil {
			return o, err
		}
		if n, _ := engine.Parse(f.engine); n != engine.Auto { // the flag is an enum of valid names
			o.Config.Targets[0].Engine = string(n)
		}
		o.ConfigFrom = f.target
	case sourceSimulator:
		o.Simulator = daemon.Simulator{Start: startEmbeddedSimulator, Capacity: embeddedCapacity}
	}
	return o, nil
}

// The push helpers the sweep's --push.url shares with the daemon.
var (
	writeText          = daemon.WriteText
	validatePushLabels = daemon.ValidatePushLabels
	quotePushLabels    = daemon.QuotePushLabels
)
