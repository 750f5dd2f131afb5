package sweep

import (
	"errors"
	"math"
	"testing"
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
			if res.Upper > res.Level*1.1*(1+1e-6) {
				t.Errorf("bracket [%.4g, %.4g] wider than 10%%", res.Level, res.Upper)
			}
			if len(res.Steps) > tt.maxSteps {
				t.Errorf("took %d steps, want <= %d: %+v", len(res.Steps), tt.maxSteps, res.Steps)
			}
		})
	}
}

func TestSearchBounds(t *testing.T) {
	tests := []struct {
		name      string
		probe     Prober
		opts      SearchOptions
		wantFound bool
		wantLevel float64
		wantErr   error
		wantSteps int
	}{
		{
			name:  "everything passes up to MaxRate",
			probe: saturating(1e9, false), opts: SearchOptions{Start: 1, MaxRate: 16},
			wantLevel: 16, wantSteps: 5,
		},
		{
			name:  "nothing passes down to MinRate",
			probe: saturating(0.001, false), opts: SearchOptions{Start: 1, MinRate: 0.2},
			wantLevel: 0, wantSteps: 3, // 1, 0.5, 0.25
		},
		{
			name:  "MaxSteps stops the bracketing",
			probe: saturating(1e9, false), opts: SearchOptions{MaxSteps: 3},
			wantLevel: 4, wantSteps: 3,
		},
		{
			name: "invalid levels count as failing",
			probe: func(rate float64) (StepOutcome, error) {
				return StepOutcome{Offered: rate, Goodput: rate, Throughput: rate, SLOHeld: true, Valid: rate < 6}, nil
			},
			wantFound: false, wantSteps: 7, // 1 2 4 [8] 5.66 [6.73] [6.17]: bracket closed by invalid levels
		},
		{
			name: "a prober error ends the search",
			probe: func(rate float64) (StepOutcome, error) {
				if rate > 2 {
					return StepOutcome{}, errBoom
				}
				return StepOutcome{Offered: rate, Goodput: rate, SLOHeld: true, Valid: true}, nil
			},
			wantErr: errBoom, wantLevel: 2, wantSteps: 2,
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
			if tt.wantLevel != 0 && res.Level != tt.wantLevel {
				t.Errorf("level = %v, want %v", res.Level, tt.wantLevel)
			}
			if tt.wantLevel == 0 && tt.wantSteps == 7 && (res.Level >= 6 || res.Level < 6/1.1) {
				t.Errorf("level = %v, want in [5.45, 6)", res.Level)
			}
			if len(res.Steps) != tt.wantSteps {
				t.Errorf("steps = %d, want %d: %+v", len(res.Steps), tt.wantSteps, res.Steps)
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
