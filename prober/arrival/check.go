package arrival

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// CheckResult is what Check measured on a series of gaps, beside what the
// process should give.
type CheckResult struct {
	Kind      string  `json:"kind"`
	N         int     `json:"n"`
	Mean      float64 `json:"mean_gap_seconds"`
	WantMean  float64 `json:"want_mean_gap_seconds"`
	CV        float64 `json:"cv"`      // coefficient of variation (std/mean, ddof=0)
	WantCV    float64 `json:"want_cv"` // 1/sqrt(burstiness); 1 for poisson, 0 for constant
	KS        float64 `json:"ks"`      // Kolmogorov-Smirnov statistic vs the model CDF; 0 for constant
	KSPValue  float64 `json:"ks_p_value"`
	MaxRelDev float64 `json:"max_rel_dev"` // constant only: max |gap - 1/rate| * rate
}

// Check compares observed gaps (successive differences of arrival offsets or
// of actual send times) with the process of the given kind and parameters:
// mean gap, coefficient of variation and, for poisson and gamma, the
// Kolmogorov-Smirnov statistic against the exponential or gamma CDF with its
// asymptotic p-value. It returns an error for invalid parameters or fewer
// than 2 gaps. Use CheckResult.Err to turn the figures into a verdict.
func Check(gaps []time.Duration, kind string, rate, burstiness float64) (CheckResult, error) {
	if err := Validate(kind, rate, burstiness); err != nil {
		return CheckResult{}, err
	}
	if len(gaps) < 2 {
		return CheckResult{}, fmt.Errorf("need at least 2 gaps, got %d", len(gaps))
	}
	xs := make([]float64, len(gaps))
	var sum float64
	for i, g := range gaps {
		xs[i] = g.Seconds()
		sum += xs[i]
	}
	n := float64(len(xs))
	mean := sum / n
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	res := CheckResult{Kind: kind, N: len(xs), Mean: mean, WantMean: 1 / rate}
	if mean > 0 {
		res.CV = math.Sqrt(ss/n) / mean
	}
	var cdf func(float64) float64
	switch kind {
	case KindPoisson:
		res.WantCV = 1
		cdf = func(x float64) float64 { return -math.Expm1(-rate * x) }
	case KindGamma:
		res.WantCV = 1 / math.Sqrt(burstiness)
		scale := 1 / (rate * burstiness)
		cdf = func(x float64) float64 { return RegularizedGammaP(burstiness, x/scale) }
	case KindConstant:
		for _, x := range xs {
			res.MaxRelDev = max(res.MaxRelDev, math.Abs(x*rate-1))
		}
		return res, nil
	}
	slices.Sort(xs)
	var d float64
	for i, x := range xs {
		f := cdf(x)
		d = max(d, f-float64(i)/n, float64(i+1)/n-f)
	}
	res.KS = d
	res.KSPValue = KolmogorovQ((math.Sqrt(n) + 0.12 + 0.11/math.Sqrt(n)) * d)
	return res, nil
}

// Err returns nil when the gaps are consistent with the process at
// significance alpha (e.g. 0.001), else an error saying what is off:
//   - poisson, gamma: the mean gap differs from 1/rate by more than the
//     two-sided z(alpha) standard errors (std of a gap = WantCV/rate), or the
//     KS p-value is below alpha;
//   - constant: the mean gap is off by more than 1 % or any gap deviates from
//     1/rate by more than 1 % of it.
func (c CheckResult) Err(alpha float64) error {
	switch c.Kind {
	case KindConstant:
		if math.Abs(c.Mean-c.WantMean) > 0.01*c.WantMean {
			return fmt.Errorf("mean gap %.6gs, want %.6gs (within 1%%)", c.Mean, c.WantMean)
		}
		if c.MaxRelDev > 0.01 {
			return fmt.Errorf("a gap deviates %.3g%% from %.6gs (allowed 1%%)", 100*c.MaxRelDev, c.WantMean)
		}
		return nil
	case KindPoisson, KindGamma:
		z := math.Sqrt2 * math.Erfinv(1-alpha)
		se := c.WantCV * c.WantMean / math.Sqrt(float64(c.N))
		if math.Abs(c.Mean-c.WantMean) > z*se {
			return fmt.Errorf("mean gap %.6gs, want %.6gs +- %.3gs (alpha %v, n %d)", c.Mean, c.WantMean, z*se, alpha, c.N)
		}
		if c.KSPValue < alpha {
			return fmt.Errorf("gaps do not follow the %s distribution: KS %.4g, p %.3g < alpha %v (n %d)", c.Kind, c.KS, c.KSPValue, alpha, c.N)
		}
		return nil
	default:
		return fmt.Errorf("unknown arrival %q", c.Kind)
	}
}

// KolmogorovQ is the survival function of the Kolmogorov distribution,
// Q(λ) = 2 Σ_{k>=1} (-1)^{k-1} exp(-2 k² λ²): the asymptotic p-value of a KS
// statistic D with λ = (√n + 0.12 + 0.11/√n)·D (Stephens' correction).
func KolmogorovQ(lambda float64) float64 {
	if lambda < 0.2 {
		return 1
	}
	var sum, sign float64 = 0, 1
	for k := 1; k <= 100; k++ {
		term := sign * math.Exp(-2*float64(k*k)*lambda*lambda)
		sum += term
		if math.Abs(term) < 1e-12*math.Abs(sum) {
			break
		}
		sign = -sign
	}
	return math.Min(1, math.Max(0, 2*sum))
}

// RegularizedGammaP is the regularized lower incomplete gamma function
// P(a, x) = γ(a, x)/Γ(a), the CDF of Gamma(a, 1) at x (series for x < a+1,
// Lentz's continued fraction otherwise). a must be > 0.
func RegularizedGammaP(a, x float64) float64 {
	switch {
	case x <= 0:
		return 0
	case math.IsInf(x, 1):
		return 1
	}
	lg, _ := math.Lgamma(a)
	if x < a+1 {
		ap, sum := a, 1/a
		del := sum
		for range 10000 {
			ap++
			del *= x / ap
			sum += del
			if math.Abs(del) < math.Abs(sum)*1e-15 {
				break
			}
		}
		return sum * math.Exp(-x+a*math.Log(x)-lg)
	}
	const tiny = 1e-300
	b := x + 1 - a
	c := 1 / tiny
	d := 1 / b
	h := d
	for i := 1; i <= 10000; i++ {
		an := -float64(i) * (float64(i) - a)
		b += 2
		d = an*d + b
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = b + an/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		del := d * c
		h *= del
		if math.Abs(del-1) < 1e-15 {
			break
		}
	}
	return 1 - math.Exp(-x+a*math.Log(x)-lg)*h
}
