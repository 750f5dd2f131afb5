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
	fmt.Fprintf(w, "sequential looks (%s, %s, budget %s, up to %d looks of %d rounds):\n",
		s.Design, alphaText(s), s.Budget, s.MaxLooks, s.RoundsPerLook)
	for _, l := range s.Looks {
		fmt.Fprintf(w, "  look %d: %d rounds, %d requests per side, z %.3f%s (%s %% intervals), alpha spent %.4g: %s; %s\n",
			l.Look, l.Rounds, l.NPerSide, l.Z, zPassText(l), compare.ConfText(l.Conf), l.Spent, l.Outcome, l.FiguresText())
	}
	fmt.Fprintf(w, "  stopped: %s\n\n", s.Stopped)
}

// writeLooksMarkdown is the looks table of analysis.md.
func writeLooksMarkdown(w io.Writer, s *compare.Sequential) {
	if s == nil {
		return
	}
	fmt.Fprintf(w, "### Looks\n\nSequential rounds (docs/compare.md): %s spending, %s, budget %s, up to %d looks of %d rounds; "+
		"each look's intervals are at its boundaries z (the better end) and z pass (the worse end).\n\n", s.Design, alphaText(s), s.Budget, s.MaxLooks, s.RoundsPerLook)
	fmt.Fprintln(w, "| look | rounds | requests per side | fraction | z | z pass | interval level | alpha spent | verdict | figures |\n|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
	for _, l := range s.Looks {
		zp := l.ZPass
		if !(zp > 0) {
			zp = l.Z
		}
		fmt.Fprintf(w, "| %d | %d | %d | %.3f | %.3f | %.3f | %s %% | %.4g | %s | %s |\n", l.Look, l.Rounds, l.NPerSide, l.Fraction, l.Z, zp,
			compare.ConfText(l.Conf), l.Spent, l.Outcome, cell(l.FiguresText()))
	}
	fmt.Fprintf(w, "\nStopped: %s.\n\n", s.Stopped)
}

// alphaText is the sequential design's error per decision: "alpha 0.025
// (fail), 0.05 (pass)", or "alpha 0.025 per side" for a result.json
// written before the pass decision had its own.
func alphaText(s *compare.Sequential) string {
	if s.PassAlpha > 0 && s.PassAlpha != s.Alpha {
		return fmt.Sprintf("alpha %g (fail), %g (pass)", s.Alpha, s.PassAlpha)
	}
	return fmt.Sprintf("alpha %g per side", s.Alpha)
}

// zPassText is ", z pass 1.897" when the look's pass boundary differs.
func zPassText(l compare.Look) string {
	if l.ZPass > 0 && l.ZPass != l.Z {
		return fmt.Sprintf(", z pass %.3f", l.ZPass)
	}
	return ""
}
