package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/prober/fingerprint"
	"github.com/llmprobe/llmprobe/prober/stats"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

var t0 = time.Date(2026, 5, 6, 7, 0, 0, 0, time.UTC)

// lat builds a latency summary whose percentiles scale from base.
func lat(n int, base float64) sweep.Latency {
	l := sweep.Latency{
		Summary:     stats.Summary{N: n, Mean: base * 1.1, Median: base, Std: base / 5, P50: base, P90: base * 1.5, P99: base * 2},
		P99Reliable: !stats.P99Unreliable(n),
	}
	if !l.P99Reliable {
		l.P99CI = &stats.CI{Lo: base * 1.8, Hi: base * 2.4}
	}
	return l
}

// known is a recorded figure.
func known(v float64) sweep.Figure { return sweep.Figure{Value: v, Known: true} }

// invalid marks st invalid with one validity flag.
func invalid(st *sweep.Step, flag, reason string) {
	st.Validity.Valid = false
	st.Validity.Flags = append(st.Validity.Flags, flag)
	st.Validity.Reasons = append(st.Validity.Reasons, reason)
}

// step builds an open-loop step (a burst at rate inf) at rate r with
// goodput g and TTFT/TPOT medians ttft/tpot.
func step(i int, r, g, ttft, tpot float64, n int) *sweep.Step {
	mode := sweep.ModeOpen
	if math.IsInf(r, 1) {
		mode = sweep.ModeBurst
	}
	return &sweep.Step{
		Index: i, Label: "rate=" + num(r), Level: r, Round: 1, Attempt: 1, Mode: mode,
		Start: t0.Add(time.Duration(i) * time.Minute), End: t0.Add(time.Duration(i)*time.Minute + 50*time.Second),
		Stats: sweep.Stats{
			Duration: 50, Requests: n, Completed: n, AchievedRate: r * 0.99,
			RequestThroughput: g * 1.02, RequestGoodput: g, GoodputRatio: g / r, OutputThroughput: g * 128, TotalTokenThroughput: g * 640,
			TTFT: lat(n, ttft), TPOT: lat(n, tpot), ITL: lat(n*127, tpot), E2EL: lat(n, ttft+127*tpot), SendLag: lat(n, 0.2),
			TTFTText: lat(n, ttft*1.05), E2ELFromScheduled: lat(n, ttft+127*tpot+1),
			InputTokens:           sweep.TokenDist{N: n, Mean: 512, P10: 410, P50: 512, P90: 600, P99: 612, Max: 614},
			RequestedOutputTokens: sweep.TokenDist{N: n, Mean: 128, P10: 128, P50: 128, P90: 128, P99: 128, Max: 128},
			OutputTokens:          sweep.TokenDist{N: n, Mean: 128, P10: 128, P50: 128, P90: 128, P99: 128, Max: 128},
			FinishReasons:         map[string]int{"length": n},
			SLOChecks: []sweep.SLOCheck{
				{Metric: "ttft", ThresholdMS: 800, P99MS: ttft * 2, Held: ttft*2 <= 800, Reliable: n >= 100},
				{Metric: "tpot", ThresholdMS: 50, P99MS: tpot * 2, Held: tpot*2 <= 50, Reliable: n >= 100},
			},
		},
		Validity: sweep.Validity{Valid: true, Flags: []string{}, Reasons: []string{}, Idle: sweep.IdleProof{Status: sweep.IdleProven, Waited: 0.2}},
		Server: sweep.ServerStats{Status: sweep.ServerRecorded, PromptTokens: known(512 * float64(n)), GenerationTokens: known(128 * float64(n)),
			Preemptions: known(0), PrefixCacheHitRate: known(0.42), MaxRunning: known(r * 2), MaxWaiting: known(0), MaxKVCacheUsage: known(0.31),
			TTFT: sweep.ServerLatency{P50MS: known(ttft * 0.9), P90MS: known(ttft * 1.3), P99MS: known(ttft * 1.8)}, ITL: sweep.ServerLatency{P99MS: known(tpot * 2)},
			E2EL: sweep.ServerLatency{P99MS: known(ttft + 250*tpot)}, ClientMinusServerTTFTMeanMS: known(ttft * 0.1)},
	}
}

// closedLoop turns res into a closed-loop sweep whose levels are the
// concurrencies 1, 2, 4, ... in step order.
func closedLoop(res *sweep.Result) *sweep.Result {
	res.Mode = sweep.ModeClosed
	for i, st := range res.Steps {
		st.Mode, st.Concurrency, st.Level = sweep.ModeClosed, 1<<i, float64(int(1)<<i)
	}
	return res
}

