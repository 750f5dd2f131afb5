package compare

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestBoundaries checks the O'Brien-Fleming-type Lan-DeMets boundaries
// against published values (one-sided alpha 0.025, equally spaced looks:
// Jennison and Turnbull (2000) table 7.5; R gsDesign::gsDesign(k, test.type=1,
// sfu=sfLDOF) and ldbounds give the same to 3 decimals) and the one-look
// design against 1.96.
func TestBoundaries(t *testing.T) {
	f := func(ts []float64, want []float64) {
		t.Helper()
		got, err := Boundaries(ts, SeqAlpha)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%v: got %v, want %v", ts, got, want)
		}
		for i := range want {
			if math.Abs(got[i]-want[i]) > 0.003 {
				t.Errorf("%v look %d: z %.4f, want %.4f (all: %v)", ts, i+1, got[i], want[i], got)
			}
		}
	}
	f([]float64{1}, []float64{1.9600})
	f([]float64{0.5, 1}, []float64{2.9626, 1.9686})
	f([]float64{1.0 / 3, 2.0 / 3, 1}, []float64{3.7103, 2.5114, 1.9930})
	f([]float64{0.2, 0.4, 0.6, 0.8, 1}, []float64{4.8769, 3.3569, 2.6803, 2.2898, 2.0310})

	if _, err := Boundaries([]float64{0.5, 0.5}, SeqAlpha); err == nil {
		t.Error("fractions that do not increase: no error")
	}
}

// TestSpentOBF checks the spending function at known points: nothing at 0,
// alpha at 1, and 2 − 2Φ(2.2414/√0.5) at 0.5.
func TestSpentOBF(t *testing.T) {
	for _, c := range []struct{ t, want float64 }{{0, 0}, {1, 0.025}, {0.5, 0.0015258}, {0.25, 0.0000074}} {
		if got := SpentOBF(c.t, SeqAlpha); math.Abs(got-c.want) > 2e-6 {
			t.Errorf("SpentOBF(%v) = %.7f, want %.7f", c.t, got, c.want)
		}
	}
	if z := ZOfConf(0.95); math.Abs(z-1.959964) > 1e-5 {
		t.Errorf("ZOfConf(0.95) = %v", z)
	}
	if c := ConfOfZ(1.959964); math.Abs(c-0.95) > 1e-6 {
		t.Errorf("ConfOfZ(1.96) = %v", c)
	}
}

// TestParseBudget reads --budget: off, a time, requests per side, both;
// a bad part is named.
func TestParseBudget(t *testing.T) {
	f := func(s string, want Budget, wantErr string) {
		t.Helper()
		got, err := ParseBudget(s)
		switch {
		case wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)):
			t.Errorf("%q: error %v, want %q", s, err, wantErr)
		case wantErr == "" && (err != nil || got != want):
			t.Errorf("%q: %+v (%v), want %+v", s, got, err, want)
		}
	}
	f("off", Budget{}, "")
	f("20m", Budget{Time: 20 * time.Minute}, "")
	f("2000", Budget{Requests: 2000}, "")
	f("20m,2000", Budget{Time: 20 * time.Minute, Requests: 2000}, "")
	f("2000, 90s", Budget{Time: 90 * time.Second, Requests: 2000}, "")
	f(DefaultBudget, Budget{Time: 20 * time.Minute, Requests: 5000}, "")
	f("0", Budget{}, `requests per side must be given once and be >= 1, got "0"`)
	f("20m,30m", Budget{}, `got "30m"`)
	f("soon", Budget{}, `want off, a duration (20m), a count of requests per side (2000) or both (20m,2000), got "soon"`)
	f("-5m", Budget{}, `got "-5m"`)
	if s := (Budget{Time: 20 * time.Minute, Requests: 2000}).String(); s != "20m0s,2000" {
		t.Errorf("String: %q", s)
	}
	if s := (Budget{}).String(); s != "off" {
		t.Errorf("String: %q", s)
	}
}

// TestConfText prints a level with the digits that tell it from 100 %.
func TestConfText(t *testing.T) {
	for conf, want := range map[float64]string{0.95: "95", 0.9992: "99.92", ConfOfZ(4.877): "99.99989", 0.5: "50"} {
		if got := ConfText(conf); got != want {
			t.Errorf("ConfText(%v) = %q, want %q", conf, got, want)
		}
	}
}

