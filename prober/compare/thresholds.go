package compare

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/llmprobe/llmprobe/prober/stats"
)

// Compared figures besides latency percentiles (Threshold.Metric).
const (
	// FigureGoodput is the good-request rate (needs an SLO); a drop is a
	// regression.
	FigureGoodput = "goodput"
	// FigureThroughput is the completed-request rate; a drop is a
	// regression.
	FigureThroughput = "throughput"
	// FigureCost is the cost per million good output tokens (needs both
	// sides' price per hour); an increase is a regression.
	FigureCost = "cost"
	// FigureEnergy is the joules per good output token (needs both sides'
	// GPU energy: --baseline-gpu-metrics-url, --candidate-gpu-metrics-url);
	// an increase is a regression. Opt-in, as cost: Verdict.Energy reports
	// it, never judged, whatever the thresholds.
	FigureEnergy = "energy"
)

// Threshold is one compared figure and the largest regression allowed: a
// latency percentile ("tpot_p99": Metric MetricTPOT, P 99) or a rate
// (Metric FigureGoodput or FigureThroughput, P 0).
type Threshold struct {
	Metric string
	P      float64
	// Max is the largest relative regression allowed (0.1 = 10 %): an
	// increase of a latency, a drop of a rate.
	Max float64
}

// Name is the figure's name as --max-regression writes it ("ttft_p99",
// "goodput").
func (t Threshold) Name() string {
	if t.P == 0 {
		return t.Metric
	}
	return t.Metric + "_p" + stats.PercentileKey(t.P)
}

// Latency reports whether the figure is a latency percentile (higher is
// worse).
func (t Threshold) Latency() bool { return t.P != 0 }

// HigherWorse reports whether an increase of the figure is a regression: a
// latency percentile, the cost or the energy; a drop is for goodput and
// throughput.
func (t Threshold) HigherWorse() bool {
	return t.Latency() || t.Metric == FigureCost || t.Metric == FigureEnergy
}

// DefaultThresholds is --max-regression's default text.
const DefaultThresholds = "ttft_p99=10%,tpot_p99=10%,goodput=5%"

// ParseThresholds parses --max-regression: comma-separated NAME=LIMIT pairs,
// NAME a latency percentile (ttft_p99, tpot_p90, e2el_p50, ...), goodput,
// throughput, cost or energy, LIMIT a percentage ("10%") or a fraction ("0.1").
func ParseThresholds(s string) ([]Threshold, error) {
	var out []Threshold
	seen := map[string]bool{}
	for _, pair := range strings.Split(s, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		name, lim, ok := strings.Cut(pair, "=")
		if !ok {
			return nil, fmt.Errorf("%q is not NAME=LIMIT (e.g. tpot_p99=10%%)", pair)
		}
		t, err := parseFigure(strings.TrimSpace(name))
		if err != nil {
			return nil, err
		}
		lim = strings.TrimSpace(lim)
		pct := strings.HasSuffix(lim, "%")
		v, err := strconv.ParseFloat(strings.TrimSuffix(lim, "%"), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return nil, fmt.Errorf("%s: limit %q is not a percentage >= 0 (e.g. 10%%)", name, lim)
		}
		if pct {
			v /= 100
		}
		t.Max = v
		if seen[t.Name()] {
			return nil, fmt.Errorf("%s given twice", t.Name())
		}
		seen[t.Name()] = true
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no NAME=LIMIT pair (e.g. %s)", DefaultThresholds)
	}
	return out, nil
}

func parseFigure(name string) (Threshold, error) {
	switch name {
	case FigureGoodput, FigureThroughput, FigureCost, FigureEnergy:
		return Threshold{Metric: name}, nil
	}
	m, p, ok := strings.Cut(name, "_p")
	if ok {
		switch m {
		case MetricTTFT, MetricTPOT, MetricE2EL:
			v, err := strconv.ParseFloat(p, 64)
			if err == nil && v > 0 && v < 100 {
				return Threshold{Metric: m, P: v}, nil
			}
		}
	}
	return Threshold{}, fmt.Errorf("unknown figure %q (ttft_pNN, tpot_pNN, e2el_pNN, goodput, throughput, cost or energy)", name)
}

// HasFigure reports whether ths compares the figure metric (FigureGoodput,
// FigureCost, ...).
func HasFigure(ths []Threshold, metric string) bool {
	for _, t := range ths {
		if t.Metric == metric {
			return true
		}
	}
	return false
}

// FormatThresholds writes ths as --max-regression reads it
// (ParseThresholds gives ths back exactly): NAME=LIMIT pairs, the limit a
// percentage when that reads back to the same fraction, else the fraction.
func FormatThresholds(ths []Threshold) string {
	parts := make([]string, 0, len(ths))
	for _, t := range ths {
		pct := strconv.FormatFloat(100*t.Max, 'g', -1, 64)
		lim := pct + "%"
		if v, err := strconv.ParseFloat(pct, 64); err != nil || v/100 != t.Max {
			lim = strconv.FormatFloat(t.Max, 'g', -1, 64)
		}
		parts = append(parts, t.Name()+"="+lim)
	}
	return strings.Join(parts, ",")
}

// DropGoodput returns ths without the goodput figure (without an SLO there
// is no good request to count).
func DropGoodput(ths []Threshold) []Threshold {
	var out []Threshold
	for _, t := range ths {
		if t.Metric != FigureGoodput {
			out = append(out, t)
		}
	}
	return out
}