// ladder is an open-loop sweep with its knee at 8 req/s: 16 breaks the
// TTFT SLO and goodput, 32 is invalid (client-saturated).
func ladder() *sweep.Result {
	fp := fingerprint.New([]string{"llmprobe", "sweep", "--rates", "1,2,4,8,16,32", "--api-key=sk-123"}, t0)
	fp.Target.URL = "http://127.0.0.1:8000"
	fp.Target.API = "completions"
	fp.Target.Model = "llama"
	fp.Target.ServedModel = "llama"
	fp.Target.MaxModelLen = fingerprint.Known(4096)
	fp.Target.EngineConfig = fingerprint.Labels{"block_size": "16", "enable_prefix_caching": "True"}
	fp.Load = fingerprint.Load{Mode: sweep.ModeOpen, Arrival: "poisson", Burstiness: 1, Rates: []string{"1", "2", "4", "8", "16", "32"}, NumPrompts: 200, Warmups: 4, Seed: 7}
	fp.End = t0.Add(10 * time.Minute)
	s16 := step(4, 16, 9.5, 700, 30, 200)
	s16.Stats.Failed = 12
	s16.Stats.FailedByClass = map[string]int{"http_5xx": 10, "timeout": 2}
	s32 := step(5, 32, 9.8, 3000, 45, 60)
	invalid(s32, sweep.FlagClientSaturated, "send-lag p99 23 ms > 10 ms")
	s32.Validity.Idle = sweep.IdleProof{Status: sweep.IdleNotRecorded, Reason: "metrics scrape failed"}
	s32.Server = sweep.ServerStats{Status: fingerprint.NotRecorded, Reason: "scrape of http://127.0.0.1:8000/metrics failed: connection refused"}
	return &sweep.Result{
		Name:        "ladder",
		Fingerprint: fp,
		Mode:        sweep.ModeOpen,
		SLO:         map[string]float64{"ttft": 800, "tpot": 50},
		Steps: []*sweep.Step{
			step(0, 1, 1, 80, 12, 200), step(1, 2, 2, 85, 13, 200), step(2, 4, 3.96, 95, 15, 200),
			step(3, 8, 7.8, 160, 20, 200), s16, s32,
		},
		Knee:     sweep.Knee{Found: true, Level: 8, Low: 8, Upper: 16, MaxGoodput: 9.5, MaxGoodputLevel: 16, Reason: "highest passing level 8, first failing level 16"},
		Complete: true,
		Rounds:   1,
	}
}

