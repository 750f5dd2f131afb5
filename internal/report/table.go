package report

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/llmprobe/llmprobe/prober/sweep"
)

// keepUp formats a step's keep-up ratio, capped at 100 % ("-" for a burst,
// which has no offered rate).
func keepUp(st *sweep.Step) string {
	if isBurst(st) {
		return "-"
	}
	return pct(math.Min(st.Stats.GoodputRatio, 1))
}

// p50 formats a median ("-" without samples).
func p50(x sweep.Latency) string {
	if x.N == 0 {
		return "-"
	}
	return num(x.P50)
}

// bracketText states a knee's bracket: "between 5.7 pass and 6.5 fail".
func bracketText(k sweep.Knee) string {
	return fmt.Sprintf("between %s pass and %s fail", num(k.Low), num(k.Upper))
}

// kneeLine is the knee in one line, after "knee: ".
func kneeLine(res *sweep.Result) string {
	k := res.Knee
	switch {
	case k.Found:
		return fmt.Sprintf("%s, %s", levelText(res, k.Level), bracketText(k))
	case k.Low > 0 && k.Upper > 0:
		return fmt.Sprintf("not found; %s (%s)", bracketText(k), k.Reason)
	case k.Low > 0 && k.Upper == 0 && len(tooShortAbove(res, k.Low)) > 0:
		return fmt.Sprintf("not found; at least %s (%s)", levelText(res, k.Low), shortPhrase(res, tooShortAbove(res, k.Low)))
	case k.Low > 0:
		if inv := invalidAbove(res, k.Low); len(inv) > 0 {
			return fmt.Sprintf("not found; at least %s (every valid level passed; %s invalid)", levelText(res, k.Low), levelList(res, inv))
		}
		return fmt.Sprintf("not found, above %s (every level tried passed)", levelText(res, k.Low))
	case !hasValid(res) && clientOnlyFlags(res):
		return fmt.Sprintf("not found: the client is the limit: it could not keep its own schedule on this host at any level tried, down to %s (every step flagged %s); measure from a quieter host, or shard the sweep",
			levelText(res, lowestLevel(res)), strings.Join(clientFlagsSeen(res), " or "))
	case !hasValid(res):
		return "not found (no valid level)"
	}
	short := tooShortAbove(res, 0)
	switch {
	case len(short) > 0 && k.Upper == 0:
		return fmt.Sprintf("not found (%s; run longer steps)", shortPhrase(res, short))
	case len(short) > 0 && short[0] < k.Upper:
		return fmt.Sprintf("not found; below %s (the lower %s)", levelText(res, k.Upper), shortPhrase(res, slices.DeleteFunc(short, func(l float64) bool { return l > k.Upper })))
	}
	return "not found (no valid level passed)"
}

