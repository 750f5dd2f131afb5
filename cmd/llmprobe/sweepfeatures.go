package main

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
func applyRequestFlags(f *sweepFlags, w *workload.Spec) error {
	r := w.Request
	if r == nil {
		r = &workload.Request{}
	} else {
		c := *r
		r = &c
	}
	// The table's Workload.Request.* settings: a pointer field is set when
	// its flag is given (an explicit 0 temperature), another one when its
	// value is not zero; a map (extra_body) from the flag's JSON.
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
		fv, v := rv.FieldByName(name), reflect.ValueOf(f.value(s.Flag))
		if fv.Kind() == reflect.Map && !v.IsZero() {
			m := reflect.New(fv.Type())
			if err := json.Unmarshal([]byte(v.String()), m.Interface()); err != nil || m.Elem().IsNil() {
				if err == nil {
					err = errors.New("null")
				}
				return &flagError{flag: s.Flag, err: fmt.Errorf("must be a JSON object: %w", err)}
			}
			v = m.Elem()
		}
		switch {
		case fv.Kind() == reflect.Pointer && f.isSet(s.Flag):
			p := reflect.New(fv.Type().Elem())
			p.Elem().Set(v)
			fv.Set(p)
		case fv.Kind() != reflect.Pointer && !v.IsZero():
			fv.Set(v)
		default:
			continue
		}
		set = true
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
		return &flagError{flag: flag, err: err}
	}
	w.Request = r
	return nil
}
