package report

import (
	"bytes"
	"fmt"

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
