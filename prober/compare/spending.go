package compare

import (
	"fmt"
	"math"
)

// The group-sequential design of a comparison (docs/compare.md "Sequential
// rounds"): after each block of rounds (a look) every figure's interval is
// judged at a boundary z_k that the Lan-DeMets alpha-spending function of
// O'Brien-Fleming type sets, so that the chance of a wrong decision stays
// at most SeqAlpha per direction however many looks are taken.

// SeqAlpha is the one-sided error of each of a figure's two decisions
// (pass: the change is below its limit; fail: the change is above no
// change), spent over the looks: the fixed design's 95 % two-sided
// interval spends 2.5 % per side at its one look.
const SeqAlpha = 0.025

// PassAlpha is the one-sided error of a sequential comparison's pass
// decision (an equivalence test: the interval's worse end below the
// limit), spent over the looks like SeqAlpha: the two one-sided tests'
// convention (Schuirmann 1987; a 90 % interval inside the margin, as
// bioequivalence is shown), twice the fail decision's SeqAlpha. A wrong
// pass needs the true change at or beyond the limit; a wrong fail (an
// identical candidate rejected, the error a canary pays for most often)
// keeps SeqAlpha. The fixed design (--budget off) keeps SeqAlpha for
// both.
const PassAlpha = 0.05

// DesignOBF names the spending function in result.json.
const DesignOBF = "lan-demets-obrien-fleming"

// normCDF is the standard normal distribution function Φ.
func normCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// normQuantile is Φ⁻¹(p), for p in (0, 1).
func normQuantile(p float64) float64 { return math.Sqrt2 * math.Erfinv(2*p-1) }

// SpentOBF is the one-sided alpha spent by information fraction t (in
// [0, 1]) under Lan and DeMets' O'Brien-Fleming-type spending function
// α(t) = 2 − 2Φ(Φ⁻¹(1 − α/2) / √t) of a design of total one-sided level
// alpha: almost nothing early, alpha at t = 1.
func SpentOBF(t, alpha float64) float64 {
	if t <= 0 {
		return 0
	}
	if t >= 1 {
		return alpha
	}
	return 2 - 2*normCDF(normQuantile(1-alpha/2)/math.Sqrt(t))
}

// MaxZ is the boundary of a look that spends no alpha (an interval of
// ±40 standard errors: nothing decides there). It keeps result.json's
// numbers finite.
const MaxZ = 40

// seqGrid is the number of points per unit of standard deviation of the
// numerical integration of Boundaries.
const seqGrid = 24

// Boundaries returns the upper one-sided boundaries z_1 … z_K of a
// group-sequential design of one-sided level alpha whose looks are at the
// increasing information fractions ts (the last at most 1), with
// O'Brien-Fleming-type Lan-DeMets spending (SpentOBF): z_k is set so that
// the chance, under no difference, that the standardised statistic first
// crosses at look k is SpentOBF(t_k) − SpentOBF(t_{k−1}). The statistic
// is a Brownian motion in information time, so the joint law of the looks
// is computed exactly by recursive numerical integration of the density of
// the paths that have not crossed (Armitage, McPherson and Rowe 1969; as
// R's ldbounds and gsDesign). With one look at t = 1 the boundary is
// Φ⁻¹(1 − alpha): 1.96 at alpha 0.025.
func Boundaries(ts []float64, alpha float64) ([]float64, error) {
	zs := make([]float64, 0, len(ts))
	var grid, dens []float64 // the sub-density of S(t_{k−1}) on grid (values of S, not of Z)
	prevT, prevSpent := 0.0, 0.0
	for k, t := range ts {
		if !(t > prevT) || t > 1 {
			return nil, fmt.Errorf("information fractions must increase in (0, 1], got %v at look %d", t, k+1)
		}
		spend := SpentOBF(t, alpha) - prevSpent
		dt := t - prevT
		sd := math.Sqrt(dt)
		// cross is the chance of crossing c (in S units) at this look
		// without crossing before.
		cross := func(c float64) float64 {
			if k == 0 {
				return 1 - normCDF(c/sd)
			}
			return integrate(grid, dens, func(s float64) float64 { return 1 - normCDF((c-s)/sd) })
		}
		// A look that spends (next to) nothing gets the boundary MaxZ: no
		// interval there can decide.
		c := MaxZ * math.Sqrt(t)
		if spend > 1e-15 {
			lo, hi := -10*math.Sqrt(t), MaxZ*math.Sqrt(t)
			for range 200 {
				mid := (lo + hi) / 2
				if cross(mid) > spend {
					lo = mid
				} else {
					hi = mid
				}
			}
			c = (lo + hi) / 2
		}
		zs = append(zs, c/math.Sqrt(t))
		if k == len(ts)-1 {
			break
		}
		// The density of S(t) below c: the old density convolved with
		// N(0, dt), on a new grid from 10 sd below to c (at most 10 sd
		// above: the paths beyond are negligible).
		top := math.Min(c, 10*math.Sqrt(t))
		bottom := -10 * math.Sqrt(t)
		n := int((top-bottom)/math.Sqrt(t)*seqGrid) + 1
		ng, nd := make([]float64, n), make([]float64, n)
		for i := range n {
			y := bottom + (top-bottom)*float64(i)/float64(n-1)
			ng[i] = y
			if k == 0 {
				nd[i] = normPDF(y/sd) / sd
				continue
			}
			nd[i] = integrate(grid, dens, func(s float64) float64 { return normPDF((y-s)/sd) / sd })
		}
		grid, dens = ng, nd
		prevT, prevSpent = t, SpentOBF(t, alpha)
	}
	return zs, nil
}

func normPDF(x float64) float64 { return math.Exp(-x*x/2) / math.Sqrt(2*math.Pi) }

// integrate is ∫ dens(s) g(s) ds over grid by the trapezoid rule.
func integrate(grid, dens []float64, g func(float64) float64) float64 {
	sum := 0.0
	for i := 1; i < len(grid); i++ {
		h := grid[i] - grid[i-1]
		sum += h * (dens[i-1]*g(grid[i-1]) + dens[i]*g(grid[i])) / 2
	}
	return sum
}

// ConfOfZ is the two-sided level of an interval whose ends lie z standard
// errors from its centre: 1 − 2(1 − Φ(z)).
func ConfOfZ(z float64) float64 { return 1 - 2*(1-normCDF(z)) }

// ZOfConf is the z of a two-sided level conf: Φ⁻¹((1 + conf) / 2).
func ZOfConf(conf float64) float64 { return normQuantile((1 + conf) / 2) }
