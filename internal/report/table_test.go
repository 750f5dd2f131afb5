package report

import (
	"regexp"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/prober/sweep"
)

// TestTableNoSuccesses is issue 22 V6: a step without successes printed
// p50 0 but p99 - in the sweep table (and in analysis.md's step table);
// both are now "-".
func TestTableNoSuccesses(t *testing.T) {
	res := ladder()
	st := res.Steps[0]
	st.Stats.Completed, st.Stats.Failed = 0, st.Stats.Requests
	st.Stats.TTFT, st.Stats.TPOT, st.Stats.E2EL, st.Stats.E2ELFromScheduled = sweep.Latency{}, sweep.Latency{}, sweep.Latency{}, sweep.Latency{}
	lines := strings.Split(tableText(t, res), "\n")
	sep := regexp.MustCompile(`\s{2,}`)
	head, row := sep.Split(strings.TrimSpace(lines[0]), -1), sep.Split(strings.TrimSpace(lines[1]), -1)
	if len(row) < len(head) {
		t.Fatalf("row %q has fewer cells than the header %q", lines[1], lines[0])
	}
	for i, col := range head {
		if strings.HasPrefix(col, "TTFT p") || strings.HasPrefix(col, "TPOT p") || col == "E2EL p99" {
			if row[i] != "-" {
				t.Errorf("%s = %q for a step without successes, want -", col, row[i])
			}
		}
	}
	md := strings.Split(string(Analysis(res)), "\n")
	found := false
	for i, l := range md {
		if !strings.Contains(l, "| TTFT p50 |") || i+2 >= len(md) {
			continue
		}
		found = true
		// | step | ... | TTFT p50 | TTFT p99 | TPOT p50 | TPOT p99 | E2EL p99 | sched p99 | valid | notes |
		if r := md[i+2]; !strings.HasPrefix(r, "| "+stepName(st)+" | ") || !strings.Contains(r, "| - | - | - | - | - | - | ") {
			t.Errorf("analysis.md step row without successes: %s", r)
		}
		break
	}
	if !found {
		t.Error("analysis.md has no step table")
	}
}
