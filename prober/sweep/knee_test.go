package sweep

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// saturating is a synthetic server with capacity c req/s: below c it keeps
// up; above c it completes c req/s (throughput-bound) and, when sloBound, its
// SLO p99 fails as soon as the rate exceeds c even though throughput follows
// the rate (latency-bound).
func saturating(c float64, sloBound bool) Prober {
	return func(rate float64) (StepOutcome, error) {
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
		maxSteps int
	}{
		{name: "throughput-bound capacity 12", capacity: 12, maxSteps: 8},
		{name: "throughput-bound capacity 5.3", capacity: 5.3, maxSteps: 8},
		{name: "throughput-bound capacity 37, start 4", capacity: 37, opts: SearchOptions{Start: 4}, maxSteps: 8},
		{name: "first step fails: capacity 0.3", capacity: 0.3, maxSteps: 8},
		{name: "latency-bound capacity 12 (no hint)", capacity: 12, sloBound: true, maxSteps: 10},
		{name: "latency-bound capacity 100", capacity: 100, sloBound: true, maxSteps: 12},
		{name: "capacity exactly a doubling step", capacity: 8, maxSteps: 8},
		// The sweep starts from a throughput probe's estimate, which a
		// closed loop can put above the open-loop capacity.
		{name: "start from an over-estimate, latency-bound", capacity: 270, sloBound: true, opts: SearchOptions{Start: 334}, maxSteps: 7},
		{name: "start from an under-estimate, throughput-bound", capacity: 285, opts: SearchOptions{Start: 250}, maxSteps: 6},
		{name: "probe start (factor sqrt 2), latency-bound", capacity: 265, sloBound: true, opts: SearchOptions{Start: 334, Factor: math.Sqrt2}, maxSteps: 6},
		{name: "probe start (factor sqrt 2), throughput-bound", capacity: 285, opts: SearchOptions{Start: 334, Factor: math.Sqrt2}, maxSteps: 6},
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
			if len(res.Steps) > tt.maxSteps {
				t.Errorf("took %d steps, want <= %d: %+v", len(res.Steps), tt.maxSteps, res.Steps)
			}
		})
	}
}

func TestSearchBounds(t *testing.T) {
	saturated := []string{"client-saturated: send-lag p99 12 ms > 10 ms"}
	// invalidAbove6 is a server that keeps up at any rate, measured by a
	// client that cannot send 6 req/s or more on time.
	invalidAbove6 := func(rate float64) (StepOutcome, error) {
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
		return func(rate float64) (StepOutcome, error) {
			o, err := inner(rate)
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
		wantLevel float64
		wantErr   error
		wantSteps int
		wantEnd   string
		wantStop  []string
	}{
		{
			name:  "everything passes up to MaxRate",
			probe: saturating(1e9, false), opts: SearchOptions{Start: 1, MaxRate: 16},
			wantLevel: 16, wantSteps: 5, wantEnd: SearchMaxRate,
		},
		{
			name:  "nothing passes down to MinRate",
			probe: saturating(0.001, false), opts: SearchOptions{Start: 1, MinRate: 0.2},
			wantLevel: 0, wantSteps: 3, wantEnd: SearchMinRate, // 1, 0.5, 0.25
		},
		{
			name:  "MaxSteps stops the bracketing",
			probe: saturating(1e9, false), opts: SearchOptions{MaxSteps: 3},
			wantLevel: 4, wantSteps: 3, wantEnd: SearchMaxSteps, wantStop: []string{"3 steps ran"},
		},
		{
			name:  "an invalid level is rerun, not narrowed on",
			probe: flaky(), wantFound: true, wantEnd: SearchBracketed,
			wantLevel: -1, wantSteps: 8, // 1 2 4 [8] 8 16 13.3 (=12/0.9) 14.7: 8 ran twice
		},
		{
			name:  "a level that stays invalid stops the search and says why",
			probe: invalidAbove6, wantLevel: 4, wantSteps: 6, // 1 2 4 [8] [8] [8]
			wantEnd: SearchInvalid, wantStop: []string{"rate 8 req/s", "all 3 attempts", saturated[0]},
		},
		{
			name:  "no reruns with Retries < 0",
			probe: invalidAbove6, opts: SearchOptions{Retries: -1}, wantLevel: 4, wantSteps: 4,
			wantEnd: SearchInvalid, wantStop: []string{"rate 8 req/s was invalid in its only attempt"},
		},
		{
			name:  "the step budget runs out during reruns",
			probe: invalidAbove6, opts: SearchOptions{MaxSteps: 5}, wantLevel: 4, wantSteps: 5,
			wantEnd: SearchMaxSteps, wantStop: []string{"rerunning the invalid rate 8"},
		},
		{
			name: "a prober error ends the search",
			probe: func(rate float64) (StepOutcome, error) {
				if rate > 2 {
					return StepOutcome{}, errBoom
				}
				return StepOutcome{Offered: rate, Goodput: rate, SLOHeld: true, Valid: true}, nil
			},
			wantErr: errBoom, wantLevel: 2, wantSteps: 2, wantEnd: SearchError,
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
			if tt.wantLevel >= 0 && res.Level != tt.wantLevel {
				t.Errorf("level = %v, want %v", res.Level, tt.wantLevel)
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
	tests := []struct {
		name     string
		in       []StepOutcome
		want     Knee
		wantText string
	}{
		{
			name: "goodput falls below 90% at 8",
			in:   []StepOutcome{ok(1), ok(2), ok(4), slow(8, 7.1), slow(16, 7.5)},
			want: Knee{Found: true, Level: 4, Upper: 8, MaxGoodput: 7.5, MaxGoodputLevel: 16},
		},
		{
			name: "exactly 90% passes",
			in:   []StepOutcome{ok(1), slow(10, 9), slow(20, 9.5)},
			want: Knee{Found: true, Level: 10, Upper: 20, MaxGoodput: 9.5, MaxGoodputLevel: 20},
		},
		{
			name: "SLO p99 failure ends the ladder; unordered input",
			in:   []StepOutcome{sloFail(4), ok(1), ok(2), ok(8)},
			want: Knee{Found: true, Level: 2, Upper: 4, MaxGoodput: 8, MaxGoodputLevel: 8, NonMonotonic: true},
		},
		{
			name: "invalid steps are skipped",
			in:   []StepOutcome{ok(1), invalid(slow(2, 0.1)), ok(4), slow(8, 1)},
			want: Knee{Found: true, Level: 4, Upper: 8, MaxGoodput: 4, MaxGoodputLevel: 4},
		},
		{
			name: "all pass: lower bound",
			in:   []StepOutcome{ok(1), ok(2)},
			want: Knee{Level: 2, MaxGoodput: 2, MaxGoodputLevel: 2},
		},
		{
			name: "none pass",
			in:   []StepOutcome{sloFail(1), sloFail(2)},
			want: Knee{Upper: 1, MaxGoodput: 2, MaxGoodputLevel: 2},
		},
		{
			name: "no valid step",
			in:   []StepOutcome{invalid(ok(1))},
			want: Knee{},
		},
		{
			name: "max goodput is the measured (vLLM) goodput when given",
			in: []StepOutcome{ok(1), func() StepOutcome { o := slow(2, 1.9); o.MeasuredGoodput = 1.7; return o }(),
				func() StepOutcome { o := slow(4, 2.1); o.MeasuredGoodput = 1.6; return o }()},
			want: Knee{Found: true, Level: 2, Upper: 4, MaxGoodput: 1.7, MaxGoodputLevel: 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := LadderKnee(tt.in, DefaultGoodputRatio)
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
			p := &offsetProcess{offsets: a}
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
