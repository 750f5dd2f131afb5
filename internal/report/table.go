package report

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// keepUp formats a step's keep-up ratio, capped at 100 % ("-" for a burst,
// which has no offered rate).
func keepUp(st Step) string {
	if math.IsInf(st.Rate, 1) {
		return "-"
	}
	return pct(math.Min(st.KeepUp, 1))
}

// p50 formats a median ("-" without samples).
func p50(x Summary) string {
	if x.N == 0 {
		return "-"
	}
	return num(x.P50)
}

// kneeLine is the knee in one line, after "knee: ".
func kneeLine(s Sweep) string {
	k := s.Knee
	switch {
	case k.Found:
		return fmt.Sprintf("%s (first failing: %s)", s.levelText(k.Level), s.levelText(k.Upper))
	case k.Level > 0:
		if inv := invalidAbove(s, k.Level); len(inv) > 0 {
			return fmt.Sprintf("not found; at least %s (every valid level passed; %s invalid)", s.levelText(k.Level), levelList(s, inv))
		}
		return fmt.Sprintf("not found, above %s (every level tried passed)", s.levelText(k.Level))
	case !s.hasValid():
		return "not found (no valid level)"
	}
	return "not found (no valid level passed)"
}

// WriteTable prints the sweep's step table to w, columns right-aligned,
// latencies in ms, the knee row marked "<- knee", then a knee line, a max
// goodput line, with --rounds one spread line per repeated level (see
// Sweep.Spread), one line per invalid step and, for an interrupted sweep,
// "incomplete: <reason>".
// It returns the first write error.
func WriteTable(w io.Writer, s Sweep) error {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', tabwriter.AlignRight)
	lvl := "rate"
	if s.closed() {
		lvl = "conc"
	}
	cols := []string{"step", lvl, "achieved", "ok", "fail", "req/s", "goodput", "keep-up"}
	if s.queued() {
		cols = append(cols, "queue p50", "queue p99")
	}
	cols = append(cols, "TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99", "E2EL p99", "valid", "")
	// Every cell ends in a tab, so the last column is aligned too.
	fmt.Fprintln(tw, strings.Join(cols, "\t")+"\t")
	knee := kneeStep(s)
	for i, st := range s.Steps {
		valid := "yes"
		if !st.Valid {
			valid = "NO"
		}
		mark := ""
		if i == knee {
			mark = "<- knee"
		}
		cells := []string{stepName(st), num(st.Level(s.Mode)), num(st.AchievedRate), fmt.Sprint(st.Completed), fmt.Sprint(st.Failed),
			num(st.RequestThroughput), num(st.Goodput), keepUp(st)}
		if s.queued() {
			cells = append(cells, p50(st.QueueTime), p99(st.QueueTime))
		}
		cells = append(cells, num(st.TTFT.P50), p99(st.TTFT), num(st.TPOT.P50), p99(st.TPOT), p99(st.E2EL), valid, mark)
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
	lines := []string{"knee: " + kneeLine(s)}
	if s.hasValid() && k.MaxGoodputLevel != 0 {
		lines = append(lines, fmt.Sprintf("max goodput: %s req/s at %s", num(k.MaxGoodput), s.levelText(k.MaxGoodputLevel)))
	}
	if k.Stop != "" {
		lines = append(lines, "search stopped early: "+k.Stop)
	}
	if c := s.ReferenceCapacity; c > 0 && k.Level > 0 && !s.closed() {
		lines = append(lines, fmt.Sprintf("simulator capacity (from its parameters): %s req/s; knee = %s of it", num(c), pct(k.Level/c)))
	}
	lines = append(lines, spreadLines(s)...)
	for _, st := range s.Steps {
		if !st.Valid {
			lines = append(lines, fmt.Sprintf("step %s invalid: %s", stepName(st), strings.Join(st.Invalid, "; ")))
		}
	}
	if !s.Complete {
		lines = append(lines, "incomplete: "+s.InterruptedReason)
	}
	legend := "latencies in ms; * = p99 from fewer than 100 samples; goodput = vLLM's request_goodput; keep-up = the knee's criterion (>= " + pct(s.ratio()) + " keeps up)"
	if _, err := fmt.Fprintln(w, legend+"\n"+strings.Join(lines, "\n")); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	return nil
}
