package config

import (
	"fmt"
	"strings"
	"testing"
)

func TestDiscoveryInvalid(t *testing.T) {
	for _, c := range []struct{ name, src, want string }{
		{"unknown key", "discovery:\n  - name: a\n    static_configs: [{targets: [h:1]}]\n    bogus: 1\n", "f.yml:4: discovery[0].bogus: unknown key"},
		{"unknown sd key", "discovery:\n  - name: a\n    file_sd_configs:\n      - files: [a.json]\n        nope: 1\n", "f.yml:5: discovery[0].file_sd_configs[0].nope: unknown key"},
		{"no mechanism", "discovery:\n  - name: a\n", "f.yml:2: discovery[0]: at least one of static_configs"},
		{"bad sd", "discovery:\n  - name: a\n    dns_sd_configs:\n      - names: [x]\n        type: TXT\n", "f.yml:4: discovery[0].dns_sd_configs[0]: invalid DNS-SD records type TXT"},
		{"base_url", "discovery:\n  - name: a\n    static_configs: [{targets: [h:1]}]\n    target: {base_url: http://x}\n", "f.yml:4: discovery[0].target.base_url: not allowed"},
		{"max_targets", "discovery:\n  - name: a\n    static_configs: [{targets: [h:1]}]\n    max_targets: 5000\n", "f.yml:4: discovery[0].max_targets: must be in 1..1000"},
		{"budget", "discovery:\n  - name: a\n    static_configs: [{targets: [h:1]}]\n    max_targets: 1000\n  - name: b\n    static_configs: [{targets: [h:1]}]\n",
			"f.yml:1: discovery: the entries' max_targets add up to 1100 (a 1000, b 100), more than the 1000 discovered targets all entries may start: each entry's max_targets is reserved for it, lower some (the default is 100)"},
		{"budget by default", "discovery:\n" + manyEntries(11),
			"discovery: the entries' max_targets add up to 1100"},
		{"relabel", "discovery:\n  - name: a\n    static_configs: [{targets: [h:1]}]\n    relabel_configs: [{action: replace}]\n", "f.yml:4: discovery[0].relabel_configs[0]: relabel configuration for replace action requires 'target_label' value"},
		{"dup", "discovery:\n  - name: a\n    static_configs: [{targets: [h:1]}]\n  - name: a\n    static_configs: [{targets: [h:1]}]\n", "f.yml:4: discovery[1].name: duplicate discovery name"},
		{"template rate", "discovery:\n  - name: a\n    static_configs: [{targets: [h:1]}]\n    target:\n      probes: [{name: p, rate: -1}]\n", "f.yml:5: discovery[0].target.probes[0].rate: must be > 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.src), "f.yml")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v\nwant %s", err, c.want)
			}
		})
	}
}

// manyEntries returns n discovery entries named e0..e<n-1>, each with the
// default max_targets.
func manyEntries(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "  - name: e%d\n    static_configs: [{targets: [h:1]}]\n", i)
	}
	return b.String()
}

// TestDiscoveryBudget: entries whose max_targets add up to
// MaxDiscoveredTargets load.
func TestDiscoveryBudget(t *testing.T) {
	if _, err := Parse([]byte("discovery:\n"+manyEntries(10)), "f.yml"); err != nil {
		t.Errorf("10 entries at the default max_targets: %v", err)
	}
	if _, err := Parse([]byte("discovery:\n"+manyEntries(9)+"  - name: big\n    static_configs: [{targets: [h:1]}]\n    max_targets: 101\n"), "f.yml"); err == nil {
		t.Error("max_targets adding up to 1001: loaded")
	}
}

// TestDiscoveryRedacted: the /config page's Redacted hides an http_sd
// URL's credentials and leaves the config itself alone.
func TestDiscoveryRedacted(t *testing.T) {
	c, err := Parse([]byte("discovery:\n  - name: a\n    http_sd_configs: [{url: 'https://sd.example/targets?token=s3cr3t-value'}]\n"), "f.yml")
	if err != nil {
		t.Fatal(err)
	}
	if r := c.Redacted(); strings.Contains(r, "s3cr3t-value") || !strings.Contains(r, "token=<redacted>") {
		t.Errorf("Redacted:\n%s", r)
	}
	if !strings.Contains(c.String(), "s3cr3t-value") {
		t.Error("Redacted changed the config itself")
	}
}
