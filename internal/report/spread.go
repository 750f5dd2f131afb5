package report

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/llmprobe/llmprobe/prober/sweep"
)

// spreadName names a level in a terminal line: "rate 8", "rate inf",
// "concurrency 8".
func spreadName(res *sweep.Result, v float64) string {
	if closed(res) {
		return "concurrency " + num(v)
	}
	return "rate " + num(v)
}

// roundsText says how many rounds a level ran and how many its ranges
// are over: "3", "2 of 3 valid", "3, none valid".
func roundsText(l sweep.LevelSpread) string {
	switch {
	case !l.Valid:
		return fmt.Sprintf("%d, none valid", l.Rounds)
	case l.Used < l.Rounds:
		return fmt.Sprintf("%d of %d valid", l.Used, l.Rounds)
	}
	return fmt.Sprint(l.Rounds)
}

// span formats a range as "min–max".
func span(r sweep.Range) string { return num(r.Min) + "–" + num(r.Max) }

// mmm formats a range as "min / median / max".
func mmm(r sweep.Range) string { return num(r.Min) + " / " + num(r.Median) + " / " + num(r.Max) }

// unstable lists the figures of l whose relative spread exceeds
// MaxReproducibleSpread, each as "TTFT p99 ranged over 120–180 ms (spread 40%)".
// Without an SLO the goodput is the throughput of successful requests and
// is named so.
func unstable(res *sweep.Result, l sweep.LevelSpread) []string {
	var out []string
	if l.Used < 2 {
		return nil
	}
	if l.TTFTP99.Rel() > MaxReproducibleSpread {
		out = append(out, fmt.Sprintf("TTFT p99 ranged over %s ms (spread %s)", span(l.TTFTP99), pct(l.TTFTP99.Rel())))
	}
	if l.Goodput.Rel() > MaxReproducibleSpread {
		name := "goodput"
		if !sloSet(res) {
			name = "throughput of successful requests"
		}
		out = append(out, fmt.Sprintf("%s ranged over %s req/s (spread %s)", name, span(l.Goodput), pct(l.Goodput.Rel())))
	}
	return out
}

// writeSpread writes analysis.md's "Spread over rounds" section: a table
// of each repeated level's ranges and one warning per level whose TTFT
// p99 or goodput spread exceeds MaxReproducibleSpread. Nothing without
// spread.
func writeSpread(b *bytes.Buffer, res *sweep.Result) {
	spread := res.RoundSpread()
	if len(spread) == 0 {
		return
	}
	b.WriteString("### Spread over rounds\n\n")
	b.WriteString("Each figure as min / median / max over a level's valid rounds (over every round when none was valid); " +
		"spread is (max − min) / median. Request throughput and goodput in req/s, p99s in ms. A spread above " +
		pct(MaxReproducibleSpread) + " in TTFT p99 or goodput means the level does not reproduce at this step length.\n\n")
	lvl := "rate (req/s)"
	if closed(res) {
		lvl = "concurrency"
	}
	fmt.Fprintf(b, "| %s | rounds | req/s | spread | goodput | spread | TTFT p99 | spread | TPOT p99 | spread |\n", lvl)
	b.WriteString("|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	var notes []string
	for _, l := range spread {
		if l.Used < 2 {
			fmt.Fprintf(b, "| %s | %s | - | - | - | - | - | - | - | - |\n", num(l.Level), roundsText(l))
			notes = append(notes, fmt.Sprintf("At %s only %d of %d rounds was valid, so the level has no spread.", levelText(res, l.Level), l.Used, l.Rounds))
			continue
		}
		cells := []string{num(l.Level), roundsText(l)}
		for i, r := range []sweep.Range{l.Throughput, l.Goodput, l.TTFTP99, l.TPOTP99} {
			if i == 1 && !sloSet(res) {
				cells = append(cells, noGoodput, noGoodput)
				continue
			}
			cells = append(cells, mmm(r), pct(r.Rel()))
		}
		fmt.Fprintf(b, "| %s |\n", strings.Join(cells, " | "))
		if u := unstable(res, l); len(u) > 0 {
			notes = append(notes, fmt.Sprintf("**%s is not reproducible at this step length**: over %d rounds its %s. "+
				"Lengthen the steps (--duration, --num-prompts) or add rounds before trusting this level.",
				levelText(res, l.Level), l.Used, strings.Join(u, " and ")))
		}
	}
	b.WriteString("\n")
	if len(notes) == 0 {
		fmt.Fprintf(b, "Every level's TTFT p99 and goodput stayed within %s over its rounds.\n\n", pct(MaxReproducibleSpread))
		return
	}
	for _, n := range notes {
		b.WriteString(n + "\n\n")
	}
}

// spreadLines are the terminal table's lines for res.RoundSpread(), one per
// level:
// "rate 8: 3 rounds, goodput 7.1–7.6 req/s (spread 6.8%), TTFT p99
// 120–180 ms (spread 40%)", with a warning appended when a spread exceeds
// MaxReproducibleSpread.
func spreadLines(res *sweep.Result) []string {
	var out []string
	for _, l := range res.RoundSpread() {
		rounds := fmt.Sprintf("%d rounds", l.Rounds)
		switch {
		case !l.Valid:
			rounds += ", none valid"
		case l.Used < l.Rounds:
			rounds += fmt.Sprintf(", %d valid", l.Used)
		}
		line := spreadName(res, l.Level) + ": " + rounds
		if l.Used < 2 {
			out = append(out, line+": no spread")
			continue
		}
		if sloSet(res) {
			line += fmt.Sprintf(", goodput %s req/s (spread %s)", span(l.Goodput), pct(l.Goodput.Rel()))
		} else {
			line += fmt.Sprintf(", req/s %s (spread %s)", span(l.Throughput), pct(l.Throughput.Rel()))
		}
		line += fmt.Sprintf(", TTFT p99 %s ms (spread %s)", span(l.TTFTP99), pct(l.TTFTP99.Rel()))
		if len(unstable(res, l)) > 0 {
			line += "; over " + pct(MaxReproducibleSpread) + ": not reproducible at this step length"
		}
		out = append(out, line)
	}
	return out
}
