package config

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/llmprobe/llmprobe/prober/answer"
	"github.com/llmprobe/llmprobe/prober/client"
)

// A probe's answer_checks: the probe sends an answer-check set (prober/
// answer) every `every` instead of a workload, under its own probe label.
// The set is read and checked at load (a bad file fails the load with its
// line and field), once.

// Bounds and default of answer_checks.every.
const (
	// MinAnswerCheckEvery bounds how often a set runs: a set of ~20
	// checks a few seconds apart never overlaps itself.
	MinAnswerCheckEvery = 10 * time.Second
	// MaxAnswerCheckEvery bounds the pause between two runs of a set.
	MaxAnswerCheckEvery = 24 * time.Hour
	// DefaultAnswerCheckEvery is answer_checks.every when left out.
	DefaultAnswerCheckEvery = 5 * time.Minute
)

// AnswerProbeName is the name of the probe `serve --answer-checks` adds.
const AnswerProbeName = "answers"

// AnswerChecks is a probe's answer_checks key.
type AnswerChecks struct {
	// Set is "builtin" (the embedded set, answer.Builtin) or the path of a
	// JSONL check set, relative to the config file's directory unless
	// absolute. Required.
	Set string `yaml:"set"`
	// Every is the time from the start of one run of the set to the next:
	// between MinAnswerCheckEvery and MaxAnswerCheckEvery, default
	// DefaultAnswerCheckEvery.
	Every time.Duration `yaml:"every"`
	// SHA256 is the file's digest as loaded (empty for builtin), so that a
	// changed file changes the probe's RestartKey.
	SHA256 string `yaml:"-"`

	set      *answer.Set
	everySet bool
}

// UnmarshalYAML decodes strictly and records whether every was set.
func (a *AnswerChecks) UnmarshalYAML(unmarshal func(any) error) error {
	*a = AnswerChecks{}
	type plain AnswerChecks
	if err := unmarshal((*plain)(a)); err != nil {
		return err
	}
	set, _, err := presentKeys(unmarshal)
	a.everySet = set["every"]
	return err
}

// CheckSet returns the set loaded with the config (nil before loading).
func (a *AnswerChecks) CheckSet() *answer.Set { return a.set }

// resolveAnswerChecks fills in every's default.
func (a *AnswerChecks) resolve() {
	if !a.everySet && a.Every == 0 {
		a.Every = DefaultAnswerCheckEvery
	}
}

// probeKeysOfWorkloads are the keys an answer-check probe does not take:
// it sends its set, not a workload.
var probeKeysOfWorkloads = []string{"rate", "arrival", "burstiness", "max_concurrency", "workload", "prompt_nonce"}

// validateAnswerProbe checks a probe with answer_checks: its name, no
// workload keys, the set named and every within bounds.
func (p ProbeConfig) validateAnswerProbe() error {
	var l problems
	l.add("name", validateName(p.Name))
	for _, k := range probeKeysOfWorkloads {
		if p.set != nil && p.set[k] {
			l.add(k, errors.New("an answer_checks probe sends its check set, not a workload: leave "+k+" out"))
		}
	}
	a := p.AnswerChecks
	if strings.TrimSpace(a.Set) == "" {
		l.add("answer_checks.set", fmt.Errorf("required: %s or the path of a JSONL check set", answer.BuiltinName))
	}
	if a.Every < MinAnswerCheckEvery || a.Every > MaxAnswerCheckEvery {
		l.add("answer_checks.every", fmt.Errorf("must be between %v and %v, got %v", MinAnswerCheckEvery, MaxAnswerCheckEvery, a.Every))
	}
	return l.err()
}

// loadAnswerSets loads the check set of every answer_checks probe: builtin,
// or a file relative to dir (the config file's directory) unless absolute.
// A set with messages items needs api: chat.
func (t *TargetConfig) loadAnswerSets(dir string) error {
	var l problems
	for i := range t.Probes {
		a := t.Probes[i].AnswerChecks
		if a == nil {
			continue
		}
		field := fmt.Sprintf("probes[%d].answer_checks.set", i)
		path := a.Set
		if path != answer.BuiltinName {
			path = resolvePath(dir, path)
		}
		s, err := answer.LoadSet(path)
		if err != nil {
			l.add(field, errors.New(strings.TrimPrefix(err.Error(), "answer check set: ")))
			continue
		}
		if !t.api().Conversations {
			for _, it := range s.Items {
				if len(it.Messages) > 0 {
					l.add(field, fmt.Errorf("check %q has messages: they need api: %s", it.ID, client.NamesWith(client.WithConversations, "or")))
					break
				}
			}
		}
		cp := *a
		cp.Set, cp.set = path, s
		if path != answer.BuiltinName {
			cp.SHA256 = s.SHA256
		}
		t.Probes[i].AnswerChecks = &cp
	}
	return l.err()
}

// AddAnswerChecks adds the probe AnswerProbeName running set every
// DefaultAnswerCheckEvery to a resolved target (serve --answer-checks),
// and loads the set (a file relative to the working directory).
func (t *TargetConfig) AddAnswerChecks(set string) error {
	p := ProbeConfig{Name: AnswerProbeName, AnswerChecks: &AnswerChecks{Set: set, Every: DefaultAnswerCheckEvery}}
	p.Seed = DeriveSeed(t.Name, p.Name)
	for _, q := range t.Probes {
		if q.Name == p.Name {
			return fmt.Errorf("the target already has a probe named %q", p.Name)
		}
	}
	if err := p.Validate(); err != nil {
		return err
	}
	t.Probes = append(t.Probes, p)
	if err := t.loadAnswerSets(""); err != nil {
		t.Probes = t.Probes[:len(t.Probes)-1]
		var fe *fieldError
		if errors.As(err, &fe) {
			return fe.Err
		}
		return err
	}
	return nil
}

// MarshalYAML writes an answer-check probe as it is written: its name and
// answer_checks (the workload keys it does not take are left out, so the
// config view reloads as it reads); every other probe as it is.
func (p ProbeConfig) MarshalYAML() (any, error) {
	type plain ProbeConfig
	if p.AnswerChecks == nil {
		return plain(p), nil
	}
	return struct {
		Name         string        `yaml:"name"`
		AnswerChecks *AnswerChecks `yaml:"answer_checks"`
	}{p.Name, p.AnswerChecks}, nil
}
