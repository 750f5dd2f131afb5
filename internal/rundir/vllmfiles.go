package rundir

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// VLLMDir is the directory of a run directory that holds every step again
// in exactly vllm bench serve's --save-result form, one file per step.
const VLLMDir = "vllm"

// vllmDateLayout is vllm bench serve's date format ("%Y%m%d-%H%M%S").
const vllmDateLayout = "20060102-150405"

// VLLMFileName is the name under VLLMDir of step st of res, in vllm bench
// serve's compute_result_filename pattern with the step as label:
// step<NN>-<rate>qps[-concurrency<N>]-<model basename>-<date>.json (the
// rate as Python writes a float: 4.0, 0.5, inf).
func VLLMFileName(res *sweep.Result, st *sweep.Step) string {
	rate, conc := st.Level, 0
	switch st.Mode {
	case sweep.ModeClosed:
		rate, conc = math.Inf(1), st.Concurrency
	default:
		conc = st.MaxConcurrency
	}
	r := "inf"
	if !math.IsInf(rate, 1) {
		r = strconv.FormatFloat(rate, 'f', -1, 64)
		if !strings.ContainsAny(r, ".e") {
			r += ".0"
		}
	}
	name := fmt.Sprintf("step%02d-%sqps", st.Index, r)
	if conc > 0 {
		name += fmt.Sprintf("-concurrency%d", conc)
	}
	model := path.Base(res.ModelID)
	if model == "." || model == "/" || model == "" {
		model = "model"
	}
	name += "-" + model + "-" + st.Start.UTC().Format(vllmDateLayout) + ".json"
	return VLLMDir + "/" + sanitizeFile(name)
}

// sanitizeFile keeps [A-Za-z0-9._-] of a file name.
func sanitizeFile(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		}
		return '_'
	}, s)
}

// writeVLLMFiles writes every step of res to VLLMDir in vllm bench serve
// --save-result form: the vLLM keys of the step's result.json object
// (sweep.Result.StepJSON) without llmprobe's extras, dated by the step's
// own start. With detailed, the --save-detailed arrays (input_lens,
// output_lens, ttfts, itls, start_times, generated_texts, errors) are added
// from the run's records.jsonl, with latencies and queue_times in the same
// request order (by scheduled send time); generated_texts are empty
// strings (llmprobe keeps no generated text) and start_times are seconds
// from the step's start.
func writeVLLMFiles(run *artifacts.Run, res *sweep.Result, detailed bool) error {
	var reqs map[int][]detailRecord
	if detailed {
		var err error
		if reqs, err = readDetail(filepath.Join(run.Dir(), artifacts.RecordsFile)); err != nil {
			return err
		}
	}
	for _, st := range res.Steps {
		b, err := vllmStepJSON(res, st, reqs[st.Index], detailed)
		if err != nil {
			return fmt.Errorf("step %d: %w", st.Index, err)
		}
		if err := run.WriteFile(VLLMFileName(res, st), b); err != nil {
			return err
		}
	}
	return nil
}

