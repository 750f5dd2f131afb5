package compare

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/llmprobe/llmprobe/prober/stats"
)

// Tolerances of a vllm bench serve file's summary percentiles against the
// percentiles of its own per-request arrays (Step.Contradictions): a
// difference within SummaryTolerance of the recomputed value, or within
// SummaryToleranceMS, is rounding (vLLM computes both from the same
// seconds).
const (
	SummaryTolerance   = 0.01
	SummaryToleranceMS = 0.5
)

// detailedArrays are the per-request arrays of a --save-detailed file.
type detailedArrays struct {
	ttfts, lats []float64
	itls        [][]float64
	outs        []int
	errs        []string
	hasL, hasI  bool
	hasO, hasE  bool
}

func readDetailed(o map[string]json.RawMessage) (d detailedArrays, hasT bool, err error) {
	if hasT, err = get(o, "ttfts", &d.ttfts); err != nil {
		return d, false, err
	}
	if d.hasL, err = get(o, "latencies", &d.lats); err != nil {
		return d, false, err
	}
	if d.hasI, err = get(o, "itls", &d.itls); err != nil {
		return d, false, err
	}
	if d.hasO, err = get(o, "output_lens", &d.outs); err != nil {
		return d, false, err
	}
	if d.hasE, err = get(o, "errors", &d.errs); err != nil {
		return d, false, err
	}
	return d, hasT, nil
}

// usable reports whether the arrays give each request its TTFT and E2E
// latency: ttfts, and latencies or itls (older vllm bench serve wrote no
// latencies: the latency is then ttft + Σ itl), every array as long as
// ttfts.
func (d *detailedArrays) usable(hasT bool) bool {
	n := len(d.ttfts)
	return hasT && (d.hasL || d.hasI) && (!d.hasL || len(d.lats) == n) && (!d.hasI || len(d.itls) == n) &&
		(!d.hasO || len(d.outs) == n) && (!d.hasE || len(d.errs) == n)
}

// latency is request i's E2E latency in seconds: latencies[i], else
// ttfts[i] + Σ itls[i].
func (d *detailedArrays) latency(i int) float64 {
	if d.hasL {
		return d.lats[i]
	}
	return d.ttfts[i] + stats.Sum(d.itls[i])
}

// decodeDetailed reads the per-request arrays of --save-detailed: per
// request its success (errors, else a TTFT and an output), TTFT, E2E
// latency (latencies, else ttft + Σ itl), output tokens (output_lens; -1
// when the file has none) and TPOT ((latency − ttft) / (output − 1), vLLM's
// rule). The file's summary percentiles are then checked against the
// arrays (Step.Contradictions).
func decodeDetailed(ev *Evidence, st *Step, o map[string]json.RawMessage) error {
	d, hasT, err := readDetailed(o)
	if err != nil {
		return err
	}
	note := func(list *[]string, s string) {
		if !slices.Contains(*list, s) {
			*list = append(*list, s)
		}
	}
	if d.hasE {
		st.ErrorClasses = errorCounts(d.errs)
	}
	if !d.usable(hasT) {
		note(&ev.Missing, "per-request samples (vllm bench serve --save-detailed)")
		return nil
	}
	if !d.hasL {
		note(&ev.Warnings, "no latencies array (older vllm bench serve): each request's E2E latency is read as its ttft + Σ itl")
	}
	if !d.hasO {
		note(&ev.Missing, "per-request output lengths (output_lens): no TPOT or good output tokens per request")
	}
	st.Requests = make([]Request, len(d.ttfts))
	var itls []float64
	for i, ttft := range d.ttfts {
		ok := ttft > 0 && (!d.hasO || d.outs[i] > 0)
		if d.hasE {
			ok = d.errs[i] == ""
		}
		r := Request{OK: ok, TPOT: -1, OutputTokens: -1}
		switch {
		case ok:
			lat := d.latency(i)
			r.TTFT, r.E2EL = 1000*ttft, 1000*lat
			if d.hasO {
				r.OutputTokens = d.outs[i]
				if d.outs[i] > 1 {
					r.TPOT = 1000 * (lat - ttft) / float64(d.outs[i]-1)
				}
			}
			if d.hasI {
				itls = append(itls, d.itls[i]...)
			}
		case d.hasE:
			r.ErrorClass = errorClass(d.errs[i])
		default:
			r.ErrorClass = "unknown"
		}
		st.Requests[i] = r
	}
	st.Contradictions = contradictions(st, itls, d.hasI)
	return nil
}

// contradictions compares each summary percentile the step records
// (p99_ttft_ms, median_tpot_ms, ...) with the same percentile of its
// per-request samples (itls: every successful request's inter-token gaps,
// when hasITL), and names each that differs by more than SummaryTolerance
// and SummaryToleranceMS: such a file contradicts itself (edited, or
// written by a tool that computes otherwise), and its summary is not
// trusted.
func contradictions(st *Step, itls []float64, hasITL bool) []string {
	var out []string
	for _, m := range []string{MetricTTFT, MetricTPOT, MetricITL, MetricE2EL} {
		ps := st.Percentiles[m]
		if len(ps) == 0 {
			continue
		}
		var xs []float64
		switch {
		case m == MetricITL && hasITL:
			xs = slices.Clone(itls)
			for i := range xs {
				xs[i] *= 1000
			}
		case m != MetricITL:
			rs, _ := latencySamples([]*Step{st}, m)
			xs = rs[0]
		}
		if len(xs) == 0 {
			continue
		}
		slices.Sort(xs)
		for _, p := range sortedKeys(ps) {
			rec, got := ps[p], stats.PercentileSorted(xs, p)
			if math.Abs(rec-got) > max(SummaryToleranceMS, SummaryTolerance*math.Abs(got)) {
				out = append(out, fmt.Sprintf("p%s_%s_ms %s but its %d per-request samples give %s", stats.PercentileKey(p), m, Num(rec), len(xs), Num(got)))
			}
		}
	}
	return out
}

func sortedKeys(m map[float64]float64) []float64 {
	ks := make([]float64, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// contradictionText is a step's contradictions in one sentence.
func contradictionText(st *Step) string {
	return "the file's summary contradicts its own per-request arrays: " + strings.Join(st.Contradictions, "; ")
}
