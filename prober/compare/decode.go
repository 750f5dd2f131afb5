package compare

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/slo"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// ErrNotResult is wrapped by Decode's error for input that is not a result
// file.
var ErrNotResult = errors.New("not a result file")

// Decode reads one result file: an llmprobe result.json (without its run
// directory, so without fingerprint or per-request samples), a vllm bench
// serve --save-result file (one JSON object, or the JSON lines of
// --append-result, each a step), or a foreign JSON object holding result
// figures (completed, request_throughput, percentiles_<metric>_ms, slo_ms,
// as the methodology's teaching example), which is read with a warning. An
// input that is none of these is an error wrapping ErrNotResult whose text
// says why in one line.
func Decode(name string, b []byte) (*Evidence, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrNotResult)
	}
	if b[0] != '{' {
		return nil, fmt.Errorf("%w: not a JSON object", ErrNotResult)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var objs []map[string]json.RawMessage
	for {
		var o map[string]json.RawMessage
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: invalid JSON: %w", ErrNotResult, err)
		}
		objs = append(objs, o)
	}
	if _, ok := objs[0]["llmprobe_result_schema"]; ok {
		if len(objs) > 1 {
			return nil, fmt.Errorf("%w: more than one llmprobe result object", ErrNotResult)
		}
		res, err := sweep.DecodeResult(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("%w: llmprobe result.json: %w", ErrNotResult, err)
		}
		ev := FromSweep(name, res, nil)
		ev.Missing = append(ev.Missing, "manifest.json (the fingerprint: read the run directory instead of its result.json)")
		return ev, nil
	}
	ev := &Evidence{Name: name, Fields: map[string][]string{}}
	for i, o := range objs {
		var st Step
		var err error
		switch {
		case isVLLM(o):
			if ev.Format == FormatForeign {
				return nil, fmt.Errorf("%w: line %d mixes schemas", ErrNotResult, i+1)
			}
			ev.Format = FormatVLLM
			st, err = decodeVLLM(ev, o)
		case hasFigures(o):
			if ev.Format == FormatVLLM {
				return nil, fmt.Errorf("%w: line %d mixes schemas", ErrNotResult, i+1)
			}
			ev.Format = FormatForeign
			st, err = decodeForeign(ev, o)
		default:
			return nil, fmt.Errorf("%w: no completed or request_throughput key (expected llmprobe's result.json or a vllm bench serve --save-result file)", ErrNotResult)
		}
		if err != nil {
			if len(objs) > 1 {
				return nil, fmt.Errorf("%w: object %d: %w", ErrNotResult, i+1, err)
			}
			return nil, fmt.Errorf("%w: %w", ErrNotResult, err)
		}
		n := 0
		for _, s := range ev.Steps {
			if s.Label == st.Label {
				n++
			}
		}
		st.Round = n + 1
		ev.Steps = append(ev.Steps, st)
	}
	return ev, nil
}

// isVLLM reports whether o has vllm bench serve's identification keys.
func isVLLM(o map[string]json.RawMessage) bool {
	_, date := o["date"]
	_, backend := o["backend"]
	_, endpoint := o["endpoint_type"]
	_, completed := o["completed"]
	return date && (backend || endpoint) && completed
}

func hasFigures(o map[string]json.RawMessage) bool {
	_, completed := o["completed"]
	_, tp := o["request_throughput"]
	return completed || tp
}

// vllmKeys are the top-level keys vllm bench serve writes (besides the
// percentile keys and --metadata pairs).
var vllmKeys = []string{
	"date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id", "num_prompts", "request_rate", "burstiness",
	"max_concurrency", "ramp_up_strategy", "ramp_up_start_rps", "ramp_up_end_rps", "duration", "completed", "failed",
	"total_input_tokens", "total_output_tokens", "request_throughput", "request_goodput", "request_goodput:",
	"output_throughput", "total_token_throughput", "input_lens", "output_lens", "ttfts", "itls", "latencies",
	"start_times", "queue_times", "generated_texts", "errors", "max_output_tokens_per_s", "max_concurrent_requests", "rtfx",
}

// percentileKeyRE matches vllm bench serve's latency keys.
var percentileKeyRE = regexp.MustCompile(`^(mean|median|std|p([0-9]+(?:\.[0-9]+)?))_(ttft|tpot|itl|e2el)_ms$`)

// get decodes o[k] into v; ok is false when the key is absent or null.
func get(o map[string]json.RawMessage, k string, v any) (ok bool, err error) {
	raw, has := o[k]
	if !has || string(raw) == "null" {
		return false, nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return false, fmt.Errorf("key %s: %w", k, err)
	}
	return true, nil
}

// num reads a number key (ok false when absent or null).
func number(o map[string]json.RawMessage, k string) (float64, bool, error) {
	var v float64
	ok, err := get(o, k, &v)
	return v, ok, err
}

