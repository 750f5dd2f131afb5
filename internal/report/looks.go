package report

import (
	"fmt"
	"io"

	"github.com/llmprobe/llmprobe/prober/compare"
)

// WriteLooksText prints the looks of a sequential comparison, one line
// each: the requests per side, the boundary, the alpha spent so far, the
// verdict at the look and each figure's state with its interval; then
// why the looks stopped. Nothing for the fixed design (nil).
func WriteLooksText(w io.Writer, s *compare.Sequential) {
	if s == nil {
		return
	}
	fmt.Fprintf(w, "sequential looks (%s, alpha %g per side, budget %s, up to %d looks of %d rounds):\n",
		s.Design, s.Alpha, s.Budget, s.MaxLooks, s.RoundsPerLook)
	for _, l := range s.Looks {
		fmt.Fprintf(w, "  look %d: %d rounds, %d requests per side, z %.3f (%s %% intervals), alpha spent %.4g: %s; %s\n",
			l.Look, l.Rounds, l.NPerSide, l.Z, compare.ConfText(l.Conf), l.Spent, l.Outcome, l.FiguresText())
	}
	fmt.Fprintf(w, "  stopped: %s\n\n", s.Stopped)
}

// writeLooksMarkdown is the looks table of analysis.md.
func writeLooksMarkdown(w io.Writer, s *compare.Sequential) {
	if s == nil {
		return
	}
	fmt.Fprintf(w, "### Looks\n\nSequential rounds (docs/compare.md): %s spending, alpha %g per side, budget %s, up to %d looks of %d rounds; "+
		"each look's intervals are at its boundary z.\n\n", s.Design, s.Alpha, s.Budget, s.MaxLooks, s.RoundsPerLook)
	fmt.Fprintln(w, "| look | rounds | requests per side | fraction | z | interval level | alpha spent | verdict | figures |\n|---:|---:|---:|---:|---:|---:|---:|---|---|")
	for _, l := range s.Looks {
		fmt.Fprintf(w, "| %d | %d | %d | %.3f | %.3f | %s %% | %.4g | %s | %s |\n", l.Look, l.Rounds, l.NPerSide, l.Fraction, l.Z,
			compare.ConfText(l.Conf), l.Spent, l.Outcome, cell(l.FiguresText()))
	}
	fmt.Fprintf(w, "\nStopped: %s.\n\n", s.Stopped)
}
