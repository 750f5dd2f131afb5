package sweep

import (
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/prober/slo"
)

// bootLadder is a ladder of three levels of n requests each under a 100 ms
// TTFT SLO: 10 req/s passes clearly, 20 req/s has 2 % of its requests at
// 150 ms (its TTFT p99 breaks the SLO unless a resample draws fewer than 3
// of them), 40 req/s does not keep up.
func bootLadder(n int) (*runner, *Result) {
	sl := slo.SLO{TTFT: 100 * time.Millisecond}
	step := func(i int, level, dur float64, slow int, ratio float64) *Step {
		st := &Step{Index: i, Label: "rate=" + fmtLevel(level), Level: level, Round: 1, Mode: ModeOpen,
			Validity: Validity{Valid: true}}
		x := &st.Stats
		x.Requests, x.Completed, x.Duration = n, n, dur
		for k := range n {
			ttft := float32(50)
			if k < slow {
				ttft = 150
			}
			x.kneeSamples = append(x.kneeSamples, kneeSample{ttft: ttft, tpot: 10, e2el: ttft + 100, ok: true, good: ttft <= 100})
		}
		x.Good = n - slow
		x.RequestThroughput, x.RequestGoodput = float64(n)/dur, float64(x.Good)/dur
		x.GoodputRatio = ratio * float64(x.Good) / float64(n)
		x.KneeGoodput, x.KneeThroughput = x.GoodputRatio*level, ratio*level
		p99 := 50.0
		if slow >= 3 {
			p99 = 150
		}
		x.TTFT.N, x.TTFT.P99 = n, p99
		x.SLOChecks = []SLOCheck{{Metric: "ttft", ThresholdMS: 100, P99MS: p99, Held: p99 <= 100, Reliable: true}}
		x.SLOHeld = p99 <= 100
		return st
	}
	r := &runner{cfg: Config{SLO: sl, Rounds: 1}, levels: []float64{10, 20, 40}}
	r.steps = []*Step{step(0, 10, float64(n)/10, 0, 1), step(1, 20, float64(n)/20, n/50, 1), step(2, 40, float64(n)/20, 0, 0.5)}
	res := &Result{Steps: r.steps}
	var outcomes []StepOutcome
	for i, lv := range r.levels {
		outcomes = append(outcomes, aggregate("", lv, ModeOpen, r.steps[i:i+1], DefaultGoodputRatio).Outcome)
	}
	res.Knee = LadderKnee(outcomes, DefaultGoodputRatio)
	return r, res
}

// TestKneeBootstrap checks that the interval reaches the next level when a
// resample of its requests can let it pass, and stays at the knee when none
// can.
func TestKneeBootstrap(t *testing.T) {
	r, res := bootLadder(200)
	if !res.Knee.Found || res.Knee.Level != 10 || res.Knee.Upper != 20 {
		t.Fatalf("knee %+v, want 10 below a failing 20", res.Knee)
	}
	ki := r.kneeBootstrap(res, 1000, 1)
	if ki == nil || ki.Lo != 10 || ki.Hi != 20 || ki.Located != 1000 || len(ki.Resampled) != 3 || !ki.Contains(10) {
		t.Fatalf("interval %+v, want 10–20 (a resample with fewer than 3 slow requests lets 20 pass)", ki)
	}
	// Without the slow requests 20 passes and 40 fails on keep-up, which
	// no resample changes: the interval is the knee alone.
	r.steps[1].Stats.kneeSamples = r.steps[0].Stats.kneeSamples
	r.steps[1].Stats.Good, r.steps[1].Stats.GoodputRatio, r.steps[1].Stats.SLOHeld = 200, 1, true
	r.steps[1].Stats.SLOChecks[0].Held, r.steps[1].Stats.TTFT.P99 = true, 50
	res.Knee = Knee{Found: true, Level: 20, Low: 20, Upper: 40}
	if ki := r.kneeBootstrap(res, 500, 1); ki == nil || ki.Lo != 20 || ki.Hi != 20 || len(ki.Resampled) != 3 {
		t.Errorf("interval %+v, want 20 alone, levels 10, 20 and 40 resampled", ki)
	}
}

// BenchmarkKneeBootstrap times the knee's bootstrap over three steps of
// 2,000 requests (1,000 replicates).
func BenchmarkKneeBootstrap(b *testing.B) {
	r, res := bootLadder(2000)
	for b.Loop() {
		r.kneeBootstrap(res, DefaultKneeIters, 1)
	}
}
