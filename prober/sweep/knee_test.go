package sweep

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/prober/schedule"
)

// saturating is a synthetic server with capacity c req/s: below c it keeps
// up; above c it completes c req/s (throughput-bound) and, when sloBound, its
// SLO p99 fails as soon as the rate exceeds c even though throughput follows
// the rate (latency-bound).
func saturating(c float64, sloBound bool) Prober {
	return func(rate float64, _ int) (StepOutcome, error) {
		tp := math.Min(rate, c)
		if sloBound {
			tp = rate
		}
		return StepOutcome{Level: rate, Offered: rate, Goodput: tp, Throughput: tp, SLOHeld: !sloBound || rate <= c, Valid: true}, nil
	}
}

func TestSearch(t *testing.T) {
	tests := []struct {
		name     string
		capacity float64
		sloBound bool
		opts     SearchOptions
		maxSteps int // the confirmation of the knee included
	}{
		{name: "throughput-bound capacity 12", capacity: 12, maxSteps: 9},
		{name: "throughput-bound capacity 5.3", capacity: 5.3, maxSteps: 9},
		{name: "throughput-bound capacity 37, start 4", capacity: 37, opts: SearchOptions{Start: 4}, maxSteps: 9},
		{name: "first step fails: capacity 0.3", capacity: 0.3, maxSteps: 9},
		{name: "latency-bound capacity 12 (no hint)", capacity: 12, sloBound: true, maxSteps: 11},
		{name: "latency-bound capacity 100", capacity: 100, sloBound: true, maxSteps: 13},
		{name: "capacity exactly a doubling step", capacity: 8, maxSteps: 9},
		// The sweep starts from a throughput probe's estimate, which a
		// closed loop can put above the open-loop capacity.
		{name: "start from an over-estimate, latency-bound", capacity: 270, sloBound: true, opts: SearchOptions{Start: 334}, maxSteps: 8},
		{name: "start from an under-estimate, throughput-bound", capacity: 285, opts: SearchOptions{Start: 250}, maxSteps: 7},
		{name: "probe start (factor sqrt 2), latency-bound", capacity: 265, sloBound: true, opts: SearchOptions{Start: 334, Factor: math.Sqrt2}, maxSteps: 7},
		{name: "probe start (factor sqrt 2), throughput-bound", capacity: 285, opts: SearchOptions{Start: 334, Factor: math.Sqrt2}, maxSteps: 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Search(tt.opts, saturating(tt.capacity, tt.sloBound))
			if err != nil {
				t.Fatal(err)
			}
			if !res.Found {
				t.Fatalf("knee not found: %s (steps %+v)", res.Reason, res.Steps)
			}
			// A throughput-bound server keeps goodput >= 90 % of the rate up
			// to capacity/0.9; a latency-bound one up to its capacity.
			knee := tt.capacity / DefaultGoodputRatio
			if tt.sloBound {
				knee = tt.capacity
			}
			if res.Level > knee*(1+1e-6) || res.Level < knee/1.1 {
				t.Errorf("knee %.4g, want within [%.4g, %.4g]", res.Level, knee/1.1, knee)
			}
			if res.Upper > res.Level*(1+DefaultAutoTolerance)*(1+1e-6) {
				t.Errorf("bracket [%.4g, %.4g] wider than %g", res.Level, res.Upper, DefaultAutoTolerance)
			}
			// One more: the failing level's repeat (DefaultKneeRepeats).
			if len(res.Steps) > tt.maxSteps+1 {
				t.Errorf("took %d steps, want <= %d: %+v", len(res.Steps), tt.maxSteps+1, res.Steps)
			}
			// The confirmation of the knee level, then one repeat of the
			// first failing level (the knee level has run twice).
			n := len(res.Steps)
			if rep := res.Steps[n-1]; rep.Level != res.Upper || rep.Verdict != VerdictRepeat || rep.Why != "repeat: fail: "+mustWhy(rep) {
				t.Errorf("last step %+v, want a repeat of %v", rep, res.Upper)
			}
			if last := res.Steps[n-2]; last.Level != res.Level || last.Verdict != VerdictConfirmed {
				t.Errorf("step %d %+v, want the confirmation of %v", n-2, last, res.Level)
			}
			if res.Low != res.Level || res.End != SearchBracketed {
				t.Errorf("bracket low %v, knee %v, end %q", res.Low, res.Level, res.End)
			}
		})
	}
}

// mustWhy is why the failing outcome o fails (judge's reason).
func mustWhy(o StepOutcome) string {
	_, why := o.judge(DefaultGoodputRatio)
	return why
}