// WriteTable prints the sweep's step table to w, columns right-aligned,
// latencies in ms, the knee row marked "<- knee", then a knee line, a max
// goodput line, with --rounds one spread line per repeated level (see
// sweep.Result.RoundSpread), one line per invalid step and, for an
// interrupted sweep, "incomplete: <reason>". It returns the first write
// error.
func WriteTable(w io.Writer, res *sweep.Result) error {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', tabwriter.AlignRight)
	lvl := "rate"
	if closed(res) {
		lvl = "conc"
	}
	cols := []string{"step", lvl, "achieved", "ok", "fail", "req/s", "goodput", "keep-up"}
	if queued(res) {
		cols = append(cols, "queue p50", "queue p99")
	}
	cols = append(cols, "TTFT p50", "TTFT p99")
	content := contentTTFT(res)
	if content {
		cols = append(cols, "content p50", "content p99")
	}
	cols = append(cols, "TPOT p50", "TPOT p99", "E2EL p99", "sched p99", "valid", "")
	// Every cell ends in a tab, so the last column is aligned too.
	fmt.Fprintln(tw, strings.Join(cols, "\t")+"\t")
	knee := kneeStep(res)
	for i, st := range res.Steps {
		x := &st.Stats
		valid := "yes"
		if !st.InKnee() {
			valid = "NO"
		}
		mark := ""
		if i == knee {
			mark = "<- knee"
		} else if n := searchNote(st); n != "" {
			mark = "(" + n + ")"
		}
		cells := []string{stepName(st), num(st.Level), num(x.AchievedRate), fmt.Sprint(x.Completed), fmt.Sprint(x.Failed),
			num(x.RequestThroughput), goodputText(res, x.RequestGoodput), keepUp(st)}
		if queued(res) {
			cells = append(cells, p50(x.QueueTime), p99(x.QueueTime))
		}
		cells = append(cells, p50(x.TTFT), p99(x.TTFT))
		if content {
			cells = append(cells, p50(x.TTFTText), p99(x.TTFTText))
		}
		cells = append(cells, p50(x.TPOT), p99(x.TPOT), p99(x.E2EL), p99(x.E2ELFromScheduled), valid, mark)
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
	k := res.Knee
	lines := []string{"knee: " + kneeLine(res)}
	if t := k.Bound.Text(kneeUnit(res)); t != "" {
		lines[0] = t
	}
	if b := res.Background; b != nil && b.Decided && b.KneeTotal > 0 {
		lines = append(lines, fmt.Sprintf("total knee (background sweep): %s req/s of server load, production %s req/s of it (%s)",
			num(b.KneeTotal), num(b.ProductionAtKnee), pct(b.ProductionShare)))
	}
	if t := res.Knee.Interval.Text(kneeUnit(res)); t != "" {
		lines = append(lines, "knee uncertainty: "+t)
	}
	lines = append(lines, costLines(res)...)
	lines = append(lines, energyLines(res)...)
	if hasValid(res) && k.MaxGoodputLevel != 0 {
		if sloSet(res) {
			lines = append(lines, fmt.Sprintf("max goodput: %s req/s at %s", num(k.MaxGoodput), levelText(res, k.MaxGoodputLevel)))
		} else {
			lines = append(lines, fmt.Sprintf("max goodput: %s (no SLO set); max throughput of successful requests %s req/s at %s", noGoodput, num(k.MaxGoodput), levelText(res, k.MaxGoodputLevel)))
		}
	}
	if k.Stop != "" {
		stop := "search stopped early: "
		if res.SearchEnd == sweep.SearchUnmeasurable {
			stop = "search ended below a level it could not measure: "
		}
		lines = append(lines, stop+k.Stop)
	}
	if c := res.ReferenceCapacity; c > 0 && k.Low > 0 && !closed(res) {
		if k.Found {
			lines = append(lines, fmt.Sprintf("simulator capacity (from its parameters): %s req/s; knee = %s of it", num(c), pct(k.Low/c)))
		} else {
			// No knee to compare: only the bound that was measured.
			lines = append(lines, fmt.Sprintf("simulator capacity (from its parameters): %s req/s; no knee found: the highest level that passed is %s of it",
				num(c), pct(k.Low/c)))
		}
	}
	lines = append(lines, spreadLines(res)...)
	lines = append(lines, multiTurnLines(res)...)
	for _, st := range res.Steps {
		if !st.InKnee() {
			lines = append(lines, fmt.Sprintf("step %s invalid: %s", stepName(st), strings.Join(invalidReasons(st), "; ")))
		}
	}
	if !res.Complete {
		lines = append(lines, "incomplete: "+res.InterruptedReason)
	}
	legend := "latencies in ms; * = p99 from fewer than 100 samples; goodput = vLLM's request_goodput"
	if !sloSet(res) {
		legend += " (" + noGoodput + ": no SLO set)"
	}
	legend += "; keep-up = the knee's criterion (>= " + pct(ratio) + " keeps up)"
	if content {
		legend += "; content = TTFT to the first text"
	}
	legend += "; sched = E2EL from the intended send time (coordinated-omission corrected)"
	if _, err := fmt.Fprintln(w, legend+"\n"+strings.Join(lines, "\n")); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	return nil
}

// clientOnlyFlags reports whether every invalid step was flagged by the
// client's own checks alone (client-saturated, client-read-lag).
func clientOnlyFlags(res *sweep.Result) bool {
	n := 0
	for _, st := range res.Steps {
		for _, f := range st.Validity.Flags {
			if f != sweep.FlagClientSaturated && f != sweep.FlagClientReadLag {
				return false
			}
			n++
		}
	}
	return n > 0
}

// clientFlagsSeen lists the client flags the steps raised, in a fixed order.
func clientFlagsSeen(res *sweep.Result) []string {
	var out []string
	for _, f := range []string{sweep.FlagClientSaturated, sweep.FlagClientReadLag} {
		for _, st := range res.Steps {
			if slices.Contains(st.Validity.Flags, f) {
				out = append(out, f)
				break
			}
		}
	}
	return out
}

// lowestLevel is the lowest level any step ran.
func lowestLevel(res *sweep.Result) float64 {
	lo := math.Inf(1)
	for _, st := range res.Steps {
		lo = math.Min(lo, st.Level)
	}
	return lo
}
