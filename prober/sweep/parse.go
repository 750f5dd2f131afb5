package sweep

// The values of the list and text settings as a surface gives them
// (--rates, --concurrency, --percentiles, --goodput, --metadata, the
// random workload's lengths), parsed into Config fields: Setting.Apply and
// the commands call them.

import (
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/llmprobe/llmprobe/prober/redact"
	"github.com/llmprobe/llmprobe/prober/slo"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// FlagWorkload builds the workload of --input-len, --output-len,
// --range-ratio and --prefix-len as vllm bench serve's random dataset does:
// uniform lengths in [floor(v*(1-r)), ceil(v*(1+r))] (fixed when r is 0),
// output at least 1, ignore_eos on.
func FlagWorkload(inputLen, outputLen int, rangeRatio float64, prefixLen int) (workload.Spec, error) {
	for _, err := range []error{
		checkBound("Workload.InputTokens", float64(inputLen), inputLen),
		checkBound("Workload.OutputTokens", float64(outputLen), outputLen),
		checkBound("Workload.InputTokens.RangeRatio", rangeRatio, rangeRatio),
		checkBound("Workload.PrefixTokens", float64(prefixLen), prefixLen),
	} {
		if err != nil {
			return workload.Spec{}, err
		}
	}
	length := func(v int) workload.LengthSpec {
		if rangeRatio == 0 {
			return workload.Fixed(v)
		}
		return workload.LengthSpec{Dist: workload.DistUniform, Value: v, RangeRatio: rangeRatio}
	}
	return workload.Spec{InputTokens: length(inputLen), OutputTokens: length(outputLen), PrefixTokens: prefixLen}, nil
}

// ParseRates parses --rates: "auto", or a comma-separated list of positive
// rates in req/s where "inf" is a burst. It returns the rates in the order
// given (duplicates rejected) and whether the value was "auto".
func ParseRates(s string) (rates []float64, auto bool, err error) {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "auto") {
		return nil, true, nil
	}
	if s == "" {
		return nil, false, fieldErr("Rates", "must not be empty (a list such as 1,2,4,8, auto or inf)")
	}
	rates, err = parseLevels("Rates", "rate", "a rate (a number of req/s, inf or auto)", s, true)
	return rates, false, err
}

// parseLevels parses the comma-separated levels of a list setting
// (--rates, --trace-speed) in the order given: each a finite number (or,
// with burst, inf) within the setting's bound, given once. what names a
// level in a reason ("rate"), notLevel says what other text is not.
func parseLevels(field, what, notLevel, s string, burst bool) ([]float64, error) {
	if err := checkLen(field, s); err != nil {
		return nil, err
	}
	var out []float64
	seen := map[float64]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		v, err := strconv.ParseFloat(f, 64)
		if burst && strings.EqualFold(f, "inf") {
			v = math.Inf(1)
		} else if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fieldErr(field, "%q is not %s", f, notLevel)
		}
		if p := LookupField(field).Bound.check(v); p != "" {
			return nil, fieldErr(field, "%s %s, got %s", what, p, f)
		}
		if seen[v] {
			return nil, fieldErr(field, "%s %s given twice", what, f)
		}
		seen[v] = true
		out = append(out, v)
	}
	return out, nil
}

// checkLen refuses a comma-separated list s longer than field's MaxLen
// before any value is parsed: a list of 50,000 levels is refused as
// quickly as one of 257.
func checkLen(field, s string) error {
	st := LookupField(field)
	if st == nil || st.Bound.MaxLen <= 0 {
		return nil
	}
	if n := strings.Count(s, ",") + 1; n > st.Bound.MaxLen {
		return fieldErr(field, "must have at most %d values, got %d", st.Bound.MaxLen, n)
	}
	return nil
}

// ParseConcurrency parses --concurrency: a comma-separated list of
// closed-loop levels (integers >= 1).
func ParseConcurrency(s string) ([]int, error) {
	if err := checkLen("Concurrency", s); err != nil {
		return nil, err
	}
	var out []int
	seen := map[int]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fieldErr("Concurrency", "%q is not an integer", f)
		}
		if err := checkBound("Concurrency", float64(n), n); err != nil {
			return nil, err
		}
		if seen[n] {
			return nil, fieldErr("Concurrency", "level %d given twice", n)
		}
		seen[n] = true
		out = append(out, n)
	}
	return out, nil
}

// ParsePercentiles parses --percentiles: comma-separated numbers in
// [0, 100] reported beside p50/p90/p99 (e.g. "75,99.9").
func ParsePercentiles(s string) ([]float64, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	if err := checkLen("Percentiles", s); err != nil {
		return nil, err
	}
	var out []float64
	seen := map[float64]bool{50: true, 90: true, 99: true} // always reported
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		p, err := strconv.ParseFloat(f, 64)
		if err != nil || checkBound("Percentiles", p, p) != nil {
			return nil, fieldErr("Percentiles", "%q is not a percentile in [0, 100]", f)
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out, nil
}

// ParseGoodput parses --goodput pairs (vLLM's syntax, milliseconds) with
// slo.ParseGoodput; the error names the field (SLO).
func ParseGoodput(args []string) (slo.SLO, error) {
	if len(args) == 0 {
		return slo.SLO{}, nil
	}
	s, err := slo.ParseGoodput(args)
	if err != nil {
		return slo.SLO{}, &FieldError{Field: "SLO", Err: err}
	}
	return s, nil
}

// percentileKey matches the latency keys of result.json (mean_ttft_ms,
// p99.9_itl_ms, ...), whatever --percentiles asks for.
var percentileKey = regexp.MustCompile(`^(mean|median|std|p[0-9.]+)_[a-z_]+_ms$`)

// ParseMetadata parses repeated --metadata KEY=VALUE pairs. Keys must be
// non-empty, unique and not one of result.json's own keys (they are written
// beside them, as vllm bench serve does). The value of a key that looks
// secret (redact.SecretKey: hf_token, api_key, password, ...) is
// replaced by "<redacted>" here, so it reaches no artifact; other values
// pass through redact.Text (a Bearer token or sk-... key in a
// value is removed too).
func ParseMetadata(kvs []string) (map[string]string, error) {
	out := map[string]string{}
	reserved := resultKeys()
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fieldErr("Metadata", "%q is not KEY=VALUE", kv)
		}
		if reserved[k] || percentileKey.MatchString(k) {
			return nil, fieldErr("Metadata", "key %q is reserved", k)
		}
		if _, dup := out[k]; dup {
			return nil, fieldErr("Metadata", "key %q given twice", k)
		}
		if redact.SecretKey(k) {
			v = redact.Redacted
		}
		out[k] = redact.Text(v)
	}
	return out, nil
}
