package main

import (
	"fmt"
	"strings"

	"github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/slo"
)

// targetConfig builds the config of `serve --target URL`: the default probe
// of config.ForTarget (named after the URL's host, port and path), renamed
// by --target.name and judged against --slo. The error's text starts with
// the flag it is about.
func targetConfig(f *serveFlags) (*config.Config, error) {
	cfg, err := config.ForTarget(f.target, f.model, f.api)
	if err != nil {
		return nil, fmt.Errorf("--target: %w", err)
	}
	tg := &cfg.Targets[0]
	if f.targetName != "" {
		tg.Name = f.targetName
		for i := range tg.Probes { // the seeds follow the name, as in a config file
			tg.Probes[i].Seed = config.DeriveSeed(tg.Name, tg.Probes[i].Name)
		}
		if err := tg.Validate(); err != nil {
			return nil, fmt.Errorf("--target.name: %w", err)
		}
	}
	s, err := parseServeSLO(f.slo, f.sloArgs)
	if err != nil {
		return nil, err
	}
	for _, th := range s.Thresholds() {
		if th.Value > tg.Timeout {
			return nil, fmt.Errorf("--slo: %s must be <= the request timeout (%v), got %v", th.Name, tg.Timeout, th.Value)
		}
	}
	tg.SLO = s
	return cfg, nil
}

// parseServeSLO parses --slo (vllm bench serve's --goodput syntax, as the
// sweep's --goodput): pairs after one flag, in one quoted value, or the
// flag repeated. No --slo is the zero SLO.
func parseServeSLO(flags, args []string) (slo.SLO, error) {
	if len(args) > 0 && len(flags) == 0 {
		return slo.SLO{}, fmt.Errorf("unexpected argument %q: serve takes no arguments (KEY:VALUE pairs follow --slo; commands are listed by --help)", args[0])
	}
	if len(flags) == 0 {
		return slo.SLO{}, nil
	}
	s, err := slo.ParseGoodput(append(append([]string{}, flags...), args...))
	if err != nil {
		return slo.SLO{}, fmt.Errorf("--slo: %w", err)
	}
	return s, nil
}

// checkTargetOnlyFlags refuses --slo and --target.name (and stray
// arguments) without --target: a config file sets slo: and name: itself.
func checkTargetOnlyFlags(f *serveFlags, src configSource) error {
	if src == sourceTarget {
		return nil
	}
	var set []string
	if len(f.slo) > 0 {
		set = append(set, "--slo")
	}
	if f.targetName != "" {
		set = append(set, "--target.name")
	}
	if len(set) > 0 {
		return fmt.Errorf("%s applies to --target only (a config file sets slo: and name: per target)", strings.Join(set, " and "))
	}
	if len(f.sloArgs) > 0 {
		_, err := parseServeSLO(nil, f.sloArgs)
		return err
	}
	return nil
}