// vllmStepJSON renders one step in vllm bench serve form.
func vllmStepJSON(res *sweep.Result, st *sweep.Step, recs []detailRecord, detailed bool) ([]byte, error) {
	raw, err := json.Marshal(res.StepJSON(st))
	if err != nil {
		return nil, err
	}
	keys, vals, err := orderedObject(raw)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("{")
	n := 0
	put := func(k string, v any) error {
		var vb []byte
		switch x := v.(type) {
		case json.RawMessage:
			vb = x
		default:
			var err error
			if vb, err = json.Marshal(v); err != nil {
				return fmt.Errorf("key %s: %w", k, err)
			}
		}
		if n > 0 {
			b.WriteString(", ")
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteString(": ")
		b.Write(vb)
		n++
		return nil
	}
	slices.SortStableFunc(recs, func(a, b detailRecord) int { return a.Scheduled.Compare(b.Scheduled) })
	arr := func(f func(r detailRecord) any) []any {
		out := make([]any, len(recs))
		for i, r := range recs {
			out[i] = f(r)
		}
		return out
	}
	sec := func(d time.Duration) float64 { return d.Seconds() }
	for i, k := range keys {
		if k == "step" { // llmprobe's extras start here
			break
		}
		var err error
		switch {
		case k == "date":
			err = put(k, st.Start.UTC().Format(vllmDateLayout))
		case k == "latencies" && detailed:
			if err = put("input_lens", arr(func(r detailRecord) any { return r.inputLen() })); err != nil {
				return nil, err
			}
			if err = put("output_lens", arr(func(r detailRecord) any { return r.outputLen() })); err != nil {
				return nil, err
			}
			if err = put("ttfts", arr(func(r detailRecord) any { return r.okSec(r.TTFT) })); err != nil {
				return nil, err
			}
			if err = put("itls", arr(func(r detailRecord) any {
				out := make([]float64, len(r.ITL))
				for j, g := range r.ITL {
					out[j] = sec(g)
				}
				return out
			})); err != nil {
				return nil, err
			}
			if err = put("latencies", arr(func(r detailRecord) any { return r.okSec(r.E2E) })); err != nil {
				return nil, err
			}
			err = put("start_times", arr(func(r detailRecord) any { return r.WallStart.Sub(st.Start).Seconds() }))
		case k == "queue_times" && detailed:
			if err = put(k, arr(func(r detailRecord) any { return sec(r.QueueWait) })); err != nil {
				return nil, err
			}
			if err = put("generated_texts", arr(func(detailRecord) any { return "" })); err != nil {
				return nil, err
			}
			err = put("errors", arr(func(r detailRecord) any { return r.errorText() }))
		default:
			err = put(k, vals[i])
		}
		if err != nil {
			return nil, err
		}
	}
	b.WriteString("}\n")
	return b.Bytes(), nil
}

// orderedObject splits a JSON object into its keys and raw values, in
// order.
func orderedObject(raw []byte) ([]string, []json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, fmt.Errorf("step object: not a JSON object")
	}
	var keys []string
	var vals []json.RawMessage
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		keys, vals = append(keys, k), append(vals, v)
	}
	return keys, vals, nil
}

// detailRecord is what the --save-detailed arrays need of a records.jsonl
// line (artifacts.ReadRecords).
type detailRecord struct {
	Step             int
	Scheduled        time.Time
	WallStart        time.Time
	QueueWait        time.Duration
	TTFT             time.Duration
	ITL              []time.Duration
	E2E              time.Duration
	InputTokens      int
	PromptTokens     int
	CompletionTokens int
	Error            string
	ErrorMessage     string
}

func (r detailRecord) ok() bool { return r.Error == "" }

// okSec is d in seconds for a successful request, 0 for a failed one (as
// vllm bench serve writes a failed request's ttft and latency).
func (r detailRecord) okSec(d time.Duration) float64 {
	if !r.ok() {
		return 0
	}
	return d.Seconds()
}

func (r detailRecord) inputLen() int {
	if r.PromptTokens > 0 {
		return r.PromptTokens
	}
	return r.InputTokens
}

func (r detailRecord) outputLen() int {
	if !r.ok() {
		return 0
	}
	return r.CompletionTokens
}

func (r detailRecord) errorText() string {
	if r.ok() {
		return ""
	}
	if r.ErrorMessage != "" {
		return r.Error + ": " + r.ErrorMessage
	}
	return r.Error
}

// readDetail reads records.jsonl by step index.
func readDetail(p string) (map[int][]detailRecord, error) {
	out := map[int][]detailRecord{}
	err := artifacts.ReadRecords(p, func(l artifacts.RecordLine, _ []byte) error {
		r := l.Record
		out[l.Step] = append(out[l.Step], detailRecord{Step: l.Step, Scheduled: r.Scheduled, WallStart: r.WallStart,
			QueueWait: r.QueueWait, TTFT: r.TTFT, ITL: r.ITL, E2E: r.E2E, InputTokens: r.InputTokens, PromptTokens: r.PromptTokens,
			CompletionTokens: r.CompletionTokens, Error: string(r.Error), ErrorMessage: r.ErrorMessage})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
