package archtest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/common/model"

	"github.com/llmprobe/llmprobe/prober/config"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// docDefault returns the default cell of key's row in the table under
// heading of doc (the section runs to the next heading), or "" when there
// is none.
func docDefault(doc, heading, key string) string {
	i := strings.Index(doc, "\n"+heading+"\n")
	if i < 0 {
		return ""
	}
	sec := doc[i+len(heading)+2:]
	if j := regexp.MustCompile(`\n#{1,6} `).FindStringIndex(sec); j != nil {
		sec = sec[:j[0]]
	}
	for _, line := range strings.Split(sec, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) > 3 && strings.TrimSpace(cells[1]) == "`"+key+"`" {
			return strings.Trim(strings.TrimSpace(cells[2]), "`")
		}
	}
	return ""
}

// TestConfigDefaultsDoc holds docs/configuration.md's tables of defaults to
// prober/config's Default… values: a default changed in the code and not in
// the table (or the other way round) fails here (issue 35 Deliver 7: cited
// defaults equal the code's).
func TestConfigDefaultsDoc(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	dur := func(d interface{ Nanoseconds() int64 }) string { return model.Duration(d.Nanoseconds()).String() }
	g, tg, p := config.DefaultGlobalConfig, config.DefaultTargetConfig, config.DefaultProbeConfig
	in, out := workload.DefaultSpec().InputTokens, workload.DefaultSpec().OutputTokens
	for _, c := range []struct{ heading, key, want string }{
		{"## `global`", "timeout", dur(g.Timeout)},
		{"## `global`", "ttft_timeout", dur(g.TTFTTimeout)},
		{"## `global`", "stall_timeout", dur(g.StallTimeout)},
		{"## `global`", "goodput_objective", fmt.Sprint(g.GoodputObjective)},
		{"## `global`", "max_rate", fmt.Sprint(g.MaxRate)},
		{"## `targets[]`", "api", tg.API},
		{"## `targets[]`", "max_body_bytes", tg.MaxBodyBytes.String()},
		{"## `discovery[]`", "max_targets", fmt.Sprint(config.DefaultDiscoveryMaxTargets)},
		{"## `targets[].probes[]`", "arrival", p.Arrival},
		{"## `targets[].probes[]`", "burstiness", fmt.Sprint(p.Burstiness)},
		{"## `targets[].probes[]`", "max_concurrency", fmt.Sprintf("%d × ceil(rate)`, at least %d, at most %d",
			config.DefaultConcurrencyPerRate, config.MinDefaultConcurrency, config.MaxDefaultConcurrency)},
		{"## `targets[].probes[]`", "workload", fmt.Sprintf("%d in, %d out", in.Value, out.Value)},
		{"### `workload`", "input_tokens", fmt.Sprintf("{dist: %s, value: %d}", in.Dist, in.Value)},
		{"### `workload`", "output_tokens", fmt.Sprintf("{dist: %s, value: %d}", out.Dist, out.Value)},
		{"## Tracing", "protocol", config.TracingProtocolHTTP},
	} {
		if got := docDefault(doc, c.heading, c.key); got != c.want {
			t.Errorf("docs/configuration.md %s: %s's default is %q, the code's %q", c.heading, c.key, got, c.want)
		}
	}
	// Defaults stated in a row's prose.
	for _, want := range []string{
		fmt.Sprintf("`every` defaults to `%s`", dur(config.DefaultAnswerCheckEvery)),
		fmt.Sprintf("`retention` (`count`, default %d", config.DefaultSweepKeep),
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("docs/configuration.md does not say %s (the code's default)", want)
		}
	}
}
