package artifacts

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/prober"
)

// fillRecord sets every field of a Record to a value drawn from rng through
// reflection, so that a field added to prober.Record later is set too (and
// AppendRecordLine must then encode it like encoding/json does).
func fillRecord(rng *rand.Rand, strs []string) *prober.Record {
	r := &prober.Record{}
	v := reflect.ValueOf(r).Elem()
	zones := []*time.Location{time.UTC, time.FixedZone("X", 5*3600+1800), time.FixedZone("Y", -7*3600), time.Local}
	for i := range v.NumField() {
		f := v.Field(i)
		if v.Type().Field(i).Tag.Get("json") == "-" {
			continue // never written (ResponseID, ResponseModel: spans only)
		}
		zero := rng.IntN(4) == 0 // exercise omitempty
		switch f.Interface().(type) {
		case time.Time:
			t := time.Unix(rng.Int64N(1<<33), rng.Int64N(1e9)).In(zones[rng.IntN(len(zones))])
			if rng.IntN(5) == 0 {
				t = t.Truncate(time.Second)
			}
			if zero {
				t = time.Time{}
			}
			f.Set(reflect.ValueOf(t))
			continue
		case []string:
			n := rng.IntN(4)
			if zero {
				n = 0
			}
			var ss []string
			if n > 0 || rng.IntN(2) == 0 {
				ss = make([]string, n)
			}
			for j := range ss {
				ss[j] = strs[rng.IntN(len(strs))]
			}
			f.Set(reflect.ValueOf(ss))
			continue
		case map[string]string:
			n := rng.IntN(4)
			if zero {
				n = 0
			}
			var m map[string]string
			if n > 0 || rng.IntN(2) == 0 {
				m = make(map[string]string, n)
			}
			for range n {
				m[strs[rng.IntN(len(strs))]] = strs[rng.IntN(len(strs))]
			}
			f.Set(reflect.ValueOf(m))
			continue
		case []time.Duration:
			n := rng.IntN(70)
			if zero {
				n = 0
			}
			var itl []time.Duration
			if n > 0 || rng.IntN(2) == 0 {
				itl = make([]time.Duration, n)
			}
			for j := range itl {
				itl[j] = time.Duration(rng.Int64N(1<<40) - 1<<20)
			}
			f.Set(reflect.ValueOf(itl))
			continue
		}
		if zero {
			continue
		}
		switch f.Kind() {
		case reflect.String:
			f.SetString(strs[rng.IntN(len(strs))])
		case reflect.Int, reflect.Int64:
			f.SetInt(rng.Int64N(1<<50) - 1<<49)
		case reflect.Bool:
			f.SetBool(true)
		default:
			panic("fillRecord: add a case for " + f.Type().String())
		}
	}
	return r
}

// TestAppendRecordLineMatchesEncodingJSON holds the hand-written
// records.jsonl encoder to encoding/json, byte for byte, over random
// records with every field set or zero and strings with every byte, escape,
// invalid UTF-8 and the line separators.
func TestAppendRecordLineMatchesEncodingJSON(t *testing.T) {
	var all strings.Builder
	for c := range 256 {
		all.WriteByte(byte(c))
	}
	strs := []string{"", "a", "llmprobe-run-0-17", "http://127.0.0.1:8000", all.String(), "é\u2028\u2029\u00a0<>&'\"\\",
		"\xff\xfe", "a\xc3", "tab\there\nnew\rline\b\f\x00\x1f\x7f", "日本語", "rate=4/round=2", strings.Repeat("x", 300)}
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 0, 64)
	for i := range 3000 {
		line := RecordLine{Step: rng.IntN(20), Round: rng.IntN(3), Record: fillRecord(rng, strs)}
		if rng.IntN(3) == 0 {
			line.Prompt = strs[rng.IntN(len(strs))]
		}
		want, err := encodeJSON(line, false)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := AppendRecordLine(buf[:0], line)
		if !ok {
			t.Fatalf("record %d: not encoded", i)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("record %d:\ngot  %s\nwant %s", i, got, want)
		}
		buf = got
	}
	// What encoding/json refuses is left to it.
	if _, ok := AppendRecordLine(nil, RecordLine{}); ok {
		t.Error("a nil record was encoded")
	}
	if _, ok := AppendRecordLine(nil, RecordLine{Record: &prober.Record{Sent: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}}); ok {
		t.Error("a time after year 9999 was encoded")
	}
}

// BenchmarkRecordLine compares the records.jsonl encoders on a 64-token
// record (63 ITL gaps).
func BenchmarkRecordLine(b *testing.B) {
	at := time.Date(2026, 5, 6, 7, 8, 9, 123456789, time.UTC)
	itl := make([]time.Duration, 63)
	for i := range itl {
		itl[i] = 5*time.Millisecond + time.Duration(i)*1337
	}
	line := RecordLine{Step: 3, Round: 1, Record: &prober.Record{Target: "http://127.0.0.1:8000", Probe: "rate=800",
		Model: "llmprobe-sim", RequestID: "llmprobe-20260506T070809Z-3-12345", Scheduled: at, Sent: at.Add(40 * time.Microsecond),
		SendLag: 40 * time.Microsecond, TTFT: 20 * time.Millisecond, TTFTText: 20 * time.Millisecond, ITL: itl,
		E2E: 335 * time.Millisecond, Done: 336 * time.Millisecond, HeadersTime: time.Millisecond, InputTokens: 16,
		OutputTokensRequested: 64, PromptTokens: 16, CompletionTokens: 64, Events: 64, FinishReason: "length",
		HTTPStatus: 200, WallStart: at}}
	b.Run("encoding_json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := encodeJSON(line, false); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 2048)
		for b.Loop() {
			buf, _ = AppendRecordLine(buf[:0], line)
		}
	})
}
