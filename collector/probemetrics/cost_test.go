package probemetrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestTargetCosts exports one llmprobe_target_cost_per_hour series per
// priced target and replaces them on the next configuration.
func TestTargetCosts(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg)
	m.SetTargetCosts(map[string]float64{"a": 2.5, "b": 0, "c": 12})
	want := `# HELP llmprobe_target_cost_per_hour ` + targetCostHelp() + `
# TYPE llmprobe_target_cost_per_hour gauge
llmprobe_target_cost_per_hour{target="a"} 2.5
llmprobe_target_cost_per_hour{target="c"} 12
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), NameTargetCost); err != nil {
		t.Error(err)
	}
	m.SetTargetCosts(map[string]float64{"c": 3})
	if n, err := testutil.GatherAndCount(reg, NameTargetCost); err != nil || n != 1 {
		t.Errorf("after a reload: %d series (%v), want 1", n, err)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(strings.Replace(strings.Replace(want, "llmprobe_target_cost_per_hour{target=\"a\"} 2.5\n", "", 1), "} 12", "} 3", 1)), NameTargetCost); err != nil {
		t.Error(err)
	}
}

func targetCostHelp() string {
	s := targetCostDesc.String()
	_, after, _ := strings.Cut(s, `help: "`)
	help, _, _ := strings.Cut(after, `"`)
	return help
}