func TestAnalysis(t *testing.T) {
	type check struct {
		name    string
		sweep   func() *sweep.Result
		want    []string
		notWant []string
	}
	tests := []check{
		{
			name:  "knee found",
			sweep: ladder,
			want: []string{
				"# llmprobe sweep: ladder",
				"**Capacity knee: 8 req/s** (between 8 pass and 16 fail).",
				"At 16 req/s it no longer does: TTFT p99 1400 ms > 800 ms; TPOT p99 60 ms > 50 ms; keep-up 59.4% (needs 90%; goodput 9.5 req/s)",
				"The highest goodput measured (vLLM's request_goodput) was **9.5 req/s**, at 16 req/s.",
				"1 of 6 steps are invalid",
				"| 3 | 8 | 7.92 | 200 | 0 | 7.96 | 7.8 | 97.5% | 998 | 160 | 320 | 20 | 40 | 5400 | 5402 | yes | **knee** |",
				"| E2EL p99 | E2EL p99 from intended send | valid |",
				"### E2EL from the intended send time (coordinated-omission corrected)\n\n| step | n | mean | median | std | p50 | p90 | p99 |\n|---|--:|--:|--:|--:|--:|--:|--:|\n| 0 | 200 | 1766 | 1605 |",
				"| 4 | 16 |",
				"| 5 | 32 |",
				"6000*",
				"| 5 | **no** | client-saturated: send-lag p99 23 ms > 10 ms |",
				"(95% CI 5400–7200)",
				"| 4 | 12 | 5.7% | http_5xx: 10, timeout: 2 |",
				"410 / 512 / 600 / 612 / 614",
				"length: 200",
				"block_size=16, enable_prefix_caching=True",
				"max_model_len 4096",
				"'--api-key=<redacted>'",
				"![goodput, throughput and keep-up vs offered rate](goodput.svg)",
				"![TTFT and TPOT percentiles vs offered rate](latency.svg)",
				"| 5 | not-recorded |",
				"step 5: scrape of http://127.0.0.1:8000/metrics failed: connection refused",
				"42%",
				"`not-recorded` means",
				"- `target.server_version`: from GET /version (vLLM only)",
				"- `target.root`: from GET /v1/models",
				"Idle proof not recorded before step(s) 5",
				"TTFT <= 800 ms, TPOT <= 50 ms",
			},
			// Content TTFT within 10 % of TTFT: not shown.
			notWant: []string{"sk-123", "did not complete", "No knee", "content TTFT", "Content TTFT", "—"},
		},
		{
			name: "every level passes",
			sweep: func() *sweep.Result {
				s := ladder()
				s.Steps = s.Steps[:4]
				s.Knee = sweep.Knee{Low: 8, MaxGoodput: 7.8, MaxGoodputLevel: 8, Reason: "every valid level passed; the knee is above 8"}
				return s
			},
			want:    []string{"**No knee found: the endpoint kept up at every level tried, up to 8 req/s.**", "- Knee: not found, above 8 req/s (every level tried passed)"},
			notWant: []string{"**knee**", "Capacity knee"},
		},
		{
			name: "higher levels invalid: the verdict names them and stops early",
			sweep: func() *sweep.Result {
				s := ladder()
				s.Steps = append(s.Steps[:4], s.Steps[5])
				rerun := *s.Steps[4]
				rerun.Index, rerun.Attempt = 5, 2
				s.Steps = append(s.Steps, &rerun)
				s.Knee = sweep.Knee{Low: 8, MaxGoodput: 7.8, MaxGoodputLevel: 8, Reason: "every valid level passed; higher levels were invalid and excluded, so the knee is at least 8",
					Stop: "rate 32 req/s was invalid in all 2 attempts (client-saturated: send-lag p99 23 ms > 10 ms); the search stopped there"}
				return s
			},
			want: []string{"**No knee found.** Every valid level kept up, up to 8 req/s; the higher level 32 req/s (client-saturated: send-lag p99 23 ms > 10 ms) was invalid",
				"The adaptive search stopped early: rate 32 req/s was invalid in all 2 attempts",
				"- Knee: not found; at least 8 req/s (every valid level passed; 32 req/s (client-saturated: send-lag p99 23 ms > 10 ms) invalid)",
				"| 5 (rerun 1) | 32 |"},
			notWant: []string{"kept up at every level tried"},
		},
		{
			name: "no level passes",
			sweep: func() *sweep.Result {
				s := ladder()
				s.Steps = s.Steps[4:5]
				s.Knee = sweep.Knee{Upper: 16, MaxGoodput: 9.5, MaxGoodputLevel: 16, Reason: "no level passed; the knee is below 16"}
				return s
			},
			want: []string{"**No knee found: no level tried kept up**, not even 16 req/s (TTFT p99 1400 ms > 800 ms; TPOT p99 60 ms > 50 ms; keep-up 59.4%"},
		},
		{
			name: "bracketed but not confirmed: no knee stated",
			sweep: func() *sweep.Result {
				s := ladder()
				s.Knee = sweep.Knee{Low: 8, Upper: 16, MaxGoodput: 9.5, MaxGoodputLevel: 16, Reason: "8 passed and 16 failed, but 8 was not confirmed by a second step, so the knee is not stated"}
				s.Steps[3].Search = &sweep.StepVerdict{Verdict: sweep.VerdictTooShort, Why: "its SLO p99 rests on 31 samples; rerun with 110 requests"}
				return s
			},
			want: []string{"**No knee stated** (between 8 pass and 16 fail): 8 passed and 16 failed, but 8 was not confirmed",
				"- Knee: not found; between 8 pass and 16 fail (8 passed and 16 failed",
				"| yes | too short to decide: rerun longer |"},
			notWant: []string{"**knee**", "Capacity knee"},
		},
		{
			name: "no SLO: no goodput",
			sweep: func() *sweep.Result {
				s := ladder()
				s.SLO = nil
				for _, st := range s.Steps {
					st.Stats.SLOChecks = nil
				}
				return s
			},
			want: []string{"| 3 | 8 | 7.92 | 200 | 0 | 7.96 | — | 97.5% |",
				"No SLO was set (--goodput), so there is no goodput; the highest throughput of successful requests was **9.5 req/s**, at 16 req/s.",
				"- Max goodput: — (no SLO set); max throughput of successful requests **9.5 req/s** at 16 req/s.",
				"keep-up 59.4% (needs 90%; served 9.69 req/s)"},
			notWant: []string{"The highest goodput measured", "| 7.8 |"},
		},
		{
			name: "content TTFT more than 10 % after the TTFT is shown beside it",
			sweep: func() *sweep.Result {
				s := ladder()
				s.Steps[2].Stats.TTFTText = lat(200, 95*1.2) // chat: the role chunk came first
				return s
			},
			want: []string{"| TTFT p50 | TTFT p99 | content TTFT p50 | content TTFT p99 | TPOT p50 |",
				"| 2 | 4 | 3.96 | 200 | 0 | 4.04 | 3.96 | 99% | 507 | 95 | 190 | 114 | 228 | 15 |",
				"### Content TTFT (to the first text)", "Content TTFT is the time to the first event with text"},
		},
		{
			name: "every step invalid",
			sweep: func() *sweep.Result {
				s := ladder()
				s.Steps = s.Steps[5:]
				s.Knee = sweep.Knee{Reason: "no valid step: the knee cannot be decided"}
				return s
			},
			want: []string{"**No knee can be decided: every step is invalid**"},
		},
		{
			name: "interrupted",
			sweep: func() *sweep.Result {
				s := ladder()
				s.Complete, s.InterruptedReason = false, "SIGINT during step 5"
				return s
			},
			want: []string{"**This sweep did not complete** (SIGINT during step 5).", "| complete | no: SIGINT during step 5 |"},
		},
		{
			name: "no steps",
			sweep: func() *sweep.Result {
				return &sweep.Result{Name: "empty", Fingerprint: fingerprint.New(nil, t0), Complete: true}
			},
			want: []string{"No step ran, so there is nothing to conclude.", "No step ran.", "| command | not-recorded |"},
		},
		{
			name: "server without metrics",
			sweep: func() *sweep.Result {
				s := ladder()
				for _, st := range s.Steps {
					st.Server = sweep.ServerStats{Status: fingerprint.NotRecorded, Reason: "GET http://127.0.0.1:8000/metrics: 404"}
					st.Validity.Idle = sweep.IdleProof{Status: sweep.IdleNotRecorded, Reason: "no vllm:num_requests_* metrics"}
				}
				return s
			},
			want: []string{"**not-recorded**: no step has usable server metrics (GET http://127.0.0.1:8000/metrics: 404)",
				"Idle proof not recorded before step(s) 0, 1, 2, 3, 4, 5"},
		},
		{
			name: "closed loop",
			sweep: func() *sweep.Result {
				s := closedLoop(ladder())
				s.Knee = sweep.Knee{Found: true, Level: 8, Low: 8, Upper: 16, MaxGoodput: 9.5, MaxGoodputLevel: 16}
				return s
			},
			want: []string{"**Capacity knee: concurrency 8** (between 8 pass and 16 fail).", "| step | concurrency |", "vs concurrency](goodput.svg)"},
		},
		{
			name: "burst and notes",
			sweep: func() *sweep.Result {
				s := ladder()
				s.Mode = sweep.ModeBurst
				s.Steps = []*sweep.Step{step(0, math.Inf(1), 5, 2000, 30, 200)}
				s.Knee = sweep.Knee{}
				s.Notes = []string{"rate inf is a burst, not an open loop"}
				return s
			},
			want:    []string{"> Note: rate inf is a burst, not an open loop", "| 0 | inf |", "burst |", "Burst steps (rate inf)"},
			notWant: []string{"highest goodput", "Max goodput", "max goodput"},
		},
		{
			name: "rate with max concurrency shows client queue time",
			sweep: func() *sweep.Result {
				s := ladder()
				s.MaxConcurrency = 4
				for _, st := range s.Steps {
					st.Stats.QueueTime = lat(200, 7)
				}
				return s
			},
			want: []string{"| client queue p50 | client queue p99 |", "| 7 | 14 |", "### Client queue time (wait for a --max-concurrency slot)"},
		},
		{
			name: "server quantiles in the first bucket are upper bounds; client - server TTFT is the mean difference",
			sweep: func() *sweep.Result {
				s := ladder()
				// Every observation in the first bucket (le 300 ms): the
				// quantiles are upper bounds.
				s.Steps[0].Server.QueueTime = sweep.ServerLatency{Count: known(40), MeanMS: known(0.02), P50MS: known(150), P90MS: known(270),
					P99MS: known(297), FirstBucketLEMS: known(300), FirstBucketCount: known(40)}
				return s
			},
			want: []string{"| 0.02 / ≤ 300 |", "client − server TTFT (mean)", "| 8 | not-recorded |\n"},
		},
		{
			name: "TTFT split: network and server queue shares of the client's mean TTFT",
			sweep: func() *sweep.Result {
				s := ladder()
				// Client mean 80 ms = server mean 72 + difference 8; queue 20.
				s.Steps[0].Server.TTFT.MeanMS = known(72)
				s.Steps[0].Server.QueueTime.MeanMS = known(20)
				return s
			},
			want: []string{"TTFT split: network / server queue |", "| 8 | 10% / 25% |\n"},
		},
		{
			name: "latency-bound knee compared with a known capacity",
			sweep: func() *sweep.Result {
				s := ladder()
				s.ReferenceCapacity = 8.5
				return s
			},
			want: []string{"The knee is **latency-bound** (TTFT, TPOT p99): the first failing level broke its SLO.",
				"The built-in simulator's capacity for this workload, from its parameters, is 8.5 req/s: the knee is 94.1% of it."},
		},
		{
			name: "throughput-bound knee",
			sweep: func() *sweep.Result {
				s := ladder()
				for i := range s.Steps[4].Stats.SLOChecks {
					s.Steps[4].Stats.SLOChecks[i].Held = true
				}
				return s
			},
			want: []string{"The knee is **throughput-bound**: the first failing level held its SLO p99s but did not keep up"},
		},
		{
			name: "throughput probe",
			sweep: func() *sweep.Result {
				s := ladder()
				s.Probe = &sweep.ThroughputProbe{EstimateReqPerS: 7.9, StartRate: 7.9, Note: "throughput grew by less than 20 % from concurrency 32 to 128",
					Levels: []sweep.ProbeLevel{{Concurrency: 32, Completed: 90, ThroughputReqPerS: 7.5, MeanE2ELMS: 4000, MaxWaiting: known(0)},
						{Concurrency: 128, Completed: 95, ThroughputReqPerS: 7.9, MeanE2ELMS: 15000}}}
				return s
			},
			want: []string{"### Throughput probe", "estimated the capacity at **7.9 req/s** (throughput grew by less than 20 %", "| 128 | 95 | 0 | 7.9 | 15000 | not-recorded |"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := string(Analysis(tc.sweep()))
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("analysis.md lacks %q", w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(got, w) {
					t.Errorf("analysis.md contains %q", w)
				}
			}
			if t.Failed() {
				t.Logf("analysis.md:\n%s", got)
			}
		})
	}
}