func decodeVLLM(ev *Evidence, o map[string]json.RawMessage) (Step, error) {
	var st Step
	missing := func(what string) {
		if !slices.Contains(ev.Missing, what) {
			ev.Missing = append(ev.Missing, what)
		}
	}
	c, _, err := number(o, "completed")
	if err != nil {
		return st, err
	}
	st.Completed = int(c)
	f, ok, err := number(o, "failed")
	if err != nil {
		return st, err
	}
	if !ok {
		missing("failed (older vllm bench serve files have no failed count)")
	}
	st.Failed = int(f)
	if st.Duration, ok, err = number(o, "duration"); err != nil {
		return st, err
	} else if !ok {
		missing("duration")
	}
	if st.Throughput, ok, err = number(o, "request_throughput"); err != nil {
		return st, err
	} else if !ok {
		missing("request_throughput")
	}
	if ot, ok, err := number(o, "output_throughput"); err != nil {
		return st, err
	} else if ok {
		st.OutputThroughput = &ot
	}
	gkey := "request_goodput"
	if _, old := o["request_goodput:"]; old {
		gkey = "request_goodput:"
		w := `the goodput key is spelled "request_goodput:" (older vllm bench serve, vLLM issue #20274); read as request_goodput`
		if !slices.Contains(ev.Warnings, w) {
			ev.Warnings = append(ev.Warnings, w)
		}
	}
	if g, ok, err := number(o, gkey); err != nil {
		return st, err
	} else if ok {
		st.Goodput = &g
	} else {
		missing("request_goodput (the run had no --goodput)")
	}
	// Identification and load settings: the fingerprint fields the file
	// records.
	var model, tok, backend string
	if _, err := get(o, "model_id", &model); err != nil {
		return st, err
	}
	if _, err := get(o, "tokenizer_id", &tok); err != nil {
		return st, err
	}
	if _, err := get(o, "backend", &backend); err != nil {
		return st, err
	}
	rate := math.Inf(1)
	var rateRaw any
	if ok, err := get(o, "request_rate", &rateRaw); err != nil {
		return st, err
	} else if ok {
		switch x := rateRaw.(type) {
		case float64:
			rate = x
		case string:
			if !strings.EqualFold(x, "inf") {
				v, perr := strconv.ParseFloat(x, 64)
				if perr != nil {
					return st, fmt.Errorf("key request_rate: %q is not a rate", x)
				}
				rate = v
			}
		}
	} else {
		missing("request_rate")
	}
	burst, hasBurst, err := number(o, "burstiness")
	if err != nil {
		return st, err
	}
	mc, hasMC, err := number(o, "max_concurrency")
	if err != nil {
		return st, err
	}
	np, hasNP, err := number(o, "num_prompts")
	if err != nil {
		return st, err
	}
	fields := map[string]string{FieldModel: model, FieldTokenizer: tok}
	for _, a := range client.APIs() {
		if slices.Contains(a.BenchBackends, backend) {
			fields[FieldAPI] = a.Name
		}
	}
	fields[FieldRate] = rateText(rate)
	st.Label = "rate=" + rateText(rate)
	switch {
	case math.IsInf(rate, 1) && hasMC:
		fields[FieldMode] = sweep.ModeClosed
		st.Label = "concurrency=" + strconv.Itoa(int(mc))
		fields[FieldRate] = st.Label
	case math.IsInf(rate, 1):
		fields[FieldMode] = sweep.ModeBurst
	case hasMC:
		fields[FieldMode] = sweep.ModeBoth
	default:
		fields[FieldMode] = sweep.ModeOpen
	}
	fields[FieldMaxConcurrency] = strconv.Itoa(int(mc))
	if hasBurst && !math.IsInf(rate, 1) {
		kind := "gamma"
		if burst == 1 {
			kind = "poisson"
		}
		fields[FieldArrival] = kind + " burstiness=" + strconv.FormatFloat(burst, 'g', -1, 64)
	}
	if hasNP {
		fields[FieldRequests] = "num_prompts=" + strconv.Itoa(int(np))
	}
	addFields(ev.Fields, fields)

	if err := decodePercentiles(&st, o); err != nil {
		return st, err
	}
	if err := decodeDetailed(ev, &st, o); err != nil {
		return st, err
	}
	for _, m := range []string{"finish reasons", "server version, engine config, workload hash, seed (vllm bench serve does not record them)",
		"validity: client send lag and idle proof (vllm bench serve does not record them)"} {
		missing(m)
	}
	return st, nil
}

func decodePercentiles(st *Step, o map[string]json.RawMessage) error {
	st.Percentiles = map[string]map[float64]float64{}
	for k := range o {
		m := percentileKeyRE.FindStringSubmatch(k)
		if m == nil {
			continue
		}
		var p float64
		switch {
		case m[1] == "median":
			p = 50
		case m[2] != "":
			p, _ = strconv.ParseFloat(m[2], 64)
		default:
			continue // mean, std
		}
		v, ok, err := number(o, k)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		if st.Percentiles[m[3]] == nil {
			st.Percentiles[m[3]] = map[float64]float64{}
		}
		if _, set := st.Percentiles[m[3]][p]; !set || m[1] != "median" {
			st.Percentiles[m[3]][p] = v
		}
	}
	return nil
}

