package report

import (
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/prober/sweep"
)

// rounds is ladder() run with --rounds 3 over other levels: level 2 is
// steady, 8 varies in TTFT p99, 16 had one valid round, 32 none, and 64
// varies in goodput.
func rounds() *sweep.Result {
	s := ladder()
	s.Fingerprint.Load.Rounds = 3
	s.Rounds = 3
	type round struct {
		valid             bool
		tp, g, ttft, tpot float64
	}
	levels := []struct {
		level  float64
		rounds []round
	}{
		{2, []round{{true, 2, 1.98, 168, 26}, {true, 2.04, 2, 170, 26}, {true, 2.1, 2, 172, 26}}},
		{8, []round{{true, 7.5, 7.1, 120, 39}, {true, 7.7, 7.3, 150, 40}, {true, 7.9, 7.6, 180, 41}}},
		{16, []round{{false, 3, 1, 5000, 90}, {true, 9.7, 9.5, 1400, 60}, {false, 4, 2, 6000, 95}}},
		{32, []round{{false, 10, 9.6, 5800, 88}, {false, 11, 10, 6200, 92}}},
		{64, []round{{true, 10, 4, 0, 0}, {true, 12, 6, 0, 0}}},
	}
	s.Steps, s.Levels = nil, nil
	for _, l := range levels {
		for i, r := range l.rounds {
			st := step(len(s.Steps), l.level, r.g, r.ttft/2, r.tpot/2, 200)
			st.Round = i + 1
			st.Stats.RequestThroughput = r.tp
			if !r.valid {
				invalid(st, sweep.FlagClientSaturated, "send-lag p99 23 ms > 10 ms")
			}
			s.Steps = append(s.Steps, st)
		}
		s.Levels = append(s.Levels, sweep.Level{Level: l.level, Rounds: len(l.rounds)})
	}
	return s
}

func TestAnalysisSpread(t *testing.T) {
	tests := []textCase{
		{
			name:  "rounds",
			sweep: rounds,
			want: []string{
				"## Spread over rounds\n",
				"| rate (req/s) | rounds | req/s | spread | goodput | spread | TTFT p99 | spread | TPOT p99 | spread |\n",
				"| 2 | 3 | 2 / 2.04 / 2.1 | 4.9% | 1.98 / 2 / 2 | 1% | 168 / 170 / 172 | 2.4% | 26 / 26 / 26 | 0% |\n",
				"| 8 | 3 | 7.5 / 7.7 / 7.9 | 5.2% | 7.1 / 7.3 / 7.6 | 6.8% | 120 / 150 / 180 | 40% | 39 / 40 / 41 | 5% |\n",
				"| 16 | 1 of 3 valid | - | - | - | - | - | - | - | - |\n",
				"| 32 | 2, none valid | 10 / 10.5 / 11 | 9.5% | 9.6 / 9.8 / 10 | 4.1% | 5800 / 6000 / 6200 | 6.7% | 88 / 90 / 92 | 4.4% |\n",
				"| 64 | 2 | 10 / 11 / 12 | 18.2% | 4 / 5 / 6 | 40% | 0 / 0 / 0 | - | 0 / 0 / 0 | - |\n",
				"**8 req/s is not reproducible at this step length**: over 3 rounds its TTFT p99 ranged over 120–180 ms (spread 40%). ",
				"At 16 req/s only 1 of 3 rounds was valid, so the level has no spread.",
				"**64 req/s is not reproducible at this step length**: over 2 rounds its goodput ranged over 4–6 req/s (spread 40%). ",
			},
			notWant: []string{"**2 req/s is not", "**32 req/s is not", "stayed within"},
		},
		{
			name: "all steady",
			sweep: func() *sweep.Result {
				s := rounds()
				s.Levels = s.Levels[:1]
				return s
			},
			want:    []string{"## Spread over rounds", "Every level's TTFT p99 and goodput stayed within 10% over its rounds."},
			notWant: []string{"not reproducible at this step length**"},
		},
		{
			name: "closed loop",
			sweep: func() *sweep.Result {
				s := closedRounds()
				s.Levels = s.Levels[1:2]
				return s
			},
			want: []string{"| concurrency | rounds |", "**concurrency 8 is not reproducible at this step length**"},
		},
		{
			name:    "one round",
			sweep:   ladder,
			notWant: []string{"Spread over rounds", "reproducible"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := string(Analysis(tc.sweep()))
			checkText(t, "analysis.md", out, section(out, "## Spread over rounds"), tc.want, tc.notWant)
			if i := strings.Index(out, "## Spread over rounds"); i >= 0 &&
				(i < strings.Index(out, "## Steps") || i > strings.Index(out, "## Knee and capacity")) {
				t.Error("the spread section is not between Steps and Knee and capacity")
			}
		})
	}
}

// section returns md's section that starts with heading, for failure
// messages.
func section(md, heading string) string {
	i := strings.Index(md, heading)
	if i < 0 {
		return md
	}
	rest := md[i+len(heading):]
	if j := strings.Index(rest, "\n## "); j >= 0 {
		rest = rest[:j]
	}
	return heading + rest
}

func TestWriteTableSpread(t *testing.T) {
	tests := []textCase{
		{
			name:  "rounds",
			sweep: rounds,
			want: []string{
				"\nrate 2: 3 rounds, goodput 1.98–2 req/s (spread 1%), TTFT p99 168–172 ms (spread 2.4%)\n",
				"\nrate 8: 3 rounds, goodput 7.1–7.6 req/s (spread 6.8%), TTFT p99 120–180 ms (spread 40%); over 10%: not reproducible at this step length\n",
				"\nrate 16: 3 rounds, 1 valid: no spread\n",
				"\nrate 32: 2 rounds, none valid, goodput 9.6–10 req/s (spread 4.1%), TTFT p99 5800–6200 ms (spread 6.7%)\n",
				"\nrate 64: 2 rounds, goodput 4–6 req/s (spread 40%), TTFT p99 0–0 ms (spread -); over 10%: not reproducible at this step length\n",
			},
		},
		{
			name:  "closed loop",
			sweep: closedRounds,
			want:  []string{"\nconcurrency 2: 3 rounds, goodput"},
		},
		{name: "one round", sweep: ladder, notWant: []string{"rounds", "spread"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.sweep()
			out := tableText(t, s)
			checkText(t, "table", out, out, tc.want, tc.notWant)
			// The spread lines come after the step rows.
			rows := strings.Split(out, "\n")[:len(s.Steps)+1]
			for _, r := range rows {
				if strings.Contains(r, "spread") {
					t.Errorf("spread inside the step rows: %q", r)
				}
			}
		})
	}
}

// closedRounds is rounds() in closed loop: the levels are concurrencies.
func closedRounds() *sweep.Result {
	s := rounds()
	s.Mode = sweep.ModeClosed
	for _, st := range s.Steps {
		st.Mode, st.Concurrency = sweep.ModeClosed, int(st.Level)
	}
	return s
}
