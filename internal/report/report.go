// Package report turns a finished (or interrupted) sweep into what people
// read: analysis.md (fingerprint summary, per-step table, spread over
// rounds, validity, knee and max goodput, latency and token distributions,
// server-side deltas, "not-recorded" explanations and a plain verdict), the
// SVG plots beside it (goodput.svg, latency.svg, drawn with gonum/plot), the
// terminal table, and a progress reporter for steps in flight.
//
// Its input is the sweep's own *sweep.Result: the one a sweep just returned,
// or one read back from a run directory with Load (result.json and
// manifest.json), through the same code path. The package computes nothing
// that the sweep decides (statistics, validity, the knee) and only words and
// draws it. Latencies are in milliseconds, rates in requests per second.
package report

import (
	"math"
	"strings"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// MaxReproducibleSpread is the relative spread (see sweep.Range.Rel) of
// TTFT p99 or goodput over a level's rounds above which the report warns
// that the level is not reproducible at the sweep's step length.
const MaxReproducibleSpread = 0.10

// FileWriter is the part of *artifacts.Run that WriteFiles needs.
type FileWriter interface {
	WriteFile(name string, data []byte) error
}

var _ FileWriter = (*artifacts.Run)(nil)

// WriteFiles renders analysis.md, goodput.svg and latency.svg of res (and
// energy.svg when a step recorded energy) and writes them through w
// (atomically, with an *artifacts.Run).
func WriteFiles(w FileWriter, res *sweep.Result) error {
	if err := w.WriteFile(artifacts.AnalysisFile, Analysis(res)); err != nil {
		return err
	}
	g, err := GoodputSVG(res)
	if err != nil {
		return err
	}
	if err := w.WriteFile(artifacts.GoodputPlotFile, g); err != nil {
		return err
	}
	l, err := LatencySVG(res)
	if err != nil {
		return err
	}
	if err := w.WriteFile(artifacts.LatencyPlotFile, l); err != nil {
		return err
	}
	e, ok, err := EnergySVG(res) // energy.go
	if err != nil || !ok {
		return err
	}
	return w.WriteFile(EnergyPlotFile, e)
}

// noGoodput is what the tables and analysis.md print for a goodput when no
// SLO is set: result.json's request_goodput is null then, and good requests
// per second would only repeat the throughput of the successful ones.
const noGoodput = "—"

// goodputText formats a goodput in req/s, noGoodput without an SLO.
func goodputText(res *sweep.Result, v float64) string {
	if !sloSet(res) {
		return noGoodput
	}
	return num(v)
}

// contentTTFTDiffers is the relative difference between the TTFT to the
// first event and the TTFT to the first text above which the reports show
// both (chat's role chunk can come long before the first token of text).
const contentTTFTDiffers = 0.10

// contentTTFT reports whether any step's TTFT to the first text (p50 or
// p99) differs from its TTFT by more than contentTTFTDiffers, or rests on
// fewer requests (some had no text): the tables then show it beside the
// TTFT.
func contentTTFT(res *sweep.Result) bool {
	differs := func(a, b float64) bool { return math.Abs(a-b) > contentTTFTDiffers*math.Abs(b) }
	for _, st := range res.Steps {
		x, c := st.Stats.TTFT, st.Stats.TTFTText
		if x.N > 0 && c.N > 0 && (differs(c.P50, x.P50) || differs(c.P99, x.P99) || c.N != x.N) {
			return true
		}
	}
	return false
}

// searchNote is a step's search verdict for the step tables' note column
// ("" for a plain pass or fail, and for a ladder).
func searchNote(st *sweep.Step) string {
	if st.Search == nil {
		return ""
	}
	switch st.Search.Verdict {
	case sweep.VerdictTooShort:
		return "too short to decide: rerun longer"
	case sweep.VerdictConfirmed:
		return "confirmation"
	case sweep.VerdictUnconfirmed:
		return "failed its confirmation"
	case sweep.VerdictRepeat:
		v, _, _ := strings.Cut(strings.TrimPrefix(st.Search.Why, "repeat: "), ":")
		return "repeat: " + v // "repeat: pass", "repeat: fail"
	}
	return ""
}

// ratio is the knee rule's goodput ratio.
const ratio = sweep.DefaultGoodputRatio

// closed reports whether levels are concurrencies.
func closed(res *sweep.Result) bool { return res.Mode == sweep.ModeClosed }

// queued reports whether the tables show client queue time (--rates with
// --max-concurrency).
func queued(res *sweep.Result) bool { return res.MaxConcurrency > 0 && !closed(res) }

// hasValid reports whether any step counts for the knee.
func hasValid(res *sweep.Result) bool {
	for _, st := range res.Steps {
		if st.InKnee() {
			return true
		}
	}
	return false
}

// isBurst reports whether a step ran at rate inf.
func isBurst(st *sweep.Step) bool { return math.IsInf(st.Level, 1) }

// levelText formats a level with its unit: "4 req/s", "concurrency 8".
func levelText(res *sweep.Result, v float64) string {
	if closed(res) {
		return "concurrency " + num(v)
	}
	if math.IsInf(v, 1) {
		return "rate inf (burst)"
	}
	return num(v) + " req/s"
}

// invalidReasons lists why a step is not in the knee, one "flag: reason"
// per validity flag, and the burst line for a burst step.
func invalidReasons(st *sweep.Step) []string {
	var out []string
	for i, f := range st.Validity.Flags {
		if i < len(st.Validity.Reasons) {
			f += ": " + st.Validity.Reasons[i]
		}
		out = append(out, f)
	}
	if st.Mode == sweep.ModeBurst {
		out = append(out, "burst: rate inf is not an open loop, not used for the knee")
	}
	return out
}
