package report

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

// rounds is ladder() run with --rounds 3: level 2 is steady, 8 varies in
// TTFT p99, 16 had one valid round, 32 none, and 64 varies in goodput.
func rounds() Sweep {
	s := ladder()
	s.Fingerprint.Load.Rounds = 3
	s.Spread = []LevelSpread{
		{Level: 2, Rounds: 3, Used: 3, Valid: true, Throughput: Range{2, 2.04, 2.1}, Goodput: Range{1.98, 2, 2},
			TTFTP99: Range{168, 170, 172}, TPOTP99: Range{26, 26, 26}},
		{Level: 8, Rounds: 3, Used: 3, Valid: true, Throughput: Range{7.5, 7.7, 7.9}, Goodput: Range{7.1, 7.3, 7.6},
			TTFTP99: Range{120, 150, 180}, TPOTP99: Range{39, 40, 41}},
		{Level: 16, Rounds: 3, Used: 1, Valid: true, Throughput: Range{9.7, 9.7, 9.7}, Goodput: Range{9.5, 9.5, 9.5},
			TTFTP99: Range{1400, 1400, 1400}, TPOTP99: Range{60, 60, 60}},
		{Level: 32, Rounds: 2, Used: 2, Valid: false, Throughput: Range{10, 10.5, 11}, Goodput: Range{9.6, 9.8, 10},
			TTFTP99: Range{5800, 6000, 6200}, TPOTP99: Range{88, 90, 92}},
		{Level: 64, Rounds: 2, Used: 2, Valid: true, Throughput: Range{10, 11, 12}, Goodput: Range{4, 5, 6},
			TTFTP99: Range{0, 0, 0}, TPOTP99: Range{0, 0, 0}},
	}
	return s
}

func TestRangeRel(t *testing.T) {
	tests := []struct {
		name string
		r    Range
		want float64
	}{
		{"steady", Range{5, 5, 5}, 0},
		{"spread", Range{120, 150, 180}, 0.4},
		{"zero median", Range{0, 0, 1}, math.NaN()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.r.Rel()
			if math.IsNaN(tc.want) != math.IsNaN(got) || (!math.IsNaN(got) && math.Abs(got-tc.want) > 1e-12) {
				t.Errorf("Rel() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAnalysisSpread(t *testing.T) {
	tests := []struct {
		name    string
		sweep   func() Sweep
		want    []string
		notWant []string
	}{
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
			sweep: func() Sweep {
				s := rounds()
				s.Spread = s.Spread[:1]
				return s
			},
			want:    []string{"## Spread over rounds", "Every level's TTFT p99 and goodput stayed within 10% over its rounds."},
			notWant: []string{"not reproducible at this step length**"},
		},
		{
			name: "closed loop",
			sweep: func() Sweep {
				s := rounds()
				s.Mode = ModeClosed
				s.Spread = s.Spread[1:2]
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
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("analysis.md lacks %q:\n%s", w, section(out, "## Spread over rounds"))
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(out, w) {
					t.Errorf("analysis.md has %q", w)
				}
			}
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
	tests := []struct {
		name    string
		sweep   func() Sweep
		want    []string
		notWant []string
	}{
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
			name: "closed loop",
			sweep: func() Sweep {
				s := rounds()
				s.Mode = ModeClosed
				return s
			},
			want: []string{"\nconcurrency 2: 3 rounds, goodput"},
		},
		{name: "one round", sweep: ladder, notWant: []string{"rounds", "spread"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.sweep()
			var b bytes.Buffer
			if err := WriteTable(&b, s); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("table lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(out, w) {
					t.Errorf("table has %q:\n%s", w, out)
				}
			}
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
