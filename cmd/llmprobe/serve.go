package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/alecthomas/kingpin/v2"
	"github.com/alecthomas/units"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"

	"github.com/llmprobe/llmprobe/internal/daemon"
	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/sweepd"
	"github.com/llmprobe/llmprobe/internal/web"
	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/engine"
	"github.com/llmprobe/llmprobe/prober/manager"
)

// defaultConfigFile is read when present in the working directory.
const defaultConfigFile = "llmprobe.yml"

// serveFlags are serve's flags: the daemon's options and --target's
// settings bound directly, and those main reads itself.
type serveFlags struct {
	daemon.Options
	target        daemon.Target
	configFileSet bool
	configCheck   bool
	shard         string
	// sweepsMaxBytes is --sweeps.retention.size.
	sweepsMaxBytes units.Base2Bytes
}

// sweepsDirEnv sets --sweeps.dir (serve, check-config) from the
// environment: the container image sets it to its volume.
const sweepsDirEnv = "LLMPROBE_SWEEPS_DIR"

func init() {
	register(func(app *kingpin.Application) (string, action) {
		f := &serveFlags{}
		cmd := app.Command("serve", "Run the continuous prober daemon: scheduled open-loop probes of every target, metrics on /metrics. "+
			"Config comes from --config.file, or --target for a single endpoint; with neither (and no ./llmprobe.yml) it probes a built-in simulator.").Default()
		cmd.Flag("config.file", "llmprobe configuration file (see docs/configuration.md).").
			Default(defaultConfigFile).IsSetByUser(&f.configFileSet).StringVar(&f.ConfigFile)
		cmd.Flag("config.check", "Validate the configuration file and exit: 0 when valid, 1 with the exact problem otherwise.").
			BoolVar(&f.configCheck)
		t := &f.target
		cmd.Flag("target", "Probe this one OpenAI-compatible base URL (e.g. http://vllm:8000) with the default probe, without a config file.").
			StringVar(&t.URL)
		cmd.Flag("target.name", "Name (the target label) of --target; default: the URL's host:port and path, "+
			"e.g. gw:8080_llama for http://gw:8080/llama.").StringVar(&t.Name)
		cmd.Flag("slo", "SLO of --target in milliseconds, vllm bench serve's --goodput syntax: --slo ttft:800 tpot:50 "+
			"e2el:5000 (several pairs after one flag, or the flag repeated). Without it every successful request "+
			"is good: goodput is the success rate and the latency SLO alerts cannot fire.").StringsVar(&t.SLO)
		cmd.Arg("slo-pairs", "More --slo KEY:VALUE pairs (the `--slo ttft:800 tpot:50` form).").StringsVar(&t.SLOArgs)
		cmd.Flag("answer-checks", "Also run answer checks against --target: builtin (the embedded set) or a JSONL check set file, "+
			"every 5m, as the probe \"answers\" (docs/quality.md).").PlaceHolder("builtin|FILE").StringVar(&t.AnswerChecks)
		cmd.Flag("model", "Model to request with --target (default: the first model of GET /v1/models).").StringVar(&t.Model)
		cmd.Flag("api", "API to probe with --target: "+client.NamesWith(nil, "or")+" (batch size 1, /v1/rerank; a config file sets batch_size and rerank_path).").Default(client.DefaultAPI).StringVar(&t.API)
		engines := []string{"auto"}
		for _, n := range engine.Names {
			engines = append(engines, string(n))
		}
		cmd.Flag("engine", "Server engine of --target, for its metric names, info endpoints and tokenizer: "+
			strings.Join(engines, ", ")+" (auto detects it; see docs/engines.md).").Default("auto").EnumVar(&t.Engine, engines...)
		p := &f.Push
		cmd.Flag("push.url", "Also push all metrics in Prometheus text format to this URL on an interval (VictoriaMetrics /api/v1/import/prometheus, vmagent, or a Pushgateway /metrics/job/<job>).").
			StringVar(&p.URL)
		cmd.Flag("push.interval", "Interval between pushes with --push.url.").Default("15s").DurationVar(&p.Interval)
		cmd.Flag("push.extra-label", "Extra label added to every pushed series, as name=value. Repeatable.").StringsVar(&p.ExtraLabels)
		cmd.Flag("push.method", "HTTP method of pushes (PUT replaces a Pushgateway group as a whole).").Default("POST").StringVar(&p.Method)
		addTracingFlags(cmd, &f.Tracing)
		cmd.Flag("shard", "Probe only this replica's share of the config's targets, as INDEX/COUNT (0-based, e.g. 2/5; a StatefulSet pod's "+
			"ordinal): each target is owned by exactly one of COUNT replicas, by rendezvous hashing of its name (docs/scaling.md).").
			StringVar(&f.shard)
		cmd.Flag("shutdown-timeout", "How long to wait for in-flight probes and the web server on shutdown.").Default("10s").DurationVar(&f.ShutdownTimeout)
		f.Web = kingpinflag.AddFlags(cmd, defaultHealthListen)
		// LLMPROBE_WEB_LISTEN_ADDRESS moves serve and its healthcheck together.
		cmd.GetFlag("web.listen-address").Envar(webListenEnv)
		cmd.Flag("web.max-requests", "Most HTTP requests served at once (as Prometheus' --web.max-connections); over it a request is answered "+
			"503 at once, so a flood of unread scrapes cannot exhaust memory; and most connections held per listener, a new one closing the "+
			"longest-idle one at the cap. 0: no limit.").
			Default(fmt.Sprint(web.DefaultMaxRequests)).IntVar(&f.MaxRequests)
		cmd.Flag("web.enable-lifecycle", "Enable POST /-/reload (as Prometheus' flag); without it only SIGHUP reloads the config.").
			BoolVar(&f.EnableLifecycle)
		cmd.Flag("web.enable-pprof", "Serve Go profiling under /debug/pprof/ (memory and goroutine dumps: protect it with --web.config.file basic auth).").
			BoolVar(&f.EnablePprof)
		cmd.Flag("web.enable-sweeps", "Serve the sweep API under /api/v1/sweeps (start, follow, cancel capacity sweeps: it generates load; "+
			"protect it with --web.config.file). Scheduled sweeps (sweeps: in the config) run without it. See docs/sweep-api.md.").
			BoolVar(&f.EnableSweeps)
		cmd.Flag("sweeps.dir", "Directory of the daemon's sweep run directories (<dir>/<target>/<UTC stamp>-<name>/); "+
			"the last results are read back from it at start. It must be writable when the config schedules sweeps or "+
			"--web.enable-sweeps is on (checked at load). The container image sets /var/lib/llmprobe/sweeps, a volume.").
			Default("sweeps").Envar(sweepsDirEnv).StringVar(&f.SweepsDir)
		cmd.Flag("sweeps.retention.size", "Most bytes the run directories under --sweeps.dir may hold: before each sweep starts, the oldest "+
			"are removed (never the newest successful run of a sweep) until they fit; a sweep that still does not fit is not run. "+
			"Set it below the volume's size by one run (1–5 MB). 0: no limit by size.").
			Default(units.Base2Bytes(sweepd.DefaultMaxBytes).String()).BytesVar(&f.sweepsMaxBytes)
		cmd.Flag("sweeps.max-concurrent", "Most sweeps running at once over all targets (one per target at most).").
			Default(fmt.Sprint(sweepd.DefaultMaxConcurrent)).IntVar(&f.SweepsMaxConcurrent)
		return cmd.FullCommand(), func(e *env) int { return runServe(e, f) }
	})
}

