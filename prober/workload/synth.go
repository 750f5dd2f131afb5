package workload

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/llmprobe/llmprobe/prober/arrival"
)

// The bounds of `workload synth` (issue 22 D7): what it writes must load
// back as a dataset.
const (
	// MaxSynthCount bounds `workload synth --count`: MaxDatasetEntries.
	MaxSynthCount = MaxDatasetEntries
	// MaxSynthBytes bounds the bytes `workload synth` writes:
	// MaxDatasetBytes. A stats file whose expected output is larger is
	// refused before anything is written; a draw that still runs over
	// stops there with an error.
	MaxSynthBytes = MaxDatasetBytes
	// MinSynthRate and MaxSynthRate bound a stats file's rate_per_s, in
	// arrivals per second: one per 1000 s, and the arrival generator's
	// arrival.MaxRate.
	MinSynthRate = 1e-3
	MaxSynthRate = arrival.MaxRate
	// MaxSynthGapCV2 bounds gap_cv2 (>= 0; 0: Poisson gaps): the gap CV² of
	// the burstiest gamma process, 1 / arrival.MinBurstiness. A CV² below
	// 1 / arrival.MaxBurstiness draws the most regular gamma gaps.
	MaxSynthGapCV2 = 1 / arrival.MinBurstiness
)

// SynthOptions configures Synthesize.
type SynthOptions struct {
	// Count is the number of entries (default: the stats' Count, at least
	// 1, at most MaxSynthCount).
	Count int
	// Seed seeds every draw.
	Seed uint64
}

// DecodeStats reads Stats as `llmprobe workload stats --format json`
// writes them (the file `workload synth --from` reads); an unknown key is
// an error.
func DecodeStats(b []byte) (Stats, error) {
	var st Stats
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	err := dec.Decode(&st)
	return st, err
}

// Synthesize writes a JSONL dataset to w that matches st: input and output
// lengths drawn from a piecewise-linear inverse CDF through the quantiles
// (min, p10, p50, p90, p99, max; capped at max), arrival offsets
// (offset_ms) from a gamma process with the stats' rate and gap CV² when
// st is timed, and prompts of the drawn lengths under EstimateTokenizer
// (three-letter words: one token each) whose first round(PrefixShare x
// length) words come from one shared prefix. `workload stats` of the file
// gives back st's figures up to sampling noise (docs/workload.md states the
// tolerance the tests hold).
func Synthesize(w io.Writer, st Stats, o SynthOptions) (int, error) {
	n, err := checkSynth(st, o)
	if err != nil {
		return 0, err
	}
	hasOut := st.OutputTokens.N > 0 || st.OutputTokens.Max > 0
	var proc arrival.Process
	if st.Timed && st.RatePerS > 0 {
		shape := 1.0
		if st.GapCV2 > 0 {
			shape = min(max(1/st.GapCV2, arrival.MinBurstiness), arrival.MaxBurstiness)
		}
		p, err := arrival.New(arrival.KindGamma, st.RatePerS, shape, derive(o.Seed, tagSynthArrival))
		if err != nil {
			return 0, fmt.Errorf("rate_per_s / gap_cv2: %w", err)
		}
		proc = p
	}
	r := newRand(derive(o.Seed, tagSynthLengths))
	maxIn := int(st.InputTokens.Max)
	prefix := make([]string, maxIn)
	pr := newRand(derive(o.Seed, tagSynthPrefix))
	for i := range prefix {
		prefix[i] = threeLetters(pr.Uint64())
	}
	cw := &cappedWriter{w: w, limit: MaxSynthBytes}
	bw := bufio.NewWriter(cw)
	var first time.Duration
	for i := range n {
		in := drawQuantile(st.InputTokens, r.Float64())
		out := 0
		if hasOut {
			out = drawQuantile(st.OutputTokens, r.Float64())
		}
		k := int(math.Round(st.PrefixShare * float64(in)))
		words := make([]string, in)
		copy(words, prefix[:k])
		for j := k; j < in; j++ {
			words[j] = threeLetters(r.Uint64())
		}
		e := struct {
			Prompt       string   `json:"prompt"`
			OutputTokens int      `json:"output_tokens,omitempty"`
			OffsetMS     *float64 `json:"offset_ms,omitempty"`
		}{Prompt: strings.Join(words, " "), OutputTokens: out}
		if proc != nil {
			d := proc.Next()
			if i == 0 {
				first = d
			}
			ms := float64(d-first) / float64(time.Millisecond)
			e.OffsetMS = &ms
		}
		b, err := json.Marshal(e)
		if err != nil {
			return i, err
		}
		bw.Write(b)
		if err := bw.WriteByte('\n'); err != nil {
			return i, err
		}
	}
	return n, bw.Flush()
}

