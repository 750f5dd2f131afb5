package report

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// WriteTable prints the sweep's step table to w, columns right-aligned,
// latencies in ms, the knee row marked "<- knee", then a knee line, a max
// goodput line, one line per invalid step and, for an interrupted sweep,
// "incomplete: <reason>".
// It returns the first write error.
func WriteTable(w io.Writer, s Sweep) error {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', tabwriter.AlignRight)
	lvl := "rate"
	if s.closed() {
		lvl = "conc"
	}
	cols := []string{"step", lvl, "achieved", "ok", "fail", "req/s", "goodput", "good%", "TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99", "E2EL p99", "valid", ""}
	// Every cell ends in a tab, so the last column is aligned too.
	fmt.Fprintln(tw, strings.Join(cols, "\t")+"\t")
	knee := kneeStep(s)
	for i, st := range s.Steps {
		good := "-"
		if off := s.offered(st); off > 0 && !math.IsInf(off, 1) {
			good = pct(st.Goodput / off)
		}
		valid := "yes"
		if !st.Valid {
			valid = "NO"
		}
		mark := ""
		if i == knee {
			mark = "<- knee"
		}
		cells := []string{stepName(st), num(st.Level(s.Mode)), num(st.AchievedRate), fmt.Sprint(st.Completed), fmt.Sprint(st.Failed),
			num(st.RequestThroughput), num(st.Goodput), good, num(st.TTFT.P50), p99(st.TTFT), num(st.TPOT.P50), p99(st.TPOT),
			p99(st.E2EL), valid, mark}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	// Drop the padding of the empty last column.
	for _, l := range strings.SplitAfter(buf.String(), "\n") {
		if l == "" {
			continue
		}
		if _, err := io.WriteString(w, strings.TrimRight(l, " \n")+"\n"); err != nil {
			return fmt.Errorf("write table: %w", err)
		}
	}
	k := s.Knee
	var lines []string
	switch {
	case k.Found:
		lines = append(lines, fmt.Sprintf("knee: %s (first failing: %s)", s.levelText(k.Level), s.levelText(k.Upper)))
	case k.Level > 0:
		lines = append(lines, fmt.Sprintf("knee: not found, above %s (every valid level passed)", s.levelText(k.Level)))
	default:
		lines = append(lines, "knee: not found (no valid level passed)")
	}
	lines = append(lines, fmt.Sprintf("max goodput: %s req/s at %s", num(k.MaxGoodput), s.levelText(k.MaxGoodputLevel)))
	for _, st := range s.Steps {
		if !st.Valid {
			lines = append(lines, fmt.Sprintf("step %s invalid: %s", stepName(st), strings.Join(st.Invalid, "; ")))
		}
	}
	if !s.Complete {
		lines = append(lines, "incomplete: "+s.InterruptedReason)
	}
	if _, err := fmt.Fprintln(w, "latencies in ms; * = p99 from fewer than 100 samples\n"+strings.Join(lines, "\n")); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	return nil
}
