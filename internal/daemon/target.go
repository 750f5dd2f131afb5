package daemon

import (
	"errors"
	"fmt"
	"strings"

	"github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/engine"
	"github.com/llmprobe/llmprobe/prober/slo"
)

// Target is `serve --target`: one OpenAI-compatible endpoint probed with
// the default probe, without a config file. Errors name the flag they are
// about.
type Target struct {
	// URL is --target; Name (--target.name), Model, API and Engine
	// (engine.Auto or "": detected) its settings.
	URL, Name, Model, API, Engine string
	// SLO is --slo, in vllm bench serve's --goodput syntax (pairs after one
	// flag, in one quoted value, or the flag repeated); SLOArgs are the
	// pairs that followed the flag as arguments.
	SLO, SLOArgs []string
	// AnswerChecks is --answer-checks: "builtin" or a JSONL check set;
	// when set the target gets a second probe, config.AnswerProbeName,
	// running it every config.DefaultAnswerCheckEvery (docs/quality.md).
	AnswerChecks string
}

// Config builds the config of t: the default probe of config.ForTarget
// (named after the URL's host, port and path), renamed by Name and judged
// against SLO.
func (t Target) Config() (*config.Config, error) {
	cfg, err := config.ForTarget(t.URL, t.Model, t.API)
	if err != nil {
		return nil, fmt.Errorf("--target: %w", err)
	}
	tg := &cfg.Targets[0]
	if t.Name != "" {
		tg.Name = t.Name
		for i := range tg.Probes { // the seeds follow the name, as in a config file
			tg.Probes[i].Seed = config.DeriveSeed(tg.Name, tg.Probes[i].Name)
		}
		if err := tg.Validate(); err != nil {
			return nil, fmt.Errorf("--target.name: %w", err)
		}
	}
	s, err := t.parseSLO()
	if err != nil {
		return nil, err
	}
	for _, th := range s.Thresholds() {
		if th.Value > tg.Timeout {
			return nil, fmt.Errorf("--slo: %s must be <= the request timeout (%v), got %v", th.Name, tg.Timeout, th.Value)
		}
	}
	tg.SLO = s
	if n, err := engine.Parse(t.Engine); err == nil && n != engine.Auto {
		tg.Engine = string(n)
	}
	if t.AnswerChecks != "" {
		if err := tg.AddAnswerChecks(t.AnswerChecks); err != nil {
			return nil, fmt.Errorf("--answer-checks: %w", err)
		}
	}
	return cfg, nil
}

// parseSLO parses SLO and SLOArgs; no --slo is the zero SLO.
func (t Target) parseSLO() (slo.SLO, error) {
	if len(t.SLOArgs) > 0 && len(t.SLO) == 0 {
		return slo.SLO{}, fmt.Errorf("unexpected argument %q: serve takes no arguments (KEY:VALUE pairs follow --slo; commands are listed by --help)", t.SLOArgs[0])
	}
	if len(t.SLO) == 0 {
		return slo.SLO{}, nil
	}
	s, err := slo.ParseGoodput(append(append([]string{}, t.SLO...), t.SLOArgs...))
	if err != nil {
		return slo.SLO{}, fmt.Errorf("--slo: %w", err)
	}
	return s, nil
}

// CheckUnused refuses --slo and --target.name (and stray arguments) of a
// daemon not started with --target: a config file sets slo: and name:
// itself.
func (t Target) CheckUnused() error {
	var set []string
	if len(t.SLO) > 0 {
		set = append(set, "--slo")
	}
	if t.Name != "" {
		set = append(set, "--target.name")
	}
	if t.AnswerChecks != "" && len(set) == 0 {
		return errors.New("--answer-checks applies to --target only (a config file sets answer_checks: per probe, docs/quality.md)")
	}
	if len(set) > 0 {
		return fmt.Errorf("%s applies to --target only (a config file sets slo: and name: per target)", strings.Join(set, " and "))
	}
	if len(t.SLOArgs) > 0 {
		_, err := Target{SLOArgs: t.SLOArgs}.parseSLO()
		return err
	}
	return nil
}