// checkSynth checks st and o before Synthesize writes anything, each error
// naming the key, and returns the count of entries.
func checkSynth(st Stats, o SynthOptions) (int, error) {
	n := o.Count
	if n <= 0 {
		n = max(st.Count, 1)
	}
	if n > MaxSynthCount {
		return 0, fmt.Errorf("count: at most %d entries, got %d", MaxSynthCount, n)
	}
	if err := checkDist("input_tokens", st.InputTokens); err != nil {
		return 0, err
	}
	if st.OutputTokens.N > 0 || st.OutputTokens.Max > 0 {
		if err := checkDist("output_tokens", st.OutputTokens); err != nil {
			return 0, err
		}
	}
	if !(st.PrefixShare >= 0 && st.PrefixShare < 1) {
		return 0, fmt.Errorf("prefix_share: must be in [0, 1), got %v", st.PrefixShare)
	}
	if st.Timed && st.RatePerS != 0 {
		if !(st.RatePerS >= MinSynthRate && st.RatePerS <= MaxSynthRate) {
			return 0, fmt.Errorf("rate_per_s: must be between %v and %v arrivals per second, got %v", MinSynthRate, float64(MaxSynthRate), st.RatePerS)
		}
		if span := float64(n) / st.RatePerS; span > MaxTraceOffset.Seconds() {
			return 0, fmt.Errorf("rate_per_s: %d entries at %v per second span %.0f s, more than the %v an arrival offset may reach; raise rate_per_s or lower --count",
				n, st.RatePerS, span, MaxTraceOffset)
		}
		if !(st.GapCV2 >= 0 && st.GapCV2 <= MaxSynthGapCV2) {
			return 0, fmt.Errorf("gap_cv2: must be between 0 and %v, got %v", float64(MaxSynthGapCV2), st.GapCV2)
		}
	}
	if want := float64(n) * synthEntryBytes(st); want > MaxSynthBytes {
		return 0, fmt.Errorf("count / input_tokens: %d entries of about %.0f bytes each make %.0f bytes, more than the %d a dataset may hold; lower --count",
			n, synthEntryBytes(st), want, MaxSynthBytes)
	}
	return n, nil
}

// synthEntryBytes is the expected size of one entry of Synthesize: four
// bytes per input token (a three-letter word and its space) and the JSON
// around it.
func synthEntryBytes(st Stats) float64 {
	return 4*meanQuantile(st.InputTokens) + 64
}

// meanQuantile is the mean of drawQuantile's piecewise-linear distribution
// through d's quantiles.
func meanQuantile(d LengthDist) float64 {
	ps := []float64{0, 0.10, 0.50, 0.90, 0.99, 1}
	qs := []float64{d.Min, d.P10, d.P50, d.P90, d.P99, d.Max}
	m := 0.0
	for i := 1; i < len(ps); i++ {
		m += (ps[i] - ps[i-1]) * (qs[i-1] + qs[i]) / 2
	}
	return m
}

// cappedWriter passes at most limit bytes on to w; a write past the limit
// fails (Synthesize's output cap).
type cappedWriter struct {
	w     io.Writer
	n     int64
	limit int64
}

func (c *cappedWriter) Write(p []byte) (int, error) {
	if c.n+int64(len(p)) > c.limit {
		return 0, fmt.Errorf("output: more than %d bytes (what a dataset may hold); lower --count", c.limit)
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// checkDist checks that a distribution read from a stats file can be drawn
// from: 1 <= min <= p10 <= ... <= max <= MaxLength.
func checkDist(name string, d LengthDist) error {
	q := []float64{d.Min, d.P10, d.P50, d.P90, d.P99, d.Max}
	if !(d.Min >= 1) {
		return fmt.Errorf("%s.min: must be >= 1, got %v", name, d.Min)
	}
	for i := 1; i < len(q); i++ {
		if !(q[i] >= q[i-1]) {
			return errors.New(name + ": quantiles must not decrease (min <= p10 <= p50 <= p90 <= p99 <= max)")
		}
	}
	if d.Max > MaxLength {
		return fmt.Errorf("%s.max: must be <= %d, got %v", name, MaxLength, d.Max)
	}
	return nil
}

// drawQuantile maps u in [0, 1) through the piecewise-linear inverse CDF of
// d's quantiles, rounded and capped to [1, max].
func drawQuantile(d LengthDist, u float64) int {
	ps := []float64{0, 0.10, 0.50, 0.90, 0.99, 1}
	qs := []float64{d.Min, d.P10, d.P50, d.P90, d.P99, d.Max}
	v := d.Max
	for i := 1; i < len(ps); i++ {
		if u <= ps[i] {
			f := (u - ps[i-1]) / (ps[i] - ps[i-1])
			v = qs[i-1] + f*(qs[i]-qs[i-1])
			break
		}
	}
	return int(min(max(math.Round(v), 1), d.Max))
}

// threeLetters spells x as a lowercase three-letter word (one token under
// EstimateTokenizer with its space).
func threeLetters(x uint64) string {
	b := [3]byte{byte('a' + x%26), byte('a' + (x/26)%26), byte('a' + (x/676)%26)}
	return string(b[:])
}

// Random streams of Synthesize.
const (
	tagSynthLengths uint64 = 0x73796e74 + iota // "synt"
	tagSynthPrefix
	tagSynthArrival
)