// svgTexts checks that b is well-formed XML with an <svg> root and returns
// the character data of its <text> elements.
func svgTexts(t *testing.T, b []byte) []string {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	var texts []string
	var stack []string
	root := ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("svg is not valid XML: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = el.Name.Local
			}
			stack = append(stack, el.Name.Local)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 && stack[len(stack)-1] == "text" {
				texts = append(texts, string(el))
			}
		}
	}
	if root != "svg" || len(stack) != 0 {
		t.Fatalf("root element %q, %d unclosed elements", root, len(stack))
	}
	return texts
}

// trailingZeros matches a number label with needless trailing decimals.
var trailingZeros = regexp.MustCompile(`^-?[0-9]+\.[0-9]*0$`)

func TestSVG(t *testing.T) {
	closed := func() *sweep.Result { return closedLoop(ladder()) }
	tests := []struct {
		name    string
		render  func(*sweep.Result) ([]byte, error)
		sweep   func() *sweep.Result
		want    []string
		notWant []string
	}{
		{"goodput", GoodputSVG, ladder,
			[]string{GoodputTitleRate, "offered rate (req/s)", "goodput (request_goodput)", "request throughput", "offered (y = x)",
				KeepUpTitle, "keeps up at 90%", "keep-up (%)", "knee 8 req/s", "invalid step (excluded)"}, nil},
		{"goodput closed loop", GoodputSVG, closed,
			[]string{GoodputTitleConcurrency, "concurrency", "knee concurrency 8"}, []string{"offered (y = x)"}},
		{"goodput without knee", GoodputSVG, func() *sweep.Result { s := ladder(); s.Knee.Found = false; return s },
			[]string{GoodputTitleRate}, []string{"knee 8 req/s"}},
		{"goodput empty", GoodputSVG, func() *sweep.Result { return &sweep.Result{} }, []string{GoodputTitleRate, "no plottable step"}, nil},
		{"latency", LatencySVG, ladder,
			[]string{TTFTTitle + " vs offered rate", TPOTTitle + " vs offered rate", "p50", "p90", "p99", "SLO 800 ms", "SLO 50 ms", "knee 8 req/s"}, nil},
		{"latency without SLO", LatencySVG, func() *sweep.Result { s := ladder(); s.SLO = nil; return s },
			[]string{TTFTTitle + " vs offered rate"}, []string{"SLO 800 ms"}},
		{"latency empty", LatencySVG, func() *sweep.Result { return &sweep.Result{} }, []string{TTFTTitle, "no plottable step"}, nil},
		{"latency spanning more than two decades is drawn on a log scale", LatencySVG,
			func() *sweep.Result { s := ladder(); s.Steps[0].Stats.TTFT = lat(200, 10); return s },
			[]string{"ms (log scale)", "\n10\n", "\n100\n", "\n1000\n", "\n5000\n"}, nil},
		{"latency within two decades is linear", LatencySVG, func() *sweep.Result { s := ladder(); s.Steps = s.Steps[:4]; return s },
			[]string{TTFTTitle}, []string{"ms (log scale)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := tc.render(tc.sweep())
			if err != nil {
				t.Fatal(err)
			}
			all := svgTexts(t, b)
			texts := strings.Join(all, "\n")
			// Tick labels are compact: "250", "0.5", never "250.00".
			for _, tx := range all {
				if trailingZeros.MatchString(tx) {
					t.Errorf("tick label %q has trailing zeros", tx)
				}
			}
			checkText(t, "svg texts", texts, texts, tc.want, tc.notWant)
		})
	}
}

