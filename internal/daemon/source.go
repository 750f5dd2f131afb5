package daemon

import (
	"context"
	"errors"

	"github.com/go-kit/log/level"

	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/config"
)

// simulatorNote is the landing page's note on the built-in simulator.
const simulatorNote = "This is the built-in vLLM simulator (llmprobe simulate), not a real endpoint: " +
	"run with --config.file or --target to probe real servers."

// source sets d.load and d.configYAML for the config source of d.o: the
// config file, the config built from flags, or the built-in simulator
// (which it starts: stop stops it).
func (d *daemon) source(ctx context.Context) (stop func(), err error) {
	apply := func(c *config.Config) error { return d.apply(ctx, c) }
	switch {
	case d.o.ConfigFile != "":
		level.Info(d.logger).Log("msg", "loading config", "file", d.o.ConfigFile)
		d.fromFile = true
		d.load = func() (*config.Config, error) {
			if c := d.first; c != nil {
				// The file as Run loaded it for its tracing block.
				d.first = nil
				if err := apply(c); err != nil {
					d.safe.MarkFailed()
					return nil, err
				}
				d.safe.Set(c)
				return c, nil
			}
			if err := d.safe.ReloadWith(d.o.ConfigFile, apply); err != nil {
				return nil, err
			}
			c := d.safe.Get()
			if !c.Tracing.Equal(d.o.Tracing.File) {
				level.Warn(d.logger).Log("msg", "the tracing block changed: it is read at start only, restart llmprobe to apply it; "+
					"the exporter keeps its settings from the start")
			}
			return c, nil
		}
		d.configYAML = func() string { return d.safe.Get().Redacted() }
		return func() {}, nil
	case d.o.Config != nil:
		level.Info(d.logger).Log("msg", "probing one target from flags", "target", d.o.Config.Targets[0].Name, "base_url", d.o.ConfigFrom)
		d.fixed(d.o.Config, apply)
		return func() {}, nil
	}
	if d.o.Simulator.Start == nil {
		err := errors.New("no config source: give a config file, a config or the simulator")
		level.Error(d.logger).Log("msg", "cannot start the built-in simulator", "err", err)
		return nil, err
	}
	stop, baseURL, err := d.o.Simulator.Start(d.logger)
	if err != nil {
		level.Error(d.logger).Log("msg", "cannot start the built-in simulator", "err", err)
		return nil, err
	}
	cfg, err := config.ForTarget(baseURL, "", client.DefaultAPI)
	if err != nil {
		stop()
		level.Error(d.logger).Log("msg", "cannot build the simulator config", "err", err)
		return nil, err
	}
	tg := &cfg.Targets[0]
	tg.Name = simulatorTarget
	for i := range tg.Probes {
		tg.Probes[i].Seed = config.DeriveSeed(simulatorTarget, tg.Probes[i].Name)
	}
	d.embedded = simulatorTarget
	d.mgr.SetNote(simulatorTarget, simulatorNote)
	level.Warn(d.logger).Log("msg", "no --target, no --config.file and no ./llmprobe.yml: probing the BUILT-IN SIMULATOR, not a real endpoint", "simulator", baseURL)
	d.fixed(cfg, apply)
	return stop, nil
}

// fixed serves a config built from flags: applied once, never reloaded.
func (d *daemon) fixed(cfg *config.Config, apply func(*config.Config) error) {
	d.load = func() (*config.Config, error) {
		if err := apply(cfg); err != nil {
			return nil, err
		}
		d.safe.Set(cfg)
		return cfg, nil
	}
	d.configYAML = cfg.Redacted
}
