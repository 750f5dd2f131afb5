package compare

import (
	"math"
	"testing"
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