// TestBoundariesEarlyLook: a first look at 1/25 of the information spends
// next to nothing, so its boundary is MaxZ (finite, for result.json); the
// looks after it still spend the whole alpha.
func TestBoundariesEarlyLook(t *testing.T) {
	ts := make([]float64, 25)
	for i := range ts {
		ts[i] = float64(i+1) / 25
	}
	zs, err := Boundaries(ts, SeqAlpha)
	if err != nil {
		t.Fatal(err)
	}
	if zs[0] != MaxZ || zs[1] > MaxZ || zs[24] < 1.96 || zs[24] > 2.2 {
		t.Errorf("boundaries %v", zs)
	}
	for i := 2; i < 25; i++ {
		if zs[i] >= zs[i-1] {
			t.Errorf("look %d: z %.3f not below look %d's %.3f", i+1, zs[i], i, zs[i-1])
		}
	}
}

// TestLookPlan follows a sequential comparison's plan block by block: a
// budget of 60 blocks takes a look after the first block and then every
// 4th (at most MaxLooks), each at fraction blocks/60 with the pass
// boundary below the fail boundary (but at MaxZ, where both spend
// nothing), and the block that would pass the
// budget is the final look at fraction 1; a budget of 5 blocks looks after
// every block.
func TestLookPlan(t *testing.T) {
	f := func(blocks, wantEvery, wantLooks int) {
		t.Helper()
		p := &Procedure{Rounds: 4, Budget: Budget{Requests: blocks * 40}}
		lp := p.newLookPlan(MaxSequentialRounds)
		var looks []*Look
		for k := 1; k <= blocks; k++ {
			l := lp.next(k, 4*k, 40*k, time.Duration(k)*time.Second, time.Second)
			if l == nil {
				continue
			}
			looks = append(looks, l)
			if l.Final {
				break
			}
		}
		if lp.every != wantEvery || lp.seq.MaxLooks != wantLooks || len(looks) != wantLooks || lp.seq.MaxLooks > MaxLooks {
			t.Fatalf("%d blocks: every %d, %d looks of %d planned, want every %d and %d looks", blocks, lp.every, len(looks), lp.seq.MaxLooks,
				wantEvery, wantLooks)
		}
		for i, l := range looks {
			if l.Look != i+1 || !(l.ZPass > 0 && (l.ZPass < l.Z || l.Z == MaxZ)) || (i > 0 && !(l.Fraction > looks[i-1].Fraction)) {
				t.Errorf("%d blocks: look %+v", blocks, *l)
			}
		}
		last := looks[len(looks)-1]
		if !last.Final || last.Fraction != 1 || math.Abs(last.Spent-SeqAlpha) > 1e-12 || !strings.HasPrefix(lp.seq.Stopped, stoppedBudget) {
			t.Errorf("%d blocks: last look %+v, stopped %q", blocks, *last, lp.seq.Stopped)
		}
		if want := normQuantile(1 - PassAlpha); blocks == 1 && math.Abs(last.ZPass-want) > 1e-9 {
			t.Errorf("one block: z pass %.4f, want %.4f", last.ZPass, want)
		}
	}
	f(60, 4, 16) // looks after blocks 1, 5, 9, ..., 57 and the final 60
	f(5, 1, 5)
	f(1, 1, 1)
}

// TestPassIntervalAsymmetric: at a look with a pass boundary, a latency's
// interval reaches to its upper (worse) end at z_pass and its lower end
// at z; a rate's the other way round.
func TestPassIntervalAsymmetric(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	b, c := synthSide(defaultShape, 1, 1, rng), synthSide(defaultShape, 1, 1, rng)
	th, err := ParseThresholds("tpot_p99=10%,throughput=5%")
	if err != nil {
		t.Fatal(err)
	}
	at := func(z, zp float64) []Figure {
		return Compare(b, c, Options{Thresholds: th, Iters: 500, Z: z, ZPass: zp}).Figures
	}
	sym, asym := at(3, 3), at(3, 1.5)
	for i := range sym {
		s, a := sym[i], asym[i]
		worseWide, betterWide := s.CIHi-s.Change, s.Change-s.CILo
		worseNarrow, betterSame := a.CIHi-a.Change, a.Change-a.CILo
		if s.Name == FigureThroughput {
			worseWide, betterWide, worseNarrow, betterSame = betterWide, worseWide, betterSame, worseNarrow
		}
		if math.Abs(betterSame-betterWide) > 1e-12 || math.Abs(worseNarrow-worseWide/2) > 1e-9 {
			t.Errorf("%s: symmetric %+.4f [%+.4f, %+.4f], with z pass half of z %+.4f [%+.4f, %+.4f]", s.Name, s.Change, s.CILo, s.CIHi,
				a.Change, a.CILo, a.CIHi)
		}
	}
}
