package report

import (
	"bytes"
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/plot/vg/draw"

	"github.com/llmprobe/llmprobe/prober/sweep"
)

// energySentence explains the energy figures in one sentence.
const energySentence = "Energy is the GPUs' energy counter (DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION) from the reading after " +
	"the idle wait to the reading after the step's after snapshot, summed over the selected GPUs (method power-x-time: " +
	"the power gauge integrated instead, less exact); joules per good output token divide it by the output tokens of " +
	"requests that met every SLO, so SLO misses make the tokens that count dearer. Idle power in the window counts; " +
	"host CPU, memory, networking and cooling do not (docs/measurement.md)."

// energyRecorded reports whether any step recorded energy.
func energyRecorded(res *sweep.Result) bool {
	for _, st := range res.Steps {
		if st.Energy != nil && st.Energy.NotRecorded == "" {
			return true
		}
	}
	return false
}

func ptrText(v *float64) string {
	if v == nil {
		return "none"
	}
	return num(*v)
}

// writeEnergy writes the "Energy" subsection of Results: each step's GPU
// energy, power and joules per good output token, and the figure at the
// knee; without a GPU source, one line saying why it is not recorded
// (nothing for a result written before energy was recorded).
func writeEnergy(b *bytes.Buffer, res *sweep.Result) {
	if len(res.Steps) == 0 || res.Steps[0].Energy == nil {
		return // a result written before energy was recorded
	}
	b.WriteString("### Energy\n\n")
	if !energyRecorded(res) {
		why := "no step recorded it"
		if e := res.Steps[0].Energy; e != nil && e.NotRecorded != "" {
			why = e.NotRecorded
		}
		fmt.Fprintf(b, "Energy: not-recorded (%s).\n\n", why)
		return
	}
	b.WriteString(energySentence + "\n\n")
	b.WriteString("| step | level | method | GPUs | J | mean W | peak W | J per output token | J per good output token | Wh per 1000 good requests | valid |\n" +
		"|---|--:|---|--:|--:|--:|--:|--:|--:|--:|---|\n")
	for _, st := range res.Steps {
		valid := "yes"
		if !st.InKnee() {
			valid = "**no**"
		}
		e := st.Energy
		if e == nil || e.NotRecorded != "" {
			why := "not-recorded"
			if e != nil {
				why += ": " + e.NotRecorded
			}
			fmt.Fprintf(b, "| %s | %s | %s | | | | | | | | %s |\n", stepName(st), num(st.Level), why, valid)
			continue
		}
		peak := "none"
		if e.PeakW > 0 {
			peak = num(e.PeakW)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %d | %s | %s | %s | %s | %s | %s | %s |\n", stepName(st), num(st.Level), e.Method, e.GPUs,
			num(e.Joules), num(e.MeanW), peak, ptrText(e.JoulesPerOutputToken), ptrText(e.JoulesPerGoodOutputToken),
			ptrText(e.WhPer1000GoodRequests), valid)
	}
	b.WriteString("\n")
	fmt.Fprintf(b, "![energy per good output token and GPU power vs %s](%s)\n\n", xName(res), EnergyPlotFile)
	if j, ok := res.KneeEnergyPerGoodToken(); ok {
		fmt.Fprintf(b, "At the knee (%s): **%s J per good output token**.\n\n", levelText(res, res.Knee.Level), num(j))
	} else if res.Knee.Found {
		fmt.Fprintf(b, "At the knee (%s): no valid step recorded a joule per good output token.\n\n", levelText(res, res.Knee.Level))
	}
}

// energyLines are the terminal table's energy line (none when no step
// recorded energy).
func energyLines(res *sweep.Result) []string {
	if !energyRecorded(res) {
		return nil
	}
	if j, ok := res.KneeEnergyPerGoodToken(); ok {
		return []string{fmt.Sprintf("energy: %s J per good output token at the knee (%s); per step in analysis.md", num(j), levelText(res, res.Knee.Level))}
	}
	return []string{"energy: per step in analysis.md (no knee figure)"}
}

