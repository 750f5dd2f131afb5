package sweep

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober/slo"
	"github.com/llmprobe/llmprobe/prober/stats"
)

// encodeResult encodes res as the run directory writes result.json
// (artifacts.Run.WriteJSON: indented, no HTML escaping, a final newline).
func encodeResult(t *testing.T, res *Result) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(res); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// decodeBack decodes result.json's bytes b; an error fails the test.
func decodeBack(t *testing.T, b []byte) *Result {
	t.Helper()
	res, err := DecodeResult(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// resultJSON is res as JSON (json.Marshal); an error fails the test.
func resultJSON(t *testing.T, res *Result) []byte {
	t.Helper()
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// roundTrip is res written as result.json (resultJSON) and read back.
func roundTrip(t *testing.T, res *Result) *Result {
	t.Helper()
	return decodeBack(t, resultJSON(t, res))
}

// readBack is what result.json holds of res: a copy without the Go-only
// fields and the figures result.json does not write (see
// Result.UnmarshalJSON), times in UTC without a monotonic reading.
func readBack(res *Result) *Result {
	out := *res
	out.Name, out.InterruptedReason, out.MaxConcurrency, out.Rounds = "", "", 0, 0
	out.Fingerprint = Result{}.Fingerprint
	if out.Notes == nil {
		out.Notes = []string{}
	}
	out.Steps = nil
	for _, st := range res.Steps {
		c := *st
		c.Start, c.End = c.Start.UTC(), c.End.UTC()
		if !c.Validity.Idle.At.IsZero() {
			c.Validity.Idle.At = c.Validity.Idle.At.UTC()
		}
		if len(c.Server.FinishedReasons) == 0 {
			c.Server.FinishedReasons = nil
		}
		s := &c.Stats
		s.sendLagsMS, s.kneeSamples = nil, nil
		for _, l := range []*Latency{&s.TTFT, &s.TPOT, &s.ITL, &s.E2EL} {
			l.Min, l.Max = 0, 0
			if l.P99CI != nil {
				ci := *l.P99CI
				ci.Conf, ci.Iters = 0, 0
				l.P99CI = &ci
			}
		}
		out.Steps = append(out.Steps, &c)
	}
	return &out
}

// TestDecodeResultRoundTrip runs sweeps against the simulator and reads
// their result.json back: encoding the decoded Result gives the same bytes,
// and it equals the sweep's Result but for what result.json does not hold.
func TestDecodeResultRoundTrip(t *testing.T) {
	url, _ := simtest.Start(t, simtest.Fast())
	tests := []struct {
		name  string
		cfg   func(c *Config)
		check func(t *testing.T, res *Result)
	}{
		{name: "rates with rounds, SLOs, max concurrency, percentiles and metadata", cfg: func(c *Config) {
			c.Rounds, c.MaxConcurrency, c.NumPrompts = 2, 4, 10
			c.SLO = slo.SLO{TTFT: 500 * time.Millisecond, E2EL: 5 * time.Second}
			c.Percentiles, c.Metadata = []float64{75, 99, 99.9}, map[string]string{"gpu": "none", "zone": "a"}
		}},
		{name: "closed loop", cfg: func(c *Config) {
			c.Rates, c.RatesText, c.Concurrency, c.NumPrompts = nil, "", []int{1, 4}, 10
		}},
		{name: "a burst beside a rate, no SLO", cfg: func(c *Config) {
			c.Rates, c.RatesText, c.NumPrompts = []float64{20, math.Inf(1)}, "20,inf", 10
		}},
		// 20 requests are too few for the SLO p99: the search reruns the
		// level longer, and the steps carry its verdicts. The keep-up
		// bar is 50 %: under -race beside busy loops the in-process
		// simulator at 100 req/s kept up 84 % (TTFT p99 69 ms), and the
		// too-short rerun, not the server's speed, is this case's subject.
		{name: "an adaptive search with a too-short first level", cfg: func(c *Config) {
			c.Rates, c.RatesText, c.Auto, c.NumPrompts = nil, "auto", true, 20
			c.Search = SearchOptions{Start: 50, MaxSteps: 2, Ratio: 0.5}
			c.SLO = slo.SLO{TTFT: 5 * time.Second}
			// The verdicts are this case's subject, not the client's
			// lateness: a busy test machine must not flag the steps.
			c.Validity.MaxSendLag = time.Minute
		}, check: func(t *testing.T, res *Result) {
			if len(res.Steps) != 2 || res.Steps[0].Search == nil || res.Steps[0].Search.Verdict != VerdictTooShort ||
				res.Steps[1].Stats.Requests < MinSLOSamples || res.Steps[1].Search == nil || res.Steps[1].Search.Verdict != VerdictPass {
				for _, st := range res.Steps {
					t.Logf("step %d: %d requests, search %+v", st.Index, st.Stats.Requests, st.Search)
				}
				t.Errorf("want a too-short step of 20 requests, then a passing one of at least %d", MinSLOSamples)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t, url)
			tc.cfg(&cfg)
			res := runSweep(t, cfg, DiscardSink{})
			if tc.check != nil {
				tc.check(t, res)
			}
			// result.json as internal/rundir writes it (artifacts.Run.WriteJSON;
			// internal/rundir's tests read real run directories back).
			b := encodeResult(t, res)
			got := decodeBack(t, b)
			if again := encodeResult(t, got); !bytes.Equal(again, b) {
				t.Errorf("result.json encoded again differs:\n%s\nwant:\n%s", again, b)
			}
			want := readBack(res)
			if len(got.Steps) != len(want.Steps) {
				t.Fatalf("%d steps read back, want %d", len(got.Steps), len(want.Steps))
			}
			for i := range want.Steps {
				if !reflect.DeepEqual(got.Steps[i], want.Steps[i]) {
					t.Errorf("step %d read back:\n%+v\nwant\n%+v", i, got.Steps[i], want.Steps[i])
				}
			}
			got.Steps, want.Steps = nil, nil
			if !reflect.DeepEqual(got, want) {
				t.Errorf("result read back:\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

// TestDecodeResultHandBuilt reads back what a sweep rarely writes: a
// throughput probe, search end and stop, a reference capacity, a p99
// interval bound that is not finite (null) and a rate inf level.
func TestDecodeResultHandBuilt(t *testing.T) {
	res := handBuiltResult()
	st := res.Steps[0]
	b := encodeResult(t, res)
	got := decodeBack(t, b)
	if again := encodeResult(t, got); !bytes.Equal(again, b) {
		t.Errorf("encoded again:\n%s\nwant:\n%s", again, b)
	}
	gs := got.Steps[0]
	if ci := gs.Stats.TTFT.P99CI; ci == nil || !math.IsNaN(ci.Lo) || ci.Hi != 4 {
		t.Errorf("p99 interval read back %+v, want [NaN, 4]", ci)
	}
	if !math.IsInf(gs.Level, 1) || !math.IsInf(gs.Stats.RequestedRate, 1) || !math.IsInf(got.Levels[0].Level, 1) ||
		!math.IsInf(got.Knee.MaxGoodputLevel, 1) {
		t.Errorf("rate inf read back as step %v requested %v level %v max goodput level %v",
			gs.Level, gs.Stats.RequestedRate, got.Levels[0].Level, got.Knee.MaxGoodputLevel)
	}
	if got.Probe == nil || !reflect.DeepEqual(*got.Probe, *res.Probe) || got.SearchEnd != SearchMaxSteps || got.Knee.Stop != "stopped" ||
		got.ReferenceCapacity != 8.5 || got.KneeUnit != "req/s" {
		t.Errorf("probe %+v search end %q stop %q reference capacity %v unit %q", got.Probe, got.SearchEnd, got.Knee.Stop,
			got.ReferenceCapacity, got.KneeUnit)
	}
	// The level's outcome is derived again from its step: a burst is never
	// valid for the knee.
	if o := got.Levels[0].Outcome; o.Valid || o.Level != st.Level || len(o.Invalid) != 1 {
		t.Errorf("level outcome %+v", o)
	}
}

func TestDecodeResultErrors(t *testing.T) {
	tests := []struct {
		name, in, errHas string
	}{
		{"not JSON", `{`, "decode result"},
		{"no schema", `{"date": "x"}`, "no llmprobe_result_schema"},
		{"a newer schema", `{"llmprobe_result_schema": 3}`, "newer than this llmprobe reads (2)"},
		{"a rate that is no number", `{"llmprobe_result_schema": 1, "steps": [{"request_rate": "fast"}]}`, `step 0: request_rate: rate "fast"`},
		{"metadata that is no string", `{"llmprobe_result_schema": 1, "gpu": 4}`, "metadata gpu"},
		{"a key of the wrong type", `{"llmprobe_result_schema": 1, "complete": "yes"}`, "complete"},
		{"a step without its vLLM keys", `{"llmprobe_result_schema": 2, "steps": [{}]}`, "step 0: no label key"},
		{"a level without its keys", `{"llmprobe_result_schema": 2, "levels": [{"label": "rate=1"}]}`, "level 0: no level key"},
		{"a flag without its reason", `{"llmprobe_result_schema": 2, "steps": [{` + vllmStep + `, "validity": {"flags": ["not-idle"]}}]}`,
			"step 0: validity: 1 flags but 0 reasons"},
		{"a percentile twice", `{"llmprobe_result_schema": 2, "percentiles": [75, 75], "steps": []}`, "percentile 75 given twice"},
		{"a time JSON cannot write", `{"llmprobe_result_schema": 2, "steps": [{` + vllmStep + `, "start": "0000-01-01T00:00:00+01:00"}]}`,
			"step 0: start: time"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := DecodeResult(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.errHas) || res != nil {
				t.Errorf("DecodeResult = %v, %v; want an error with %q", res, err, tc.errHas)
			}
		})
	}
}

// handBuiltResult is what a sweep rarely writes: a throughput probe, search
// end and stop, a reference capacity, a p99 interval bound that is not
// finite and a rate inf level.
func handBuiltResult() *Result {
	lat := Latency{Summary: stats.Summary{N: 3, Mean: 2, Median: 2, Std: 1, P50: 2, P90: 3, P99: 3}, P99CI: &stats.CI{Lo: math.NaN(), Hi: 4}}
	st := &Step{Index: 0, Label: "rate=inf", Level: math.Inf(1), Round: 1, Attempt: 1, Mode: ModeBurst,
		Start: time.Date(2026, 5, 6, 7, 0, 0, 0, time.UTC), End: time.Date(2026, 5, 6, 7, 1, 0, 0, time.UTC),
		Stats: Stats{Duration: 2, Requests: 3, Completed: 3, Good: 3, RequestGoodput: 1.5, RequestedRate: math.Inf(1),
			FailedByClass: map[string]int{}, FinishReasons: map[string]int{"length": 3}, TTFT: lat, TPOT: lat, ITL: lat, E2EL: lat,
			Latencies: []float64{1, 2, 3}, QueueTimes: []float64{0, 0, 0}},
		Server:   ServerStats{Status: ServerRecorded, PromptTokens: Figure{Value: 96, Known: true}},
		Validity: Validity{Valid: true, Flags: []string{}, Reasons: []string{}, Idle: IdleProof{Status: IdleNotRecorded, Reason: "no metrics"}},
	}
	res := &Result{Date: "20260506-070000", Backend: "openai", ModelID: "m", TokenizerID: "m", Mode: ModeBurst, Rates: "inf",
		Arrival: "poisson", Burstiness: 1, SLO: map[string]float64{"ttft": 100}, Steps: []*Step{st},
		Levels:   []Level{{Label: "rate=inf", Level: math.Inf(1), Rounds: 1, ValidRounds: 1}},
		Knee:     Knee{Reason: "no valid step", MaxGoodputLevel: math.Inf(1), Stop: "stopped"},
		KneeUnit: "req/s", Complete: true, Notes: []string{"a note"}, SearchEnd: SearchMaxSteps, ReferenceCapacity: 8.5,
		Probe: &ThroughputProbe{EstimateReqPerS: 7.9, StartRate: 7.9, Note: "n", Levels: []ProbeLevel{
			{Concurrency: 32, Completed: 90, ThroughputReqPerS: 7.5, MeanE2ELMS: 4000, MaxWaiting: Figure{Value: 0, Known: true},
				Start: time.Date(2026, 5, 6, 6, 59, 0, 0, time.UTC), End: time.Date(2026, 5, 6, 6, 59, 3, 0, time.UTC)}}},
	}
	return res
}

// TestDecodeResultEdges reads documents at the edges of what result.json
// holds (FuzzDecodeResult's kind of input): each reads back to a Result
// that encodes, decodes and encodes again to the same bytes.
func TestDecodeResultEdges(t *testing.T) {
	tests := []struct {
		name, in string
		check    func(t *testing.T, res *Result)
	}{
		{name: "a cost that is not finite is null",
			in: `{"llmprobe_result_schema":2,"cost_per_hour_usd":1e308,"steps":[{` + vllmStep + `,"good_output_throughput":1e-300}]}`,
			check: func(t *testing.T, res *Result) {
				if b, _ := json.Marshal(res); !strings.Contains(string(b), `"cost_per_million_good_output_tokens":null`) {
					t.Errorf("cost not null in %s", b)
				}
			}},
		{name: "a latency key at the top level is no metadata",
			in: `{"llmprobe_result_schema":2,"percentiles":[75],"p75_ttft_ms":"x","gpu":"h200","steps":[{` + vllmStep + `}]}`,
			check: func(t *testing.T, res *Result) {
				if !reflect.DeepEqual(res.MetadataOrder, []string{"gpu"}) {
					t.Errorf("metadata %v, want only gpu", res.MetadataOrder)
				}
			}},
		{name: "a goodput derived from a duration near 0 stays finite",
			in: `{"llmprobe_result_schema":2,"steps":[{` + vllmStep + `,"good_completed":5,"duration":1e-320}]}`,
			check: func(t *testing.T, res *Result) {
				if g := res.Steps[0].Stats.RequestGoodput; math.IsInf(g, 0) {
					t.Errorf("request goodput %v", g)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := DecodeResult(strings.NewReader(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, res)
			checkDecodeResult(t, []byte(tc.in))
		})
	}
}
