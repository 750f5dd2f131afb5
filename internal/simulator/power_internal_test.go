package simulator

import (
	"math"
	"testing"
	"time"
)

func TestPowerMeterIntegrates(t *testing.T) {
	p := Power{GPUs: 2, IdleWatts: 50, WattsPerSeq: 10, WattsPerBatchToken: 0.5, LimitWatts: 400}
	t0 := time.Unix(1000, 0)
	m := newPowerMeter(p, t0)
	// 1 s idle, 2 s of 4 sequences and 100 tokens, 0.5 s over the limit, 1 s idle.
	m.set(t0.Add(time.Second), 4, 100)
	m.set(t0.Add(3*time.Second), 100, 2000) // 50 + (1000+1000)/2 = 1050 W, capped at 400
	m.set(t0.Add(3500*time.Millisecond), 0, 0)
	j, w := m.read(t0.Add(4500 * time.Millisecond))
	busy := 50 + (4*10+100*0.5)/2.0 // 95 W per GPU
	want := 50*1 + busy*2 + 400*0.5 + 50*1
	for i, x := range j {
		if math.Abs(x-want) > 1e-9 {
			t.Errorf("gpu %d: energy %v J, want %v", i, x, want)
		}
	}
	if w != 50 {
		t.Errorf("draw %v W at the end, want idle 50", w)
	}
	// No limit: the draw is uncapped.
	if got := (Power{IdleWatts: 1, WattsPerSeq: 2}).GPUWatts(3, 0); got != 7 {
		t.Errorf("GPUWatts without a limit = %v, want 7", got)
	}
}

func TestPowerValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    func(*Power)
		want string
	}{
		{"gpus", func(p *Power) { p.GPUs = 65 }, "--power.gpus must be in [1, 64], got 65"},
		{"negative idle", func(p *Power) { p.IdleWatts = -1 }, "--power.idle-watts must be in [0, 10000], got -1"},
		{"nan", func(p *Power) { p.WattsPerSeq = math.NaN() }, "--power.watts-per-seq must be in [0, 10000], got NaN"},
		{"limit below idle", func(p *Power) { p.LimitWatts = 10 }, "--power.limit-watts (10) must be >= --power.idle-watts (70)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultPower()
			tc.p(&p)
			err := p.Validate()
			if err == nil || err.Error() != tc.want {
				t.Fatalf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
	if err := DefaultPower().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
}