func TestSearchBounds(t *testing.T) {
	saturated := []string{"client-saturated: send-lag p99 12 ms > 10 ms"}
	// invalidAbove6 is a server that keeps up at any rate, measured by a
	// client that cannot send 6 req/s or more on time.
	invalidAbove6 := func(rate float64, _ int) (StepOutcome, error) {
		o := StepOutcome{Offered: rate, Goodput: rate, Throughput: rate, SLOHeld: true, Valid: rate < 6}
		if !o.Valid {
			o.Invalid = saturated
		}
		return o, nil
	}
	// flaky is a server of capacity 12 req/s whose first attempt at 8 req/s
	// is invalid (a scheduler hiccup), the rerun valid.
	flaky := func() Prober {
		seen := map[float64]int{}
		inner := saturating(12, false)
		return func(rate float64, n int) (StepOutcome, error) {
			o, err := inner(rate, n)
			seen[rate]++
			if rate == 8 && seen[rate] == 1 {
				o.Valid, o.Invalid = false, saturated
			}
			return o, err
		}
	}
	tests := []struct {
		name      string
		probe     Prober
		opts      SearchOptions
		wantFound bool
		wantLow   float64 // the bracket's low end (the knee when found)
		wantErr   error
		wantSteps int
		wantEnd   string
		wantStop  []string
		wantBound *KneeBoundDetail
	}{
		{
			name:  "everything passes up to MaxRate",
			probe: saturating(1e9, false), opts: SearchOptions{Start: 1, MaxRate: 16},
			wantLow: 16, wantSteps: 5, wantEnd: SearchMaxRate,
		},
		{
			name:  "nothing passes down to MinRate",
			probe: saturating(0.001, false), opts: SearchOptions{Start: 1, MinRate: 0.2},
			wantLow: 0, wantSteps: 3, wantEnd: SearchMinRate, // 1, 0.5, 0.25
		},
		{
			name:  "MaxSteps stops the bracketing",
			probe: saturating(1e9, false), opts: SearchOptions{MaxSteps: 3},
			wantLow: 4, wantSteps: 3, wantEnd: SearchMaxSteps, wantStop: []string{"3 steps ran"},
		},
		{
			name:  "an invalid level is rerun, not narrowed on",
			probe: flaky(), wantFound: true, wantEnd: SearchBracketed,
			wantLow: -1, wantSteps: 10, // 1 2 4 [8] 8 16 13.3 (=12/0.9) 14 13.3 14: 8 ran twice, 13.3 confirmed, 14 repeated
		},
		{
			// 1 2 4 [8] [8] 5.66 [6.73] [6.73] 5.66: 8 and 6.73 stayed
			// invalid, so the search stepped down and confirmed 5.66, a
			// bound within UnmeasurableTolerance of 6.73.
			name:  "a level that stays invalid is stepped down from, and the confirmed level below is a bound",
			probe: invalidAbove6, wantLow: 4 * math.Sqrt2, wantSteps: 9,
			wantEnd: SearchUnmeasurable, wantStop: []string{"rate 6.727 req/s could not be measured", "all 2 attempts", saturated[0], "at least 5.657"},
			wantBound: &KneeBoundDetail{AtLeast: 4 * math.Sqrt2, Confirmed: true, Unmeasurable: 4 * math.Sqrt(2*math.Sqrt2), Flags: []string{FlagClientSaturated},
				Client: true, Shards: 3, ShardsFor: 13.5},
		},
		{
			name:  "no reruns with Retries < 0",
			probe: invalidAbove6, opts: SearchOptions{Retries: -1}, wantLow: 4 * math.Sqrt2, wantSteps: 7, // 1 2 4 [8] 5.66 [6.73] 5.66
			wantEnd: SearchUnmeasurable, wantStop: []string{"rate 6.727 req/s could not be measured: invalid in its only attempt"},
			wantBound: &KneeBoundDetail{AtLeast: 4 * math.Sqrt2, Confirmed: true, Unmeasurable: 4 * math.Sqrt(2*math.Sqrt2), Flags: []string{FlagClientSaturated},
				Client: true, Shards: 3, ShardsFor: 13.5},
		},
		{
			// The client's ceiling sizes the shards from the probe's
			// capacity estimate when no level failed.
			name:  "shards sized from the capacity estimate",
			probe: invalidAbove6, opts: SearchOptions{Retries: -1, Capacity: 30}, wantLow: 4 * math.Sqrt2, wantSteps: 7,
			wantEnd:   SearchUnmeasurable,
			wantBound: &KneeBoundDetail{AtLeast: 4 * math.Sqrt2, Confirmed: true, Unmeasurable: 4 * math.Sqrt(2*math.Sqrt2), Flags: []string{FlagClientSaturated}, Client: true, Shards: 6, ShardsFor: 33.3},
		},
		{
			// On a host so busy that the passing level's confirmation is
			// flagged too, its one valid pass stands as an unconfirmed
			// bound: 1 2 4 [8] 5.66 [6.73] [5.66].
			name: "an invalid confirmation below an unmeasurable level leaves an unconfirmed bound",
			probe: func() Prober {
				seen := map[float64]int{}
				return func(rate float64, n int) (StepOutcome, error) {
					o, err := invalidAbove6(rate, n)
					if seen[rate]++; rate == 4*math.Sqrt2 && seen[rate] > 1 {
						o.Valid, o.Invalid = false, saturated
					}
					return o, err
				}
			}(),
			opts: SearchOptions{Retries: -1}, wantLow: 4 * math.Sqrt2, wantSteps: 7,
			wantEnd: SearchUnmeasurable, wantStop: []string{"5.657 req/s passed once, and its confirmation was invalid too"},
			wantBound: &KneeBoundDetail{AtLeast: 4 * math.Sqrt2, Unmeasurable: 4 * math.Sqrt(2*math.Sqrt2), Flags: []string{FlagClientSaturated},
				Client: true, Shards: 3, ShardsFor: 13.5},
		},
		{
			name:  "the step budget runs out during reruns",
			probe: invalidAbove6, opts: SearchOptions{MaxSteps: 4}, wantLow: 4, wantSteps: 4,
			wantEnd: SearchMaxSteps, wantStop: []string{"rerunning the invalid rate 8"},
		},
		{
			name: "nothing can be measured down to MinRate",
			probe: func(rate float64, _ int) (StepOutcome, error) {
				return StepOutcome{Offered: rate, Goodput: rate, SLOHeld: true, Invalid: saturated}, nil
			},
			opts: SearchOptions{Start: 1, MinRate: 0.2, Retries: -1}, wantSteps: 2, // 1 0.25: down by a factor 4 below an unmeasurable level
			wantEnd: SearchInvalid, wantStop: []string{"no rate down to 0.25 req/s could be measured", saturated[0]},
		},
		{
			name: "four unmeasurable levels in a row end the search: the host is too busy",
			probe: func(rate float64, _ int) (StepOutcome, error) {
				return StepOutcome{Offered: rate, Goodput: rate, SLOHeld: true, Invalid: saturated}, nil
			},
			opts: SearchOptions{Start: 100}, wantSteps: 8, // 100 25 6.25 1.5625 (start / 64), each run twice
			wantEnd: SearchInvalid, wantStop: []string{"no rate down to 1.562 req/s could be measured (4 rates tried from 100 req/s, each invalid in all 2 attempts", "too busy to measure"},
		},
		{
			// A failing level below the unmeasurable one brackets the
			// knee as usual: the client's ceiling does not matter.
			name: "a failure below the client's ceiling is a knee",
			probe: func(rate float64, n int) (StepOutcome, error) {
				o, _ := saturating(5, true)(rate, n)
				if rate >= 8 {
					o.Valid, o.Invalid = false, saturated
				}
				return o, nil
			},
			wantFound: true, wantLow: -1, wantSteps: 11, wantEnd: SearchBracketed, // 1 2 4 [8] [8] 5.66 4.76 5.19 4.97 4.97 5.19
		},
		{
			name: "a prober error ends the search",
			probe: func(rate float64, _ int) (StepOutcome, error) {
				if rate > 2 {
					return StepOutcome{}, errBoom
				}
				return StepOutcome{Offered: rate, Goodput: rate, SLOHeld: true, Valid: true}, nil
			},
			wantErr: errBoom, wantLow: 2, wantSteps: 2, wantEnd: SearchError,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Search(tt.opts, tt.probe)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if res.Found != tt.wantFound {
				t.Errorf("found = %v, want %v (%s)", res.Found, tt.wantFound, res.Reason)
			}
			if tt.wantLow >= 0 && res.Low != tt.wantLow {
				t.Errorf("bracket low = %v, want %v", res.Low, tt.wantLow)
			}
			if (res.Level != 0) != res.Found || res.Found && res.Level != res.Low {
				t.Errorf("found %v with level %v (bracket low %v)", res.Found, res.Level, res.Low)
			}
			if len(res.Steps) != tt.wantSteps {
				t.Errorf("steps = %d, want %d: %+v", len(res.Steps), tt.wantSteps, res.Steps)
			}
			if res.End != tt.wantEnd {
				t.Errorf("end = %q, want %q (stop %q)", res.End, tt.wantEnd, res.Stop)
			}
			for _, w := range tt.wantStop {
				if !strings.Contains(res.Stop, w) {
					t.Errorf("stop = %q, want it to contain %q", res.Stop, w)
				}
			}
			if tt.wantBound != nil {
				b := res.Bound
				if b == nil || math.Abs(b.AtLeast-tt.wantBound.AtLeast) > 1e-9 || math.Abs(b.Unmeasurable-tt.wantBound.Unmeasurable) > 1e-9 ||
					strings.Join(b.Flags, ",") != strings.Join(tt.wantBound.Flags, ",") || b.Client != tt.wantBound.Client || b.Confirmed != tt.wantBound.Confirmed ||
					b.Shards != tt.wantBound.Shards || math.Abs(b.ShardsFor-tt.wantBound.ShardsFor) > 1e-9 {
					t.Errorf("bound = %+v, want %+v", b, tt.wantBound)
				}
				if res.Found || !res.Decided() || res.Estimate() != res.Low {
					t.Errorf("found %v, decided %v, estimate %v: want a decided lower bound %v", res.Found, res.Decided(), res.Estimate(), res.Low)
				}
				if txt := b.Text("req/s"); b != nil && (!strings.Contains(txt, "knee ≥ "+fmtLevel(b.AtLeast)+" req/s: this client keeps up to "+fmtLevel(b.AtLeast)+" req/s on this host") ||
					!strings.Contains(txt, fmt.Sprintf("shard the sweep (%d shards)", b.Shards))) {
					t.Errorf("bound text %q", txt)
				}
			} else if res.Bound != nil {
				t.Errorf("bound = %+v, want none", res.Bound)
			}
			if tt.wantEnd == SearchBracketed && res.Stop != "" {
				t.Errorf("stop = %q after a normal end", res.Stop)
			}
		})
	}
}

