package config

import (
	"testing"

	"github.com/llmprobe/llmprobe/prober/answer"
)

// TestDiscoveryTemplateAnswerChecks: a discovery template's answer-check
// probe has its set loaded, as a static target's has, and each discovered
// target inherits it (a target without it could not start that probe).
func TestDiscoveryTemplateAnswerChecks(t *testing.T) {
	src := "discovery:\n  - name: a\n    static_configs: [{targets: ['h:1']}]\n    target:\n      probes:\n        - name: answers\n          answer_checks: {set: builtin}\n"
	c, err := Parse([]byte(src), "f.yml")
	if err != nil {
		t.Fatal(err)
	}
	d := c.Discovery[0]
	if a := d.Target.Probes[0].AnswerChecks; a == nil || a.CheckSet() != answer.Builtin() {
		t.Fatalf("template's answer checks: %+v", a)
	}
	tc, err := d.NewTarget("a:h:1", "http://h:1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if a := tc.Probes[0].AnswerChecks; a == nil || a.CheckSet() != answer.Builtin() {
		t.Errorf("discovered target's answer checks: %+v", a)
	}
}