// EnergyPlotFile is the energy plot of a run directory, written when a
// step recorded energy.
const EnergyPlotFile = "energy.svg"

// Energy plot titles, also used by tests and docs.
const (
	EnergyTitle = "Energy per good output token"
	PowerTitle  = "GPU power"
)

// energyValue returns get of st's energy, NaN when not recorded (points and
// levelSeries drop it).
func energyValue(get func(*sweep.StepEnergy) *float64) func(*sweep.Step) float64 {
	return func(st *sweep.Step) float64 {
		if e := st.Energy; e != nil && e.NotRecorded == "" {
			if v := get(e); v != nil {
				return *v
			}
		}
		return math.NaN()
	}
}

// EnergySVG draws energy.svg when a step recorded energy (ok false
// otherwise): joules per good output token (and per output token, dashed)
// against the offered rate or concurrency with the knee marked, and the
// mean and peak GPU power below. Invalid steps are crosses.
func EnergySVG(res *sweep.Result) (svg []byte, ok bool, err error) {
	if !energyRecorded(res) {
		return nil, false, nil
	}
	x := "offered rate (req/s)"
	if closed(res) {
		x = "concurrency"
	}
	good := energyValue(func(e *sweep.StepEnergy) *float64 { return e.JoulesPerGoodOutputToken })
	all := energyValue(func(e *sweep.StepEnergy) *float64 { return e.JoulesPerOutputToken })
	top := newPlot(EnergyTitle+" vs "+strings.TrimSuffix(x, " (req/s)"), x, "joules per token")
	g, a, bad := levelSeries(res, isValid, good), levelSeries(res, isValid, all), points(res, isInvalid, good)
	if err := addLine(top, "J per good output token", g, colGoodput, nil, draw.CircleGlyph{}); err != nil {
		return nil, false, err
	}
	if err := addLine(top, "J per output token", a, colThroughput, dashed, draw.SquareGlyph{}); err != nil {
		return nil, false, err
	}
	if err := addInvalid(top, bad, true); err != nil {
		return nil, false, err
	}
	hi := maxY(g, a, bad)
	if err := addKnee(top, res, 0, hi); err != nil {
		return nil, false, err
	}
	top.Y.Min, top.Y.Max = 0, hi*legendRoom
	top.X.Min, top.X.Max = xRange(g, a, bad)

	bottom := newPlot(PowerTitle+" vs "+strings.TrimSuffix(x, " (req/s)"), x, "W")
	watts := func(f func(*sweep.StepEnergy) float64) func(*sweep.Step) float64 {
		return energyValue(func(e *sweep.StepEnergy) *float64 {
			if v := f(e); v > 0 {
				return &v
			}
			return nil
		})
	}
	mean := levelSeries(res, isValid, watts(func(e *sweep.StepEnergy) float64 { return e.MeanW }))
	peak := levelSeries(res, isValid, watts(func(e *sweep.StepEnergy) float64 { return e.PeakW }))
	badW := points(res, isInvalid, watts(func(e *sweep.StepEnergy) float64 { return e.MeanW }))
	if err := addLine(bottom, "mean power", mean, colGoodput, nil, draw.CircleGlyph{}); err != nil {
		return nil, false, err
	}
	if err := addLine(bottom, "peak power reading", peak, colSLO, dashed, draw.TriangleGlyph{}); err != nil {
		return nil, false, err
	}
	if err := addInvalid(bottom, badW, true); err != nil {
		return nil, false, err
	}
	hiW := maxY(mean, peak, badW)
	if err := addKnee(bottom, res, 0, hiW); err != nil {
		return nil, false, err
	}
	bottom.Y.Min, bottom.Y.Max = 0, hiW*legendRoom
	bottom.X.Min, bottom.X.Max = xRange(mean, peak, badW)
	svg, err = savePanels(&panel{Plot: top, top: hi}, &panel{Plot: bottom, top: hiW})
	return svg, err == nil, err
}
