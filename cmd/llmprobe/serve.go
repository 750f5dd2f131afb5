package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/alecthomas/kingpin/v2"
	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"

	"github.com/llmprobe/llmprobe/collector/probemetrics"
	"github.com/llmprobe/llmprobe/internal/logging"
	"github.com/llmprobe/llmprobe/internal/sweepd"
	lweb "github.com/llmprobe/llmprobe/internal/web"
	"github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/engine"
	"github.com/llmprobe/llmprobe/prober/fingerprint"
	"github.com/llmprobe/llmprobe/prober/manager"
	"github.com/llmprobe/llmprobe/prober/workload"
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

// maxWebConfigBytes caps the --web.config.file read at startup.
const maxWebConfigBytes = 1 << 20

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

func runServe(e *env, f *serveFlags) int {
	logger := e.logger
	src := f.source()
	// Take SIGHUP before anything else, so an early one cannot kill the
	// process; it is handled once the config is loaded.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	if f.configCheck {
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

	if f.api != "completions" && f.api != "chat" {
		fmt.Fprintf(e.stderr, "llmprobe: error: --api must be completions or chat, got %q\n", f.api)
		return 2
	}
	if f.pushMethod != "POST" && f.pushMethod != "PUT" {
		fmt.Fprintf(e.stderr, "llmprobe: error: --push.method must be POST or PUT, got %q\n", f.pushMethod)
		return 2
	}
	if err := validatePushLabels(f.pushExtraLabels); err != nil {
		fmt.Fprintf(e.stderr, "llmprobe: error: --push.extra-label: %v\n", err)
		return 2
	}
	if err := checkTargetOnlyFlags(f, src); err != nil {
		fmt.Fprintf(e.stderr, "llmprobe: error: %v\n", err)
		return 2
	}

	if err := validateWebConfig(*f.web.WebConfigFile); err != nil {
		level.Error(logger).Log("msg", "invalid --web.config.file", "file", *f.web.WebConfigFile, "err", err)
		return 1
	}

	level.Info(logger).Log("msg", "starting llmprobe", "version", version.Info())
	level.Info(logger).Log("msg", "build context", "build_context", version.BuildContext())
	reg := prometheus.NewRegistry()
	selfReg := prometheus.NewRegistry()
	selfReg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		versioncollector.NewCollector("llmprobe"),
	)
	gatherers := prometheus.Gatherers{reg, selfReg}

	safe := config.NewSafeConfig(reg)
	pm := probemetrics.New(reg)
	// The landing page's summary of the last 5 minutes per target.
	window := lweb.NewWindow()
	shard, err := manager.ParseShard(f.shard)
	if err != nil {
		fmt.Fprintf(e.stderr, "llmprobe: error: --shard: %v\n", err)
		return 2
	}
	mgr := manager.New(manager.Options{Logger: logger, Observers: []manager.Observer{pm, window}, Shard: shard})
	defer mgr.Stop()
	registerShardGauges(reg, mgr)
	if shard.Count > 0 {
		level.Info(logger).Log("msg", "sharded: probing the targets this replica owns", "shard", shard)
	}
	if f.sweepsMaxConcurrent < 1 {
		fmt.Fprintf(e.stderr, "llmprobe: error: --sweeps.max-concurrent must be >= 1, got %d\n", f.sweepsMaxConcurrent)
		return 2
	}
	embeddedTarget := ""
	sweeps := sweepd.New(sweepd.Options{
		Logger: log.With(logger, "component", "sweeps"), Dir: f.sweepsDir, MaxConcurrent: f.sweepsMaxConcurrent,
		Observer: probemetrics.NewSweeps(reg),
		Embedded: func(target string, w workload.Spec) (bool, float64) {
			if target != embeddedTarget || embeddedTarget == "" {
				return false, 0
			}
			return true, embeddedCapacity(w)
		},
	})
	defer sweeps.Stop()

	ctx := e.ctx
	// loadConfig loads (or builds) the config and applies it to the
	// manager; the config is installed only when both succeed.
	var (
		loadConfig func() (*config.Config, error)
		configYAML func() string
	)
	apply := func(c *config.Config) error {
		if err := mgr.Apply(ctx, c); err != nil {
			return err
		}
		// Scheduled and API sweeps run on the replica that owns the target.
		owned := *c
		owned.Targets = slices.DeleteFunc(slices.Clone(c.Targets), func(t config.TargetConfig) bool { return !shard.Owns(t.Name) })
		sweeps.Apply(&owned)
		pm.SetTargetCosts(targetCosts(c))
		return nil
	}
	// fixed serves a config built from flags: applied once, never reloaded.
	fixed := func(cfg *config.Config) (func() (*config.Config, error), func() string) {
		return func() (*config.Config, error) {
			if err := apply(cfg); err != nil {
				return nil, err
			}
			safe.Set(cfg)
			return cfg, nil
		}, cfg.Redacted
	}
	switch src {
	case sourceFile:
		level.Info(logger).Log("msg", "loading config", "file", f.configFile)
		loadConfig = func() (*config.Config, error) {
			if err := safe.ReloadWith(f.configFile, apply); err != nil {
				return nil, err
			}
			return safe.Get(), nil
		}
		configYAML = func() string { return safe.Get().Redacted() }
	case sourceTarget:
		cfg, err := targetConfig(f)
		if err != nil {
			fmt.Fprintf(e.stderr, "llmprobe: error: %v\n", err)
			return 2
		}
		if n, _ := engine.Parse(f.engine); n != engine.Auto { // the flag is an enum of valid names
			cfg.Targets[0].Engine = string(n)
		}
		level.Info(logger).Log("msg", "probing one target from flags", "target", cfg.Targets[0].Name, "base_url", f.target)
		loadConfig, configYAML = fixed(cfg)
	case sourceSimulator:
		stop, baseURL, err := startEmbeddedSimulator(logger)
		if err != nil {
			level.Error(logger).Log("msg", "cannot start the built-in simulator", "err", err)
			return 1
		}
		defer stop()
		cfg, err := config.ForTarget(baseURL, "", "completions")
		if err != nil {
			level.Error(logger).Log("msg", "cannot build the simulator config", "err", err)
			return 1
		}
		cfg.Targets[0].Name = "simulator"
		embeddedTarget = "simulator"
		for i := range cfg.Targets[0].Probes {
			cfg.Targets[0].Probes[i].Seed = config.DeriveSeed("simulator", cfg.Targets[0].Probes[i].Name)
		}
		mgr.SetNote("simulator", "This is the built-in vLLM simulator (llmprobe simulate), not a real endpoint: "+
			"run with --config.file or --target to probe real servers.")
		level.Warn(logger).Log("msg", "no --target, no --config.file and no ./llmprobe.yml: probing the BUILT-IN SIMULATOR, not a real endpoint", "simulator", baseURL)
		loadConfig, configYAML = fixed(cfg)
	}

	cfg, err := loadConfig()
	if err != nil {
		level.Error(logger).Log("msg", "error loading config", "err", err)
		return 1
	}
	level.Info(logger).Log("msg", "probes scheduled", "targets", len(cfg.Targets))

	// Reloads are serialised: SIGHUP and POST /-/reload share one function.
	var reloadMu sync.Mutex
	reload := func(rctx context.Context) error {
		reloadMu.Lock()
		defer reloadMu.Unlock()
		if src != sourceFile {
			return fmt.Errorf("%w: the daemon was not started from a config file", lweb.ErrNothingToReload)
		}
		newCfg, err := loadConfig()
		if err != nil {
			level.Error(logger).Log("msg", "error reloading config, keeping the old one", "err", err)
			return err
		}
		level.Info(logger).Log("msg", "config reloaded", "targets", len(newCfg.Targets))
		return nil
	}

	go func() {
		for {
			select {
			case <-hup:
				if src != sourceFile {
					level.Warn(logger).Log("msg", "SIGHUP ignored: the daemon was not started from a config file")
					continue
				}
				_ = reload(ctx)
			case <-ctx.Done():
				return
			}
		}
	}()

	if f.pushURL != "" {
		var wg sync.WaitGroup
		pctx, pcancel := context.WithCancel(ctx)
		defer func() { pcancel(); wg.Wait() }()
		err := metrics.InitPushExtWithOptions(pctx, f.pushURL, f.pushInterval, func(w io.Writer) { writeText(w, gatherers) },
			&metrics.PushOptions{
				ExtraLabels: strings.Join(quotePushLabels(f.pushExtraLabels), ","),
				Method:      f.pushMethod,
				WaitGroup:   &wg,
				LogErr: func(format string, v ...any) {
					level.Warn(logger).Log("msg", "push failed", "err", fmt.Sprintf(format, v...))
				},
			})
		if err != nil {
			level.Error(logger).Log("msg", "invalid --push.url", "err", err)
			return 2
		}
		level.Info(logger).Log("msg", "pushing metrics", "url", fingerprint.RedactText(f.pushURL), "interval", f.pushInterval)
	}

	handler := lweb.NewHandler(lweb.Options{
		Gatherer:   gatherers,
		Status:     mgr,
		Reload:     reload,
		Ready:      mgr.Ready,
		ConfigYAML: configYAML,
		// docs/security.md: both off by default.
		EnableLifecycle: f.enableLifecycle,
		EnablePprof:     f.enablePprof,
		EnableSweeps:    f.enableSweeps,
		Shard:           shardText(mgr),
		Sweeps:          sweeps,
		Window:          window,
	})
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- web.ListenAndServe(srv, f.web, logging.Slog(logger)) }()

	select {
	case err := <-errc:
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			level.Error(logger).Log("msg", "web server failed", "err", err)
			return 1
		}
		return 0
	case <-ctx.Done():
	}
	level.Info(logger).Log("msg", "shutting down: stopping sweeps and probes")
	sctx, cancel := context.WithTimeout(context.Background(), f.shutdownTimeout)
	defer cancel()
	stopped := make(chan struct{})
	go func() { sweeps.Stop(); mgr.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-sctx.Done():
		level.Warn(logger).Log("msg", "probes did not stop within --shutdown-timeout", "timeout", f.shutdownTimeout)
	}
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		level.Warn(logger).Log("msg", "web server shutdown", "err", err)
	}
	level.Info(logger).Log("msg", "stopped")
	return 0
}

