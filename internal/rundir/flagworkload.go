package rundir

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/llmprobe/llmprobe/prober/sweep"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// applyRequestFlags applies the request flags over the workload's request
// section (a --workload file's, read and checked by
// config.LoadWorkloadFile) and validates it, so that every problem names
// its flag before anything is sent.
func applyRequestFlags(f *SweepFlags, w *workload.Spec) error {
	r := w.Request
	if r == nil {
		r = &workload.Request{}
	} else {
		c := *r
		r = &c
	}
	// The table's Workload.Request.* settings, and the flag of each YAML key.
	set, flags := false, map[string]string{}
	rv, rt := reflect.ValueOf(r).Elem(), reflect.TypeFor[workload.Request]()
	for _, s := range sweep.Settings() {
		name, ok := strings.CutPrefix(s.Field, "Workload.Request.")
		if !ok {
			continue
		}
		sf, _ := rt.FieldByName(name)
		key, _, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		flags[key] = s.Flag
		changed, err := f.setRequestField(s.Flag, rv.FieldByName(name))
		if err != nil {
			return err
		}
		set = set || changed
	}
	if !set {
		return nil
	}
	if err := r.Validate(); err != nil {
		flag := "workload"
		if fe, ok := errors.AsType[*workload.FieldError](err); ok {
			key, _, _ := strings.Cut(fe.Field, ".")
			key, _, _ = strings.Cut(key, "[")
			if fl, ok := flags[key]; ok {
				flag = fl
			}
		}
		return &FlagError{Flag: flag, Err: err}
	}
	w.Request = r
	return nil
}

// setRequestField sets a request field from its flag: a pointer field
// when the flag is given (an explicit 0 temperature), another one when the
// value is not zero; a map (extra_body) from the flag's JSON. It reports
// whether it set the field.
func (f *SweepFlags) setRequestField(flag string, fv reflect.Value) (bool, error) {
	v := reflect.ValueOf(f.value(flag))
	if fv.Kind() == reflect.Map && !v.IsZero() {
		m := reflect.New(fv.Type())
		if err := json.Unmarshal([]byte(v.String()), m.Interface()); err != nil || m.Elem().IsNil() {
			if err == nil {
				err = errors.New("null")
			}
			return false, &FlagError{Flag: flag, Err: fmt.Errorf("must be a JSON object: %w", err)}
		}
		v = m.Elem()
	}
	switch {
	case fv.Kind() == reflect.Pointer && f.isSet(flag):
		p := reflect.New(fv.Type().Elem())
		p.Elem().Set(v)
		fv.Set(p)
	case fv.Kind() != reflect.Pointer && !v.IsZero():
		fv.Set(v)
	default:
		return false, nil
	}
	return true, nil
}

// applyDataset sets the workload of --dataset in c, refusing the length
// flags it replaces.
func applyDataset(f *SweepFlags, c *sweep.Config) error {
	var conflict []string
	if f.str("workload") != "" {
		conflict = append(conflict, "--workload")
	}
	if f.isSet("input-len") {
		conflict = append(conflict, "--input-len")
	}
	if f.isSet("range-ratio") {
		conflict = append(conflict, "--range-ratio")
	}
	if f.num("prefix-len") != 0 {
		conflict = append(conflict, "--prefix-len")
	}
	if len(conflict) > 0 {
		return &FlagError{Flag: "dataset", Err: errors.New("the dataset's prompts set the input lengths: drop " + strings.Join(conflict, ", "))}
	}
	maxEntries := f.num("dataset-max-entries")
	if err := sweep.LookupField("Workload.Dataset.MaxEntries").Check(float64(maxEntries), maxEntries); err != nil {
		return err
	}
	path := f.str("dataset")
	spec := workload.Spec{Dataset: &workload.DatasetSpec{Path: path, Format: f.str("dataset-format"),
		Sampling: f.str("dataset-sampling"), MaxEntries: &maxEntries}}
	if f.isSet("output-len") {
		spec.OutputTokens = workload.Fixed(f.num("output-len"))
	}
	c.Workload, c.WorkloadSource = spec, path
	return nil
}

// applySweepTraceFlags loads --trace into c (before any load is sent:
// errors name the file, line and field) and replaces the rate ladder with
// the trace's speeds.
func applySweepTraceFlags(f *SweepFlags, c *sweep.Config) error {
	file := f.str("trace")
	if file == "" {
		for _, flag := range []string{"trace-speed", "trace-block-size"} {
			if f.isSet(flag) {
				return &FlagError{Flag: flag, Err: errors.New("needs --trace")}
			}
		}
		return nil
	}
	switch {
	case f.isSet("rates") || f.isSet("concurrency"):
		return &FlagError{Flag: "trace", Err: errors.New("replays the trace's own timing: give --trace-speed, not --rates or --concurrency")}
	case f.isSet("input-len") || f.isSet("output-len") || f.isSet("range-ratio") || f.str("workload") != "" || f.num("prefix-len") != 0:
		return &FlagError{Flag: "trace", Err: errors.New("the trace gives each request's lengths and prefixes: " +
			"--input-len, --output-len, --range-ratio, --prefix-len and --workload do not apply")}
	}
	if err := sweep.LookupField("TraceSpeeds").Apply(c, f.str("trace-speed")); err != nil {
		return err
	}
	tr, err := workload.LoadTrace(file, workload.TraceOptions{BlockSize: f.num("trace-block-size")})
	if err != nil {
		return &FlagError{Flag: "trace", Err: err}
	}
	c.Trace = tr
	c.Rates, c.Auto, c.RatesText = nil, false, ""
	if !f.isSet("duration") {
		c.Duration = 0 // the whole trace
	}
	return nil
}