var errBoom = errors.New("boom")

func TestLadderKnee(t *testing.T) {
	ok := func(l float64) StepOutcome {
		return StepOutcome{Level: l, Offered: l, Goodput: l, Throughput: l, SLOHeld: true, Valid: true}
	}
	slow := func(l, g float64) StepOutcome { o := ok(l); o.Goodput = g; return o }
	sloFail := func(l float64) StepOutcome { o := ok(l); o.SLOHeld = false; return o }
	invalid := func(o StepOutcome) StepOutcome { o.Valid = false; return o }
	sampledOK := func(l float64, n int) StepOutcome { o := ok(l); o.Samples, o.NeedSamples = n, MinSLOSamples; return o }
	tests := []struct {
		name     string
		in       []StepOutcome
		want     Knee
		wantText string
	}{
		{
			name: "goodput falls below 90% at 8",
			in:   []StepOutcome{ok(1), ok(2), ok(4), slow(8, 7.1), slow(16, 7.5)},
			want: Knee{Found: true, Level: 4, Low: 4, Upper: 8, MaxGoodput: 7.5, MaxGoodputLevel: 16, State: KneeDecided},
		},
		{
			name: "exactly 90% passes",
			in:   []StepOutcome{ok(1), slow(10, 9), slow(20, 9.5)},
			want: Knee{Found: true, Level: 10, Low: 10, Upper: 20, MaxGoodput: 9.5, MaxGoodputLevel: 20, State: KneeDecided},
		},
		{
			name: "SLO p99 failure ends the ladder; unordered input",
			in:   []StepOutcome{sloFail(4), ok(1), ok(2), ok(8)},
			want: Knee{Found: true, Level: 2, Low: 2, Upper: 4, MaxGoodput: 8, MaxGoodputLevel: 8, NonMonotonic: true, State: KneeDecided},
		},
		{
			name: "invalid steps are skipped",
			in:   []StepOutcome{ok(1), invalid(slow(2, 0.1)), ok(4), slow(8, 1)},
			want: Knee{Found: true, Level: 4, Low: 4, Upper: 8, MaxGoodput: 4, MaxGoodputLevel: 4, State: KneeDecided},
		},
		{
			name: "all pass: lower bound",
			in:   []StepOutcome{ok(1), ok(2)},
			want: Knee{Low: 2, MaxGoodput: 2, MaxGoodputLevel: 2, State: KneeBound},
		},
		{
			// The lowest level ran and failed on valid evidence: a
			// decided knee of 0.
			name:     "none pass",
			in:       []StepOutcome{sloFail(1), sloFail(2)},
			want:     Knee{Upper: 1, MaxGoodput: 2, MaxGoodputLevel: 2, State: KneeDecided},
			wantText: "the lowest level run: a knee of 0",
		},
		{
			name: "no valid step",
			in:   []StepOutcome{invalid(ok(1))},
			want: Knee{State: KneeUndecided, Undecided: UndecidedNoValidLevel},
		},
		{
			// Issue 39: levels 2-8 client-saturated, 10 and 12 valid and
			// failing: "below 10" with no valid evidence under 10 is no
			// knee of 0.
			name:     "failing levels above invalid ones: undecided",
			in:       []StepOutcome{invalid(ok(2)), invalid(ok(4)), invalid(ok(6)), invalid(ok(8)), sloFail(10), sloFail(12)},
			want:     Knee{Upper: 10, MaxGoodput: 12, MaxGoodputLevel: 12, State: KneeUndecided, Undecided: UndecidedNoEvidenceBelow},
			wantText: "levels 2, 4, 6, 8 were invalid or too short to decide, so the knee is undecided",
		},
		{
			// Issue 39, background mode: passes too short to decide and
			// one failing level.
			name:     "failing level above too-short passes: undecided",
			in:       []StepOutcome{sampledOK(1, 40), sampledOK(2, 60), slow(4, 1)},
			want:     Knee{Upper: 4, MaxGoodput: 1, MaxGoodputLevel: 4, State: KneeUndecided, Undecided: UndecidedNoEvidenceBelow},
			wantText: "levels 1, 2 were invalid or too short to decide",
		},
		{
			name: "only too-short levels: undecided",
			in:   []StepOutcome{sampledOK(1, 40), sampledOK(2, 60)},
			want: Knee{State: KneeUndecided, Undecided: UndecidedTooShort},
		},
		{
			// An invalid level above the lowest failing one says nothing
			// of the knee 0 below it.
			name: "invalid above a failing lowest level: still a knee of 0",
			in:   []StepOutcome{sloFail(1), invalid(ok(2))},
			want: Knee{Upper: 1, MaxGoodput: 1, MaxGoodputLevel: 1, State: KneeDecided},
		},
		{
			name: "a level that served less than 90% of its rate is not the knee",
			in:   []StepOutcome{ok(1), ok(2), func() StepOutcome { o := ok(4); o.Served = 3.2; return o }(), slow(8, 1)},
			want: Knee{Found: true, Level: 2, Low: 2, Upper: 4, MaxGoodput: 4, MaxGoodputLevel: 4, State: KneeDecided},
		},
		{
			// nor gives the max goodput (issue 22 V9: it came from a
			// 23-request step too short to judge).
			name:     "a level too short for its SLO p99 decides nothing",
			in:       []StepOutcome{sampledOK(1, 200), sampledOK(2, 50), slow(4, 1)},
			want:     Knee{Low: 1, Upper: 4, MaxGoodput: 1, MaxGoodputLevel: 1, State: KneeBound},
			wantText: "level 2 was too short to decide",
		},
		{
			name: "max goodput is the measured (vLLM) goodput when given",
			in: []StepOutcome{ok(1), func() StepOutcome { o := slow(2, 1.9); o.MeasuredGoodput = 1.7; return o }(),
				func() StepOutcome { o := slow(4, 2.1); o.MeasuredGoodput = 1.6; return o }()},
			want: Knee{Found: true, Level: 2, Low: 2, Upper: 4, MaxGoodput: 1.7, MaxGoodputLevel: 2, State: KneeDecided},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := LadderKnee(tt.in, DefaultGoodputRatio)
			if !strings.Contains(got.Reason, tt.wantText) {
				t.Errorf("reason %q, want it to contain %q", got.Reason, tt.wantText)
			}
			got.Reason = ""
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestNormalizedOffsets(t *testing.T) {
	tests := []struct {
		name       string
		kind       string
		burstiness float64
	}{
		{"poisson", "poisson", 1},
		{"gamma, bursty", "gamma", 0.5},
		{"constant", "constant", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const rate, n = 270.0, 1350
			a, err := normalizedOffsets(tt.kind, rate, tt.burstiness, 7, n)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := normalizedOffsets(tt.kind, rate, tt.burstiness, 8, n)
			if len(a) != n {
				t.Fatalf("%d offsets, want %d", len(a), n)
			}
			// The last arrival is at exactly n / rate (5 s): the step offers
			// its requested rate.
			if want := time.Duration(float64(n) / rate * float64(time.Second)); (a[n-1] - want).Abs() > time.Microsecond {
				t.Errorf("last offset %v, want %v", a[n-1], want)
			}
			for i := 1; i < n; i++ {
				if a[i] < a[i-1] {
					t.Fatalf("offsets decrease at %d: %v < %v", i, a[i], a[i-1])
				}
			}
			if tt.kind != "constant" && a[n/2] == b[n/2] {
				t.Error("two seeds drew the same schedule")
			}
			p := schedule.NewOffsets(a)
			for i := range n {
				if got := p.Next(); got != a[i] {
					t.Fatalf("Next %d = %v, want %v", i, got, a[i])
				}
			}
			if p.Next() != time.Duration(math.MaxInt64) {
				t.Error("Next past the end is not the largest duration")
			}
		})
	}
}

// draining is a synthetic open-loop server of capacity c req/s measured by
// steps of window seconds (n = ceil(rate x window) requests, raised to the
// search's minRequests): a step ends drain seconds after its last arrival
// (or after the backlog is served above c), so a short step serves less
// than its rate even when the server keeps up. With blind keep-up, the
// keep-up figure the prober reports ignores the backlog (it says 100 % at
// any rate, as a drain correction can on short steps): only the served
// throughput shows the overload. got records every minRequests asked.
func draining(c, window, drain float64, blind bool, got *[]int) Prober {
	return func(rate float64, minRequests int) (StepOutcome, error) {
		*got = append(*got, minRequests)
		n := max(int(math.Ceil(rate*window)), minRequests)
		w := float64(n) / rate
		dur := math.Max(w, float64(n)/c) + drain
		served := float64(n) / dur
		keep := math.Min(1, c/rate)
		if blind {
			keep = 1
		}
		return StepOutcome{Offered: rate, Goodput: keep * rate, Throughput: math.Min(rate, c), Served: served,
			Requests: n, SLOHeld: true, Valid: true}, nil
	}
}

// TestSearchServedThroughput: the search never reports a knee at a level
// whose served throughput is below the keep-up threshold. A level that
// kept up but served too little is rerun longer (the drain of a short step
// alone can do that); the knee's own runs served at least 90 % of it.
func TestSearchServedThroughput(t *testing.T) {
	tests := []struct {
		name  string
		blind bool
	}{
		{name: "short steps: the drain alone makes the first runs serve too little"},
		{name: "keep-up blind to the backlog: only the served throughput fails", blind: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const c = 12.0
			var asked []int
			res, err := Search(SearchOptions{Start: 4}, draining(c, 5, 1, tt.blind, &asked))
			if err != nil {
				t.Fatal(err)
			}
			if !res.Found {
				t.Fatalf("knee not found: %s (steps %+v)", res.Reason, res.Steps)
			}
			if res.Level > c/DefaultGoodputRatio*(1+1e-6) || res.Level < c/DefaultGoodputRatio/1.1 {
				t.Errorf("knee %.4g, want within [%.4g, %.4g]", res.Level, c/DefaultGoodputRatio/1.1, c/DefaultGoodputRatio)
			}
			short := 0
			for i, o := range res.Steps {
				switch o.Verdict {
				case VerdictPass, VerdictConfirmed:
					if o.Served < DefaultGoodputRatio*o.Offered {
						t.Errorf("step %d at %.4g passed serving %.4g req/s", i, o.Level, o.Served)
					}
				case VerdictTooShort:
					short++
					if i+1 >= len(asked) || asked[i+1] <= o.Requests || !strings.Contains(o.Why, "rerun with") {
						t.Errorf("step %d (%d requests, %q) was not rerun longer: asked %v", i, o.Requests, o.Why, asked)
					}
				}
			}
			if short == 0 {
				t.Errorf("no run was too short to decide: %+v", res.Steps)
			}
		})
	}
}

// sampled is a synthetic latency-bound server of capacity c req/s measured
// by steps of window seconds with an SLO p99 that needs MinSLOSamples
// samples: every request is one sample. Its p99 holds at any rate on fewer
// than 100 samples (the p99 of a short step is about its maximum, which
// can miss the tail), and only up to c on enough.
func sampled(c, window float64, got *[]int) Prober {
	return func(rate float64, minRequests int) (StepOutcome, error) {
		*got = append(*got, minRequests)
		n := max(int(math.Ceil(rate*window)), minRequests)
		return StepOutcome{Offered: rate, Goodput: rate, Throughput: rate, Served: rate, Requests: n,
			Samples: n, NeedSamples: MinSLOSamples, SLOHeld: n < MinSLOSamples || rate <= c, Valid: true}, nil
	}
}

// TestSearchSamples: the search never decides on an SLO p99 from fewer than
// MinSLOSamples samples: it reruns the level longer, later levels run as
// long, and without longer reruns it stops with the knee not found.
func TestSearchSamples(t *testing.T) {
	t.Run("too-short levels are rerun longer", func(t *testing.T) {
		var asked []int
		res, err := Search(SearchOptions{Start: 2}, sampled(6, 5, &asked))
		if err != nil {
			t.Fatal(err)
		}
		if !res.Found || res.Level > 6 || res.Level < 6/1.1 {
			t.Fatalf("knee %+v, want found within [%.4g, 6] (steps %+v)", res.Knee, 6/1.1, res.Steps)
		}
		short := 0
		for i, o := range res.Steps {
			if o.Verdict == VerdictTooShort {
				short++
				continue
			}
			if o.Samples < MinSLOSamples {
				t.Errorf("step %d at %.4g decided (%s) on %d samples", i, o.Level, o.Verdict, o.Samples)
			}
		}
		// The first level needs two longer reruns (2 req/s x 5 s = 10
		// requests; at most 16 times longer each); the levels after it
		// are asked for as many requests from the start.
		if short == 0 || short > 2 {
			t.Errorf("%d too-short runs, want 1 or 2: %+v", short, res.Steps)
		}
		for i := short + 1; i < len(asked); i++ {
			if asked[i] < MinSLOSamples {
				t.Errorf("probe %d asked for %d requests after the search learned that %d samples are needed", i, asked[i], MinSLOSamples)
			}
		}
	})
	t.Run("without longer reruns the knee is not found", func(t *testing.T) {
		var asked []int
		res, err := Search(SearchOptions{Start: 2, Lengthen: -1}, sampled(6, 5, &asked))
		if err != nil {
			t.Fatal(err)
		}
		if res.Found || res.Level != 0 || res.End != SearchTooShort || len(res.Steps) != 1 ||
			!strings.Contains(res.Stop, "rate 2 req/s stayed too short") || !strings.Contains(res.Stop, "10 samples, fewer than the 100") {
			t.Errorf("knee %+v end %q stop %q steps %d", res.Knee, res.End, res.Stop, len(res.Steps))
		}
	})
	t.Run("a keep-up failure needs no samples", func(t *testing.T) {
		o := StepOutcome{Offered: 10, Goodput: 5, Served: 5, Samples: 3, NeedSamples: MinSLOSamples, SLOHeld: true, Valid: true}
		if v, why := o.judge(DefaultGoodputRatio); v != VerdictFail || !strings.Contains(why, "keep-up 50 %") {
			t.Errorf("judge = %q, %q; want a keep-up failure", v, why)
		}
	})
}

// TestSearchConfirm: the knee level is run a second time and both runs must
// pass. A level that passed by chance and fails its confirmation counts as
// a failure and the search goes on below it; the step budget keeps its last
// step for the confirmation; a knee that could not be confirmed is not
// stated.
func TestSearchConfirm(t *testing.T) {
	// fluke is a server of capacity 12 req/s (knee 12/0.9) whose first run
	// at 16 req/s passes by chance.
	fluke := func() Prober {
		seen := map[float64]int{}
		inner := saturating(12, false)
		return func(rate float64, n int) (StepOutcome, error) {
			o, err := inner(rate, n)
			if seen[rate]++; rate == 16 && seen[rate] == 1 {
				o.Goodput = rate
			}
			return o, err
		}
	}
	t.Run("a fluke pass fails its confirmation", func(t *testing.T) {
		res, err := Search(SearchOptions{}, fluke())
		if err != nil {
			t.Fatal(err)
		}
		if !res.Found || res.Level > 12/DefaultGoodputRatio*(1+1e-6) || res.Level < 12 || !res.NonMonotonic || res.End != SearchBracketed {
			t.Fatalf("knee %+v end %q, want found at about 13.3, non-monotonic (steps %+v)", res.Knee, res.End, res.Steps)
		}
		unconfirmed := false
		for _, o := range res.Steps {
			unconfirmed = unconfirmed || o.Level == 16 && o.Verdict == VerdictUnconfirmed
		}
		if !unconfirmed {
			t.Errorf("no unconfirmed run at 16: %+v", res.Steps)
		}
		if last := res.Steps[len(res.Steps)-2]; last.Level != res.Level || last.Verdict != VerdictConfirmed {
			t.Errorf("step %+v, want the confirmation of %v", last, res.Level)
		}
	})
	t.Run("the last step of the budget confirms a wider bracket", func(t *testing.T) {
		res, err := Search(SearchOptions{MaxSteps: 7}, saturating(12, false)) // 1 2 4 8 16 13.3, then 13.3 again
		if err != nil {
			t.Fatal(err)
		}
		if !res.Found || res.Upper != 16 || len(res.Steps) != 7 || res.End != SearchMaxSteps || !strings.Contains(res.Stop, "wider bracket") {
			t.Errorf("knee %+v end %q stop %q steps %d", res.Knee, res.End, res.Stop, len(res.Steps))
		}
	})
	t.Run("no step left to confirm: no knee", func(t *testing.T) {
		res, err := Search(SearchOptions{MaxSteps: 5}, saturating(12, false)) // 1 2 4 8 16
		if err != nil {
			t.Fatal(err)
		}
		if res.Found || res.Level != 0 || res.Low != 8 || res.Upper != 16 || res.End != SearchMaxSteps ||
			!strings.Contains(res.Reason, "8 was not confirmed") {
			t.Errorf("knee %+v end %q", res.Knee, res.End)
		}
	})
}

// TestKneeJSON: result.json states the knee with its bracket, and writes no
// knee.level when the knee was not found.
func TestKneeJSON(t *testing.T) {
	tests := []struct {
		name    string
		knee    Knee
		want    map[string]any
		missing []string
	}{
		{
			name: "found",
			knee: Knee{Found: true, Level: 5.7, Low: 5.7, Upper: 6.5},
			want: map[string]any{"found": true, "level": 5.7, "bracket_low": 5.7, "bracket_high": 6.5, "upper": 6.5},
		},
		{
			name:    "every level passed",
			knee:    Knee{Low: 2},
			want:    map[string]any{"found": false, "bracket_low": 2.0},
			missing: []string{"level", "bracket_high", "upper"},
		},
		{
			name:    "no level passed",
			knee:    Knee{Upper: 1},
			want:    map[string]any{"found": false, "bracket_high": 1.0},
			missing: []string{"level", "bracket_low"},
		},
		{
			name:    "passed and failed, not confirmed",
			knee:    Knee{Low: 4, Upper: 8},
			want:    map[string]any{"found": false, "bracket_low": 4.0, "bracket_high": 8.0},
			missing: []string{"level"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := &Result{Knee: tt.knee, KneeUnit: "req/s"}
			b := encodeResult(t, res)
			var top struct {
				Knee map[string]any `json:"knee"`
			}
			if err := json.Unmarshal(b, &top); err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.want {
				if top.Knee[k] != v {
					t.Errorf("knee.%s = %v, want %v", k, top.Knee[k], v)
				}
			}
			for _, k := range tt.missing {
				if v, ok := top.Knee[k]; ok {
					t.Errorf("knee.%s = %v, want it absent", k, v)
				}
			}
			back := decodeBack(t, b)
			if back.Knee != tt.knee {
				t.Errorf("read back %+v, want %+v", back.Knee, tt.knee)
			}
		})
	}
	// Schema 1 wrote the highest passing level as knee.level, found or not.
	back, err := DecodeResult(strings.NewReader(`{"llmprobe_result_schema": 1, "knee": {"found": false, "level": 2}}`))
	if err != nil {
		t.Fatal(err)
	}
	if back.Knee.Found || back.Knee.Level != 0 || back.Knee.Low != 2 {
		t.Errorf("schema 1 knee read back as %+v", back.Knee)
	}
}

// TestAttemptsText: the stop reason counts the invalid attempts, not every
// attempt (a too-short attempt that was lengthened was valid).
func TestAttemptsText(t *testing.T) {
	for _, c := range []struct {
		invalid, attempts int
		want              string
	}{
		{1, 1, "its only attempt"},
		{3, 3, "all 3 attempts"},
		{3, 4, "3 of its 4 attempts"},
	} {
		if got := attemptsText(c.invalid, c.attempts); got != c.want {
			t.Errorf("attemptsText(%d, %d) = %q, want %q", c.invalid, c.attempts, got, c.want)
		}
	}
}
