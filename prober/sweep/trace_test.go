package sweep

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// testTrace is an offsets-format trace of n requests 50 ms apart, 64 input
// tokens in blocks of 16: ids [0, i%4+1, ...] share one block with every
// earlier request and two with the one four before.
func testTrace(t testing.TB, n int) *workload.Trace {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"offset_ms": %d, "input_tokens": 64, "output_tokens": 4, "hash_ids": [0, %d, %d, %d]}`+"\n", 50*i, i%4+1, 100+i, 200+i)
	}
	tr, err := workload.ParseTrace("test-trace.jsonl", strings.NewReader(b.String()), workload.TraceOptions{BlockSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func traceConfig(t testing.TB, target string, tr *workload.Trace, speeds ...float64) Config {
	cfg := testConfig(t, target)
	cfg.Rates, cfg.RatesText, cfg.NumPrompts = nil, "", 0
	cfg.Trace, cfg.TraceSpeeds = tr, speeds
	cfg.SavePrompts = true
	return cfg
}

// TestTraceReplay replays a trace at speeds 1 and 2 against the simulator:
// every entry is sent, at the trace's offsets divided by the speed (the
// scheduled times exactly, the actual ones within a loose bound), so speed
// 2 halves the span; the shared hash ids reach the server's prefix cache.
// On a machine too busy for the client to keep the trace's times, a step
// flagged client-saturated (with its evidence) is the right answer: its
// sends are then not held to the timing bounds; reordered sends are held
// to what the records show.
func TestTraceReplay(t *testing.T) {
	url, _ := simtest.Start(t, simtest.Fast())
	const n = 40
	tr := testTrace(t, n)
	cfg := traceConfig(t, url, tr, 1, 2)
	sink := &memSink{}
	res := runSweep(t, cfg, sink)
	if !res.Complete || len(res.Steps) != 2 {
		t.Fatalf("complete %v, %d steps", res.Complete, len(res.Steps))
	}
	span := tr.Span().Seconds() // 1.95 s
	anySaturated := false
	for k, st := range res.Steps {
		speed := float64(k + 1)
		if want := fmt.Sprintf("trace-speed=%d", k+1); st.Label != want || st.Mode != ModeOpen {
			t.Errorf("step %d: label %q mode %s, want %q open", k, st.Label, st.Mode, want)
		}
		if want := n / (span / speed); st.Level < want*0.999 || st.Level > want*1.001 {
			t.Errorf("step %d: level %v, want the mean rate %v", k, st.Level, want)
		}
		tt := st.Trace
		if tt == nil {
			t.Fatalf("step %d: no trace timing", k)
		}
		if st.Stats.Requests != n || tt.Entries != n || tt.Sent != n || st.Stats.Failed != 0 {
			t.Fatalf("step %d: %d requests, %d failed, trace %d entries %d sent", k, st.Stats.Requests, st.Stats.Failed, tt.Entries, tt.Sent)
		}
		if tt.Speed != speed || tt.SHA256 != tr.SHA256 || tt.Format != workload.TraceOffsets || tt.BlockSize != 16 {
			t.Errorf("step %d: %+v", k, tt)
		}
		if d := tt.ScheduledSpanS - span/speed; d > 1e-6 || d < -1e-6 {
			t.Errorf("step %d: scheduled span %v, want %v", k, tt.ScheduledSpanS, span/speed)
		}
		recs := map[int64]StepRecord{}
		var stepRecs []prober.Record
		for _, r := range sink.recs {
			if r.Step == k {
				recs[r.Index] = r
				stepRecs = append(stepRecs, *r.Record)
			}
		}
		if len(recs) != n {
			t.Fatalf("step %d: %d records", k, len(recs))
		}
		saturated := clientSaturated(t, st, cfg.Validity, stepRecs)
		anySaturated = anySaturated || saturated
		if tt.OffsetErrorMS.P50 < 0 || tt.OffsetErrorMS.P99 > tt.OffsetErrorMS.Max || !saturated && tt.OffsetErrorMS.Max > 1000 {
			t.Errorf("step %d: offset error %+v", k, tt.OffsetErrorMS)
		}
		traced, achieved := 0, 0
		for _, w := range tt.Windows {
			traced += w.Trace
			achieved += w.Achieved
		}
		if traced != n || achieved != n || tt.WindowS <= 0 {
			t.Errorf("step %d: windows of %v s count %d trace and %d achieved sends", k, tt.WindowS, traced, achieved)
		}
		// The shared blocks: block 0 for all but the first request, block 1
		// too from the fifth on.
		if want := int64(16*(n-1) + 16*(n-4)); tt.SharedPrefixTokens != want || tt.InputTokens != 64*n {
			t.Errorf("step %d: shared %d of %d, want %d of %d", k, tt.SharedPrefixTokens, tt.InputTokens, want, 64*n)
		}
		if hits := st.Server.PrefixCacheHits; !hits.Known || hits.Value < 0.5*float64(tt.SharedPrefixTokens) {
			t.Errorf("step %d: the server's prefix cache hit %+v tokens, the trace shares %d", k, hits, tt.SharedPrefixTokens)
		}
		if slices.Contains(st.Validity.Flags, FlagUnintendedPrefixCache) {
			t.Errorf("step %d: a trace's shared prefixes were flagged: %v", k, st.Validity.Reasons)
		}
		// Per request: the intended send is exactly the trace's offset /
		// speed; the actual one is not earlier, nor (unless the client
		// said it could not keep up) far later.
		origin := recs[0].Record.Scheduled
		var maxLag time.Duration
		var reordered int
		var lastSent time.Time
		for i := range int64(n) {
			rec := recs[i].Record
			maxLag = max(maxLag, rec.Sent.Sub(rec.Scheduled))
			if i > 0 && rec.Sent.Before(lastSent) {
				reordered++ // the trace's offsets are all distinct
			}
			if rec.Sent.After(lastSent) {
				lastSent = rec.Sent
			}
			want := time.Duration(float64(tr.Entries[i].Offset) / speed)
			if got := rec.Scheduled.Sub(origin); got != want {
				t.Errorf("step %d request %d: scheduled at %v, want %v", k, i, got, want)
			}
			if lag := rec.Sent.Sub(rec.Scheduled); lag < 0 || !saturated && lag > time.Second {
				t.Errorf("step %d request %d: sent %v after its time", k, i, lag)
			}
			if rec.OutputTokensRequested != 4 || rec.PromptTokens != 64 {
				t.Errorf("step %d request %d: %d prompt tokens, max_tokens %d", k, i, rec.PromptTokens, rec.OutputTokensRequested)
			}
		}
		// A request is sent before an earlier one only when that one was
		// later than the trace's gap (50 ms / speed): none without such a
		// late send, else as many as the records show.
		if gap := time.Duration(float64(50*time.Millisecond) / speed); tt.ReorderedSends != reordered || maxLag < gap && reordered != 0 {
			t.Errorf("step %d: %d requests sent before one scheduled earlier, the records show %d (largest send lag %v, trace gap %v)",
				k, tt.ReorderedSends, reordered, maxLag, gap)
		}
		// Equal leading hash ids, equal leading text (one block: 16 words
		// past the tokenizer's overhead).
		a, b := strings.Fields(recs[1].Prompt), strings.Fields(recs[5].Prompt)
		if strings.Join(a[:32], " ") != strings.Join(b[:32], " ") || a[40] == b[40] && a[41] == b[41] && a[42] == b[42] {
			t.Errorf("step %d: requests 1 and 5 (hash ids [0 2 ...] both) share %q vs %q", k, a[:34], b[:34])
		}
	}
	s0, s1 := res.Steps[0].Trace.AchievedSpanS, res.Steps[1].Trace.AchievedSpanS
	if r := s1 / s0; !anySaturated && (r < 0.4 || r > 0.6) {
		t.Errorf("--trace-speed 2 sent over %v s, speed 1 over %v s: ratio %v, want about 0.5", s1, s0, r)
	}
	if ft := res.Fingerprint.Workload.Trace; ft == nil || ft.SHA256 != tr.SHA256 || ft.Entries != n || !slices.Equal(ft.Speeds, []float64{1, 2}) {
		t.Errorf("fingerprint trace %+v", ft)
	}
	// result.json keeps the comparison and reads back to the same bytes.
	b1 := resultJSON(t, res)
	back := decodeBack(t, b1)
	b2, _ := back.MarshalJSON()
	if !bytes.Equal(b1, b2) || back.Steps[1].Trace == nil || back.Steps[1].Trace.Speed != 2 {
		t.Errorf("result.json does not round-trip the trace timing")
	}
}

func TestTraceConfig(t *testing.T) {
	tr := testTrace(t, 10)
	f := func(name string, edit func(*Config), field, reason string) {
		t.Helper()
		cfg := traceConfig(t, "http://127.0.0.1:1", tr, 1)
		edit(&cfg)
		err := cfg.Validate()
		if reason == "" {
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
			return
		}
		fe, ok := err.(*FieldError)
		if !ok || fe.Field != field || fe.Reason(FlagSpelling) != reason {
			t.Errorf("%s: got %v, want %s: %s", name, err, field, reason)
		}
	}
	f("valid", func(*Config) {}, "", "")
	f("with rates", func(c *Config) { c.Rates = []float64{1} }, "Trace", "replays the trace's own timing: give --trace-speed, not --rates or --concurrency")
	f("no speed", func(c *Config) { c.TraceSpeeds = nil }, "TraceSpeeds", "give at least one speed (1: the trace's own timing)")
	f("speeds without a trace", func(c *Config) { c.Trace = nil; c.Rates = []float64{1} }, "TraceSpeeds", "needs --trace")
	f("sharded", func(c *Config) { c.ShardCount, c.ShardIndex = 2, 0 }, "Trace", "a trace replay is not sharded (--shard-count): each shard would send the whole trace")
	f("cut to the first entry", func(c *Config) { c.NumPrompts = 1 }, "NumPrompts", "leaves 1 trace entries at speed 1, all at offset 0: no span to replay")
	f("cut by duration", func(c *Config) { c.Duration = 200 * time.Millisecond }, "", "")

	c := traceConfig(t, "", tr, 1, 4)
	c.Duration = 200 * time.Millisecond
	if got := []int{c.traceCount(1), c.traceCount(4)}; !slices.Equal(got, []int{4, 10}) {
		t.Errorf("--duration 200ms cuts speeds 1 and 4 to %v entries, want [4 10]", got)
	}
	if sp, err := ParseTraceSpeeds("1, 2.5"); err != nil || !slices.Equal(sp, []float64{1, 2.5}) {
		t.Errorf("ParseTraceSpeeds: %v %v", sp, err)
	}
	for _, bad := range []string{"0", "x", "1,1", "inf", ""} {
		if _, err := ParseTraceSpeeds(bad); err == nil {
			t.Errorf("ParseTraceSpeeds(%q): no error", bad)
		}
	}
}

// TestTraceTooLong refuses, before any load, a trace whose longest request
// does not fit the model, naming its line.
func TestTraceTooLong(t *testing.T) {
	url, _ := simtest.Start(t, simtest.Fast())
	tr, err := workload.ParseTrace("long.jsonl", strings.NewReader(
		`{"timestamp": 0, "input_length": 10, "output_length": 1}`+"\n"+`{"timestamp": 5, "input_length": 8000, "output_length": 500}`),
		workload.TraceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Prepare(context.Background(), traceConfig(t, url, tr, 1), Options{})
	want := "Trace: long.jsonl:2: the request needs 8500 tokens (input 8000 + output 500), more than the model's max_model_len 8192 (from GET /v1/models)"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}
