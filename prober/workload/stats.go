package workload

import (
	"context"
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Sample is one request of a dataset or trace as `llmprobe workload stats`
// summarises it, independent of where it came from.
type Sample struct {
	// InputTokens and OutputTokens are the request's lengths; an
	// OutputTokens of 0 means unknown (left out of the output
	// distribution).
	InputTokens, OutputTokens int
	// Offset is the arrival offset from the first request; valid when
	// Timed.
	Offset time.Duration
	Timed  bool
	// SharedPrefixTokens is how many tokens of the prompt's prefix an
	// earlier request shares.
	SharedPrefixTokens int
}

// Stats is what `llmprobe workload stats --format json` prints and
// `llmprobe workload synth --from` reads: the bucket statistics of a
// workload, without its text.
type Stats struct {
	// Count is the number of samples.
	Count int `json:"count"`
	// InputTokens and OutputTokens are the length distributions (p10, p50,
	// p90, p99, max and more).
	InputTokens  LengthDist `json:"input_tokens"`
	OutputTokens LengthDist `json:"output_tokens"`
	// Timed is true when every sample has an arrival offset; then
	// DurationS is the span from the first to the last arrival, RatePerS
	// the mean arrival rate ((Count-1) / DurationS) and GapCV2 the
	// burstiness: the squared coefficient of variation of the gaps
	// between consecutive arrivals (1 for Poisson arrivals, 0 for evenly
	// spaced ones, above 1 bursty).
	Timed     bool    `json:"timed"`
	DurationS float64 `json:"duration_s,omitempty"`
	RatePerS  float64 `json:"rate_per_s,omitempty"`
	GapCV2    float64 `json:"gap_cv2,omitempty"`
	// PrefixShare is the fraction of all prompt tokens that a prompt shares
	// as a prefix with an earlier request (what a prefix cache could
	// reuse at best).
	PrefixShare float64 `json:"prefix_share"`
	// Tokenizer says how the tokens were counted (MethodServerTokenize,
	// MethodCalibrated or MethodEstimate); Source names the input. The
	// caller fills them.
	Tokenizer string `json:"tokenizer,omitempty"`
	Source    string `json:"source,omitempty"`
}

// ComputeStats summarises samples. It does not modify them.
func ComputeStats(samples []Sample) Stats {
	st := Stats{Count: len(samples)}
	var in, out []float64
	var shared, total float64
	timed := len(samples) > 0
	offs := make([]float64, 0, len(samples))
	for _, s := range samples {
		in = append(in, float64(s.InputTokens))
		if s.OutputTokens > 0 {
			out = append(out, float64(s.OutputTokens))
		}
		shared += float64(min(max(s.SharedPrefixTokens, 0), s.InputTokens))
		total += float64(s.InputTokens)
		timed = timed && s.Timed
		offs = append(offs, s.Offset.Seconds())
	}
	st.InputTokens, st.OutputTokens = NewLengthDist(in), NewLengthDist(out)
	if total > 0 {
		st.PrefixShare = shared / total
	}
	if timed && len(offs) > 1 {
		slices.Sort(offs)
		st.Timed = true
		st.DurationS = offs[len(offs)-1] - offs[0]
		if st.DurationS > 0 {
			st.RatePerS = float64(len(offs)-1) / st.DurationS
		}
		gaps := make([]float64, len(offs)-1)
		var mean float64
		for i := range gaps {
			gaps[i] = offs[i+1] - offs[i]
			mean += gaps[i]
		}
		mean /= float64(len(gaps))
		if mean > 0 {
			var v float64
			for _, g := range gaps {
				v += (g - mean) * (g - mean)
			}
			v /= float64(len(gaps))
			st.GapCV2 = v / (mean * mean)
		}
	} else if timed {
		st.Timed = true
	}
	return st
}

// MethodEstimate is the sizing method of EstimateTokenizer.
const MethodEstimate = "estimate"

// EstimateTokenizer is the offline token estimate of `workload stats`
// without --target: one token per 4 characters (Unicode code points),
// rounded up, at least 1 — OpenAI's rule of thumb for English text. It is
// an estimate, not a model's tokenizer; it is safe for concurrent use.
type EstimateTokenizer struct{}

// Count returns max(1, ceil(runes(text) / 4)).
func (EstimateTokenizer) Count(_ context.Context, text string) (int, error) {
	return max(1, (utf8.RuneCountInString(text)+3)/4), nil
}

// Method returns MethodEstimate.
func (EstimateTokenizer) Method() string { return MethodEstimate }

// prefixBlockWords is the granularity of the shared-prefix measure: a
// prefix is shared in whole blocks of this many words (or as a whole
// prompt).
const prefixBlockWords = 4

// SharedPrefixes returns, for each text, how many of its tokens (of
// tokens[i]) form a prefix shared with an earlier text: the longest run of
// leading prefixBlockWords-word blocks that an earlier text began with
// (the whole text when an earlier one was the same), in tokens pro rata
// to its words. It keeps one 8-byte hash per block.
func SharedPrefixes(texts []string, tokens []int) []int {
	seen := map[uint64]struct{}{}
	out := make([]int, len(texts))
	for i, text := range texts {
		words := strings.Fields(text)
		if len(words) == 0 {
			continue
		}
		h := fnv.New64a()
		var hashes []uint64
		for b := 0; b+prefixBlockWords <= len(words); b += prefixBlockWords {
			for _, w := range words[b : b+prefixBlockWords] {
				h.Write([]byte(w))
				h.Write([]byte{0})
			}
			hashes = append(hashes, h.Sum64())
		}
		whole := fnv.New64a()
		whole.Write([]byte("\x01whole\x01"))
		whole.Write([]byte(strings.Join(words, " ")))
		wholeSum := whole.Sum64()
		sharedWords := 0
		if _, dup := seen[wholeSum]; dup {
			sharedWords = len(words)
		} else {
			for k, hv := range hashes {
				if _, ok := seen[hv]; !ok {
					break
				}
				sharedWords = (k + 1) * prefixBlockWords
			}
		}
		for _, hv := range hashes {
			seen[hv] = struct{}{}
		}
		seen[wholeSum] = struct{}{}
		out[i] = int(math.Round(float64(sharedWords) / float64(len(words)) * float64(tokens[i])))
	}
	return out
}

// DatasetStats measures ds with tok as a sweep would use it (ShareGPT
// pruning applied; entries without an output length count with an
// unknown output) and returns its Stats and DatasetInfo.
func DatasetStats(ctx context.Context, ds *Dataset, tok Tokenizer) (Stats, DatasetInfo, error) {
	src := &DatasetSource{ds: ds, sampling: SamplingSequential}
	m, err := src.measured(ctx, tok)
	if err != nil {
		return Stats{}, DatasetInfo{}, err
	}
	texts := make([]string, len(m.pool))
	tokens := make([]int, len(m.pool))
	for i, me := range m.pool {
		texts[i], tokens[i] = me.e.Text(), me.in
	}
	shared := SharedPrefixes(texts, tokens)
	samples := make([]Sample, len(m.pool))
	for i, me := range m.pool {
		samples[i] = Sample{InputTokens: me.in, OutputTokens: me.out, Offset: me.e.Offset, Timed: ds.Timed, SharedPrefixTokens: shared[i]}
	}
	st := ComputeStats(samples)
	st.Tokenizer, st.Source = m.info.Method, ds.Path
	return st, m.info, nil
}