func writeText(w io.Writer, g prometheus.Gatherer) {
	mfs, err := g.Gather()
	if err != nil && len(mfs) == 0 {
		return
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		_ = enc.Encode(mf)
	}
}

func validatePushLabels(ls []string) error {
	for _, l := range ls {
		name, _, ok := strings.Cut(l, "=")
		if !ok || name == "" {
			return fmt.Errorf("%q is not name=value", l)
		}
		for i, r := range name {
			if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
				return fmt.Errorf("%q: invalid label name %q", l, name)
			}
		}
	}
	return nil
}

func quotePushLabels(ls []string) []string {
	out := make([]string, 0, len(ls))
	for _, l := range ls {
		name, value, _ := strings.Cut(l, "=")
		out = append(out, name+`="`+labelEscaper.Replace(value)+`"`)
	}
	return out
}

// labelEscaper escapes a label value as the Prometheus text format does.
var labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)

// validateWebConfig checks the --web.config.file as exporter-toolkit will
// read it (TLS files, bcrypt hashes) before any probe starts; the file is
// first read with a cap, so that /dev/zero or a huge file is an error, not
// an unbounded read.
func validateWebConfig(path string) error {
	if path == "" {
		return nil
	}
	if _, err := config.ReadFile(path, maxWebConfigBytes); err != nil {
		var te *config.TooLargeError
		if errors.As(err, &te) {
			return fmt.Errorf("the file is larger than %v, the cap on a web config file", config.ByteSize(te.Limit))
		}
		return err
	}
	return web.Validate(path)
}

// registerShardGauges registers llmprobe_shard_targets{shard, state}: the
// targets of the loaded config this replica probes (state="owned") and all
// of them (state="configured"); shard is --shard ("0/1" without it).
func registerShardGauges(reg prometheus.Registerer, mgr *manager.Manager) {
	sh, _, _ := mgr.ShardTargets()
	name := sh.String()
	if name == "" {
		name = "0/1"
	}
	for _, state := range []string{"owned", "configured"} {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "llmprobe_shard_targets",
			Help:        "Targets of the loaded config this replica probes (state=owned) and all of them (state=configured); shard is --shard.",
			ConstLabels: prometheus.Labels{"shard": name, "state": state},
		}, func() float64 {
			_, owned, total := mgr.ShardTargets()
			if state == "owned" {
				return float64(owned)
			}
			return float64(total)
		}))
	}
}

// shardText is the landing page's shard line ("" when not sharded).
func shardText(mgr *manager.Manager) func() string {
	return func() string {
		sh, owned, total := mgr.ShardTargets()
		if sh.Count == 0 {
			return ""
		}
		return fmt.Sprintf("shard %s: probing %d of the config's %d targets (rendezvous hashing of the target name)", sh, owned, total)
	}
}
