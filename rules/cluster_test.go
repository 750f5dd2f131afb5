package rules_test

import (
	"slices"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/llmprobe/llmprobe/rules"
)

// TestAggregationsKeepCluster: every aggregation and vector match of the
// shipped rules that keys on target or instance keys on cluster too, so a
// Prometheus, Thanos or Mimir that sees several clusters keeps them apart
// (tests/cluster.yml shows it), and a single Prometheus without the label
// gets the same series as before. A rule that aggregates the cluster away
// fails here.
func TestAggregationsKeepCluster(t *testing.T) {
	p := rules.NewParser()
	needs := func(ls []string) bool {
		return slices.Contains(ls, "target") || slices.Contains(ls, "instance")
	}
	for _, r := range allRules(loadAll(t)) {
		e, err := p.ParseExpr(r.Expr)
		if err != nil {
			t.Fatal(err)
		}
		parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
			switch n := n.(type) {
			case *parser.AggregateExpr:
				if !n.Without && needs(n.Grouping) && !slices.Contains(n.Grouping, "cluster") {
					t.Errorf("%s%s: %s by %v drops the cluster label", r.Record, r.Alert, n.Op, n.Grouping)
				}
			case *parser.BinaryExpr:
				if m := n.VectorMatching; m != nil && m.On && needs(m.MatchingLabels) && !slices.Contains(m.MatchingLabels, "cluster") {
					t.Errorf("%s%s: on %v matches across clusters", r.Record, r.Alert, m.MatchingLabels)
				}
			}
			return nil
		})
	}
}
