package sweep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/prober/stats"
)

// filler sets every exported field of a value, recursively, to a value of
// its own that no other field holds: every number differs, every string,
// bool, map, slice and pointer is set. A result.json key whose value was
// not read back then shows as a difference.
type filler struct{ n int }

var timeType = reflect.TypeFor[time.Time]()

func (f *filler) fill(v reflect.Value) {
	f.n++
	switch {
	case v.Type() == timeType:
		v.Set(reflect.ValueOf(time.Date(2026, 5, 6, 7, 0, f.n, 0, time.UTC)))
		return
	}
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(int64(f.n))
	case reflect.Uint64, reflect.Uint32, reflect.Uint:
		v.SetUint(uint64(f.n))
	case reflect.Float64, reflect.Float32:
		v.SetFloat(float64(f.n) + 0.5)
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", f.n))
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		f.fill(v.Elem())
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		f.fill(s.Index(0))
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		f.fill(k)
		f.fill(e)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				f.fill(v.Field(i))
			}
		}
	}
}

// fullResult is a Result with every key result.json can hold set, each to
// a value of its own: a capped open-loop step with an SLO, a price, a
// dataset, a throughput probe and a search, beside a closed-loop step. The
// Go-only fields (what result.json does not hold) are zero.
func fullResult() *Result {
	f := &filler{}
	r := &Result{}
	f.fill(reflect.ValueOf(r).Elem())
	r.Name, r.InterruptedReason, r.MaxConcurrency, r.Rounds = "", "", 0, 0
	r.Fingerprint = Result{}.Fingerprint
	r.Metadata = map[string]string{"gpu": "h200", "zone": "a"}
	r.MetadataOrder = []string{"gpu", "zone"}
	r.SLO = map[string]float64{"ttft": 500, "e2el": 5000}
	r.Percentiles = []float64{75, 99.9}
	r.Knee.Found = true
	open, closed := r.Steps[0], &Step{}
	f.fill(reflect.ValueOf(closed).Elem())
	open.Mode, open.Level, open.Concurrency = ModeOpen, 4, 0
	closed.Mode, closed.MaxConcurrency = ModeClosed, 0
	closed.Level = float64(closed.Concurrency)
	r.Knee.Level = open.Level
	for _, st := range []*Step{open, closed} {
		st.Attempt += 1 // written as at least 1
		st.Validity.Valid = true
		st.Validity.Idle.Status = IdleNotRecorded
		st.Validity.Idle.Running, st.Validity.Idle.Waiting = 0, 0
		s := &st.Stats
		s.RequestedRate = st.Level
		s.sendLagsMS, s.kneeSamples = nil, nil
		lats := []*Latency{&s.TTFT, &s.TPOT, &s.ITL, &s.E2EL, &s.TTFTText, &s.SendLag, &s.QueueTime, &s.E2ELFromScheduled}
		for i, l := range lats {
			l.Percentiles = nil
			for _, p := range r.Percentiles {
				l.Percentiles = append(l.Percentiles, stats.Quantile{P: p, Value: float64(i) + p, Reliable: stats.Reliable(l.N, p)})
			}
			if i < 4 {
				// result.json writes neither the Min and Max of these four
				// nor their interval's Conf and Iters.
				l.Min, l.Max = 0, 0
				l.P99CI.Conf, l.P99CI.Iters = 0, 0
			}
		}
	}
	r.Steps = []*Step{open, closed}
	level := r.Levels[0]
	level.Level = open.Level
	level.Outcome = StepOutcome{}
	r.Levels = []Level{level}
	return r
}