// runServe checks the flags (a bad one: exit 2), then runs the daemon
// (internal/daemon) until the root context ends.
func runServe(e *env, f *serveFlags) int {
	// Take SIGHUP before anything else, so an early one cannot kill the
	// process; the daemon handles it once the config is loaded.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	fromFile := f.target.URL == "" && f.fromFile()
	if f.configCheck {
		return checkServeConfig(e, f.ConfigFile, f.SweepsDir, fromFile)
	}
	o, err := f.options(fromFile)
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

// fromFile reports whether there is a config file: --config.file, or
// ./llmprobe.yml present.
func (f *serveFlags) fromFile() bool {
	_, err := os.Stat(f.ConfigFile)
	return f.configFileSet || err == nil
}

// checkServeConfig is --config.check: 0 when the config file is valid, 1
// with the exact problem otherwise.
func checkServeConfig(e *env, file, sweepsDir string, fromFile bool) int {
	if !fromFile {
		fmt.Fprintf(e.stderr, "llmprobe: error: --config.check needs a config file: %s not found\n", file)
		return 1
	}
	return checkConfig(e, []string{file}, sweepsDir)
}

// options checks the flags and completes the daemon's options with the
// config source: the file, --target's config, or the built-in simulator.
// The error's text starts with the flag it is about.
func (f *serveFlags) options(fromFile bool) (daemon.Options, error) {
	o := f.Options
	o.SweepsMaxBytes = int64(f.sweepsMaxBytes)
	if _, err := client.ParseAPI(f.target.API); err != nil {
		return o, fmt.Errorf("--api %w", err)
	}
	var err error
	switch {
	case o.Push.Method != "POST" && o.Push.Method != "PUT":
		return o, fmt.Errorf("--push.method must be POST or PUT, got %q", o.Push.Method)
	case o.SweepsMaxConcurrent < 1:
		return o, fmt.Errorf("--sweeps.max-concurrent must be >= 1, got %d", o.SweepsMaxConcurrent)
	case f.sweepsMaxBytes < 0:
		return o, fmt.Errorf("--sweeps.retention.size must be >= 0 (0: no limit), got %s", f.sweepsMaxBytes)
	case o.MaxRequests < 0:
		return o, fmt.Errorf("--web.max-requests must be >= 0 (0: no limit), got %d", o.MaxRequests)
	}
	if err = o.Tracing.Validate(); err != nil {
		return o, err
	}
	if err = daemon.ValidatePushLabels(o.Push.ExtraLabels); err != nil {
		return o, fmt.Errorf("--push.extra-label: %w", err)
	}
	if f.target.URL == "" {
		if err = f.target.CheckUnused(); err != nil {
			return o, err
		}
	}
	if o.Shard, err = manager.ParseShard(f.shard); err != nil {
		return o, fmt.Errorf("--shard: %w", err)
	}
	switch {
	case f.target.URL != "":
		o.ConfigFile, o.ConfigFrom = "", f.target.URL
		o.Config, err = f.target.Config()
	case !fromFile:
		o.ConfigFile = ""
		o.Simulator = daemon.Simulator{Start: simulator.StartEmbedded, Capacity: simulator.EmbeddedCapacity}
	}
	return o, err
}