// errorClass reduces a vllm bench serve error text (an HTTP reason or a
// traceback) to its first line, at most 80 bytes: the class compared
// between sides.
func errorClass(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 80 {
		s = s[:80]
	}
	return s
}

func errorCounts(errs []string) map[string]int {
	out := map[string]int{}
	for _, e := range errs {
		if e != "" {
			out[errorClass(e)]++
		}
	}
	return out
}

// foreignPercentiles matches percentiles_<metric>_ms objects.
var foreignPercentiles = regexp.MustCompile(`^percentiles_(ttft|tpot|itl|e2el)_ms$`)

func decodeForeign(ev *Evidence, o map[string]json.RawMessage) (Step, error) {
	var st Step
	var odd []string
	for k, raw := range o {
		// String values may be --metadata pairs, which vLLM writes too.
		if !slices.Contains(vllmKeys, k) && !percentileKeyRE.MatchString(k) && (len(raw) == 0 || raw[0] != '"') {
			odd = append(odd, k)
		}
	}
	slices.Sort(odd)
	w := "not a native result schema (neither llmprobe's result.json nor vllm bench serve's --save-result form"
	if len(odd) > 0 {
		w += "; keys neither tool writes: " + strings.Join(odd, ", ")
	}
	w += "): figures are read as given and may not mean what the tools' keys mean"
	ev.Warnings = append(ev.Warnings, w)
	c, _, err := number(o, "completed")
	if err != nil {
		return st, err
	}
	f, hasF, err := number(o, "failed")
	if err != nil {
		return st, err
	}
	st.Completed, st.Failed = int(c), int(f)
	if !hasF {
		ev.Missing = append(ev.Missing, "failed")
	}
	if st.Throughput, _, err = number(o, "request_throughput"); err != nil {
		return st, err
	}
	if st.Duration, _, err = number(o, "duration"); err != nil {
		return st, err
	}
	if ot, ok, err := number(o, "output_throughput"); err != nil {
		return st, err
	} else if ok {
		st.OutputThroughput = &ot
	}
	if g, ok, err := number(o, "request_goodput"); err != nil {
		return st, err
	} else if ok {
		st.Goodput = &g
	}
	if err := decodePercentiles(&st, o); err != nil {
		return st, err
	}
	for k := range o {
		m := foreignPercentiles.FindStringSubmatch(k)
		if m == nil {
			continue
		}
		var ps map[string]float64
		if _, err := get(o, k, &ps); err != nil {
			return st, err
		}
		for pk, v := range ps {
			p, perr := strconv.ParseFloat(strings.TrimPrefix(pk, "p"), 64)
			if perr != nil || !(p > 0 && p < 100) {
				return st, fmt.Errorf("key %s: %q is not a percentile", k, pk)
			}
			if st.Percentiles[m[1]] == nil {
				st.Percentiles[m[1]] = map[float64]float64{}
			}
			st.Percentiles[m[1]][p] = v
		}
	}
	var sloMS map[string]float64
	if ok, err := get(o, "slo_ms", &sloMS); err != nil {
		return st, err
	} else if ok {
		for k, v := range sloMS {
			if !slices.Contains(slo.Names, k) {
				return st, fmt.Errorf("key slo_ms: unknown SLO %q (ttft, tpot, e2el, ttfa)", k)
			}
			if !(v > 0) {
				return st, fmt.Errorf("key slo_ms: %s must be > 0", k)
			}
		}
		ev.SLO, ev.SLOSource = sloOfMS(sloMS), "the file's slo_ms"
		st.GoodputSLO, st.GoodputSLOKnown = ev.SLO, true
	}
	rate := math.NaN()
	var rateRaw any
	if ok, err := get(o, "request_rate", &rateRaw); err != nil {
		return st, err
	} else if ok {
		if x, isNum := rateRaw.(float64); isNum {
			rate = x
		} else if s, isStr := rateRaw.(string); isStr && strings.EqualFold(s, "inf") {
			rate = math.Inf(1)
		}
	}
	st.Label = "rate=" + rateText(rate)
	if math.IsNaN(rate) {
		st.Label = "step"
	} else {
		addFields(ev.Fields, map[string]string{FieldRate: rateText(rate)})
	}
	var model string
	if _, err := get(o, "model_id", &model); err != nil {
		return st, err
	}
	addFields(ev.Fields, map[string]string{FieldModel: model})
	ev.Missing = append(ev.Missing, "per-request samples", "finish reasons", "error classes",
		"fingerprint (model, server version, engine config, workload, seed)", "validity: client send lag and idle proof")
	return st, nil
}