// leanResult is a Result without any optional key: no SLO, price,
// dataset, probe, search, knee or cap.
func leanResult() *Result {
	st := &Step{Label: "rate=2", Level: 2, Round: 1, Attempt: 1, Mode: ModeOpen,
		Start: time.Date(2026, 5, 6, 7, 0, 0, 0, time.UTC), End: time.Date(2026, 5, 6, 7, 1, 0, 0, time.UTC),
		Stats: Stats{Duration: 4, Requests: 8, Completed: 8, Good: 6, RequestGoodput: 1.5, RequestedRate: 2,
			TTFT: Latency{Summary: stats.Summary{N: 8, Mean: 3, P99: 4}}, E2EL: Latency{Summary: stats.Summary{N: 8, Mean: 30, P99: 40}}},
		Validity: Validity{Valid: true, Flags: []string{}, Reasons: []string{}, Idle: IdleProof{Status: IdleNotRecorded}},
	}
	return &Result{Date: "20260506-070000", Backend: "openai", ModelID: "m", TokenizerID: "t", Mode: ModeOpen, Rates: "2",
		Arrival: "poisson", Burstiness: 1, Steps: []*Step{st}, Notes: []string{},
		Levels:   []Level{{Label: "rate=2", Level: 2, Rounds: 1, ValidRounds: 1}},
		Knee:     Knee{Reason: "no level failed", MaxGoodput: 1.5, MaxGoodputLevel: 2, Low: 2},
		KneeUnit: "req/s", Complete: true}
}

// keyPath is one key a result.json object's table wrote: its path from the
// top (keys, and indexes into levels and steps) and whether it is derived.
type keyPath struct {
	path    []any
	derived bool
}

func (k keyPath) String() string {
	var b strings.Builder
	for _, p := range k.path {
		switch p := p.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", p)
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			fmt.Fprint(&b, p)
		}
	}
	return b.String()
}

// writtenKeys walks the tables r is written with and returns every key
// they write; unwritten are the keys read but left out of this document.
func writtenKeys(r *Result) (written, unwritten []keyPath) {
	var walk func(prefix []any, o object)
	walk = func(prefix []any, o object) {
		for _, f := range o {
			p := append(slices.Clone(prefix), f.key)
			if f.omit {
				if f.derived == "" {
					unwritten = append(unwritten, keyPath{path: p})
				}
				continue
			}
			written = append(written, keyPath{path: p, derived: f.derived != ""})
			switch v := f.v.(type) {
			case *object:
				walk(p, *v)
			case *levelList:
				for i := range *v {
					walk(append(slices.Clone(p), i), levelKeys(&(*v)[i]))
				}
			case *stepList:
				for i, s := range v.r.Steps {
					walk(append(slices.Clone(p), i), v.r.stepKeys(s))
				}
			}
		}
	}
	schema := ResultSchemaVersion
	walk(nil, r.topKeys(&schema))
	return written, unwritten
}

// without returns the result.json b without the key at path.
func without(t *testing.T, b []byte, path []any) []byte {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var doc any
	if err := d.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	v := doc
	for i, p := range path {
		switch p := p.(type) {
		case string:
			m := v.(map[string]any)
			if i == len(path)-1 {
				if _, ok := m[p]; !ok {
					t.Fatalf("%v: not in the document", path)
				}
				delete(m, p)
			}
			v = m[p]
		case int:
			v = v.([]any)[p]
		}
	}
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestResultKeysReadBack holds result.json's codec to its tables: every key
// written is read back (the document without it reads back as a different
// Result), every derived key is derived (without it, the Result read back
// writes it again, the same), and every key read is written when its value
// is there.
func TestResultKeysReadBack(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  *Result
		// full: every value is set and differs from its zero, so that a
		// key read back must change what is read when it is missing.
		full bool
	}{
		{"every key set", fullResult(), true},
		{"no optional key", leanResult(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := encodeResult(t, tc.res)
			got := decodeBack(t, b)
			if again := encodeResult(t, got); !bytes.Equal(again, b) {
				t.Fatalf("result.json encoded again differs:\n%s\nwant:\n%s", again, b)
			}
			written, unwritten := writtenKeys(got)
			if tc.full && len(unwritten) > 0 {
				t.Errorf("keys read but not written with every value set: %v", unwritten)
			}
			readBack := 0
			for _, k := range written {
				res, err := DecodeResult(bytes.NewReader(without(t, b, k.path)))
				same := err == nil && bytes.Equal(encodeResult(t, res), b)
				switch {
				case k.derived && !same:
					t.Errorf("%v is marked derived, but without it the result reads back different (%v)", k, err)
				case !k.derived && same && tc.full:
					t.Errorf("%v is written but not read back: without it the result reads back the same", k)
				}
				if !k.derived {
					readBack++
				}
			}
			t.Logf("%d keys written, %d of them read back", len(written), readBack)
		})
	}
}