func TestWriteTable(t *testing.T) {
	tests := []struct {
		name  string
		sweep func() *sweep.Result
		want  []string
	}{
		{"knee", ladder, []string{"knee: 8 req/s, between 8 pass and 16 fail", "max goodput: 9.5 req/s at 16 req/s",
			"step 5 invalid: client-saturated: send-lag p99 23 ms > 10 ms", "6000*"}},
		{"interrupted, no knee", func() *sweep.Result {
			s := ladder()
			s.Knee = sweep.Knee{Low: 16}
			s.Complete, s.InterruptedReason = false, "SIGINT"
			return s
		}, []string{"knee: not found; at least 16 req/s (every valid level passed; 32 req/s (client-saturated: send-lag p99 23 ms > 10 ms) invalid)", "incomplete: SIGINT"}},
		{"burst only: no max goodput line", func() *sweep.Result {
			s := ladder()
			s.Mode = sweep.ModeBurst
			st := step(0, math.Inf(1), 5, 2000, 30, 200)
			st.Validity.Valid = false
			s.Steps = []*sweep.Step{st}
			s.Knee = sweep.Knee{Reason: "no valid step: the knee cannot be decided"}
			return s
		}, []string{"knee: not found (no valid level)"}},
		{"no SLO: no goodput", func() *sweep.Result {
			s := ladder()
			s.SLO = nil
			return s
		}, []string{"   —  ", "max goodput: — (no SLO set); max throughput of successful requests 9.5 req/s at 16 req/s", "(—: no SLO set)",
			"sched p99", "sched = E2EL from the intended send time"}},
		{"content TTFT", func() *sweep.Result {
			s := ladder()
			s.Steps[0].Stats.TTFTText = lat(200, 80*1.5)
			return s
		}, []string{"content p50  content p99", "content = TTFT to the first text"}},
		{"knee against a known capacity", func() *sweep.Result { s := ladder(); s.ReferenceCapacity = 8.5; return s },
			[]string{"simulator capacity (from its parameters): 8.5 req/s; knee = 94.1% of it"}},
		{"no knee against a known capacity: no knee figure", func() *sweep.Result {
			s := ladder()
			s.ReferenceCapacity = 8.5
			s.Knee.Found, s.Knee.Level, s.Knee.Upper = false, 0, 0
			return s
		}, []string{"knee: not found", "simulator capacity (from its parameters): 8.5 req/s; no knee found: the highest level that passed is 94.1% of it"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.sweep()
			out := tableText(t, s)
			lines := strings.Split(out, "\n")
			rows := lines[:len(s.Steps)+1]
			// Right-aligned columns: every row ends where the header does,
			// the knee row has its mark after that.
			// Widths in characters: a goodput without an SLO is "—".
			for _, r := range rows[1:] {
				want := utf8.RuneCountInString(rows[0])
				if strings.HasSuffix(r, "<- knee") {
					want += len("  <- knee")
				}
				if got := utf8.RuneCountInString(r); got != want {
					t.Errorf("row width %d, want %d:\n%s\n%s", got, want, rows[0], r)
				}
			}
			if !strings.HasSuffix(strings.Fields(rows[0])[1], "rate") || !strings.Contains(rows[0], "TTFT p99") {
				t.Errorf("header = %q", rows[0])
			}
			kneeRows := 0
			for _, r := range rows {
				if strings.HasSuffix(r, "<- knee") {
					kneeRows++
					if f := strings.Fields(r); f[0] != "3" || f[1] != "8" {
						t.Errorf("knee marks row %q, want step 3 at 8", r)
					}
				}
			}
			if want := map[bool]int{true: 1, false: 0}[s.Knee.Found]; kneeRows != want {
				t.Errorf("%d rows marked knee, want %d", kneeRows, want)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("table lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestWriteFiles(t *testing.T) {
	r, err := artifacts.Create(t.TempDir(), "report", t0)
	if err != nil {
		t.Fatal(err)
	}
	s := ladder()
	if err := WriteFiles(r, s); err != nil {
		t.Fatal(err)
	}
	if err := r.Finish(artifacts.Manifest{Fingerprint: s.Fingerprint}, true); err != nil {
		t.Fatal(err)
	}
	m, err := artifacts.ReadManifest(r.Dir())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range m.Files {
		names = append(names, f.Path)
	}
	if got, want := strings.Join(names, ","), "analysis.md,goodput.svg,latency.svg"; got != want {
		t.Errorf("files = %s, want %s", got, want)
	}
	if v, err := artifacts.Verify(r.Dir(), artifacts.VerifyOptions{}); err != nil || len(v.Problems) != 0 {
		t.Errorf("Verify = %v, %v", v.Problems, err)
	}
}

type failWriter struct{}

func (failWriter) WriteFile(string, []byte) error { return errors.New("disk full") }

func TestWriteFilesError(t *testing.T) {
	if err := WriteFiles(failWriter{}, ladder()); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("WriteFiles = %v, want the write error", err)
	}
}

func TestNum(t *testing.T) {
	tests := []struct {
		name string
		in   float64
		want string
	}{
		{"integer", 8, "8"},
		{"large", 1234.56, "1235"},
		{"tens", 12.345, "12.3"},
		{"tens trims zero", 12.0001, "12"},
		{"units", 1.234, "1.23"},
		{"units trims zeros", 2.5, "2.5"},
		{"small", 0.012345, "0.0123"},
		{"negative", -3.5, "-3.5"},
		{"nan", math.NaN(), "-"},
		{"inf", math.Inf(1), "inf"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := num(tc.in); got != tc.want {
				t.Errorf("num(%v) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// fakeClock is a manual clock for plain progress.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestProgressPlain(t *testing.T) {
	tests := []struct {
		name  string
		total int
		steps []struct {
			add     int
			advance time.Duration
		}
		want []string
	}{
		{
			name:  "deciles",
			total: 20,
			steps: repeat(20, 1, 100*time.Millisecond),
			want: []string{"step 1: 2/20 (10%) 200ms elapsed", "step 1: 4/20 (20%) 400ms elapsed", "step 1: 6/20 (30%) 600ms elapsed",
				"step 1: 8/20 (40%) 800ms elapsed", "step 1: 10/20 (50%) 1s elapsed", "step 1: 12/20 (60%) 1.2s elapsed",
				"step 1: 14/20 (70%) 1.4s elapsed", "step 1: 16/20 (80%) 1.6s elapsed", "step 1: 18/20 (90%) 1.8s elapsed",
				"step 1: 20/20 (100%) 2s elapsed, finished"},
		},
		{
			name:  "slow progress prints every interval",
			total: 1000,
			steps: repeat(3, 1, 6*time.Second),
			want: []string{"step 1: 1/1000 (0%) 6s elapsed", "step 1: 2/1000 (0%) 12s elapsed", "step 1: 3/1000 (0%) 18s elapsed",
				"step 1: 3/1000 (0%) 18s elapsed, finished"},
		},
		{
			name:  "unknown total",
			total: 0,
			steps: repeat(4, 5, 3*time.Second),
			want:  []string{"step 1: 10 done, 6s elapsed", "step 1: 20 done, 12s elapsed", "step 1: 20 done, 12s elapsed, finished"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			c := &fakeClock{t: t0}
			p := newProgress(&b, tc.total, "step 1", false, c.now)
			for _, s := range tc.steps {
				c.t = c.t.Add(s.advance)
				p.Add(s.add)
			}
			p.Finish()
			p.Finish()
			p.Add(5)
			got := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func repeat(n, add int, advance time.Duration) []struct {
	add     int
	advance time.Duration
} {
	out := make([]struct {
		add     int
		advance time.Duration
	}, n)
	for i := range out {
		out[i].add, out[i].advance = add, advance
	}
	return out
}

func TestProgressTerminal(t *testing.T) {
	tests := []struct {
		name  string
		total int
		adds  int
		want  string
	}{
		{"complete", 10, 10, "10/10"},
		{"interrupted", 10, 4, "4/10"},
		{"unknown total", 0, 3, "3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			p := newProgress(&b, tc.total, "rate=4", true, time.Now)
			for range tc.adds {
				p.Add(1)
			}
			p.Finish()
			out := b.String()
			if !strings.Contains(out, "rate=4") || !strings.Contains(out, tc.want) || !strings.HasSuffix(out, "\n") {
				t.Errorf("bar output %q lacks the description, %q or the final newline", out, tc.want)
			}
		})
	}
	t.Run("a buffer and a pipe are not terminals", func(t *testing.T) {
		if isTerminal(&bytes.Buffer{}) {
			t.Error("bytes.Buffer is a terminal")
		}
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		defer w.Close()
		if isTerminal(w) {
			t.Error("a pipe is a terminal")
		}
	})
}

func TestProgressConcurrent(t *testing.T) {
	for _, tty := range []bool{false, true} {
		var b bytes.Buffer
		p := newProgress(&b, 400, "c", tty, time.Now)
		done := make(chan struct{})
		for range 4 {
			go func() {
				defer func() { done <- struct{}{} }()
				for range 100 {
					p.Add(1)
				}
			}()
		}
		for range 4 {
			<-done
		}
		p.Finish()
		if p.done != 400 {
			t.Errorf("tty=%v: done = %d, want 400", tty, p.done)
		}
		if !strings.Contains(b.String(), "400/400") {
			t.Errorf("tty=%v: output lacks 400/400: %q", tty, b.String())
		}
	}
}

// TestQuantile: a server-side quantile in the histogram's first bucket is
// shown as "≤ bound", the mean never is.
func TestQuantile(t *testing.T) {
	tests := []struct {
		name                 string
		first, count         float64
		wantP50, wantP99     string
		recordedFirstBuckets bool
	}{
		{name: "every observation in the first bucket", first: 40, count: 40, wantP50: "≤ 300", wantP99: "≤ 300", recordedFirstBuckets: true},
		{name: "half in the first bucket", first: 20, count: 40, wantP50: "≤ 300", wantP99: "297", recordedFirstBuckets: true},
		{name: "none in the first bucket", first: 0, count: 40, wantP50: "150", wantP99: "297", recordedFirstBuckets: true},
		{name: "first bucket not recorded", first: 40, count: 40, wantP50: "150", wantP99: "297"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := sweep.ServerLatency{Count: known(tt.count), MeanMS: known(0.02), P50MS: known(150), P90MS: known(270), P99MS: known(297)}
			if tt.recordedFirstBuckets {
				l.FirstBucketLEMS, l.FirstBucketCount = known(300), known(tt.first)
			}
			if got := quantile(l, l.P50MS, 0.5); got != tt.wantP50 {
				t.Errorf("p50 = %q, want %q", got, tt.wantP50)
			}
			if got := quantile(l, l.P99MS, 0.99); got != tt.wantP99 {
				t.Errorf("p99 = %q, want %q", got, tt.wantP99)
			}
			if got := val(l.MeanMS); got != "0.02" {
				t.Errorf("mean = %q, want 0.02", got)
			}
			if got := quantile(l, sweep.Figure{}, 0.5); got != fingerprint.NotRecorded {
				t.Errorf("unknown p50 = %q, want %s", got, fingerprint.NotRecorded)
			}
		})
	}
}
