package report

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/llmprobe/llmprobe/prober/fingerprint"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// num formats a number compactly: integers without decimals, otherwise
// three significant digits (at most one decimal from 10 up, none from 100
// up), trailing zeros trimmed; NaN as "-", +Inf as "inf".
func num(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	}
	a := math.Abs(v)
	var s string
	switch {
	case v == math.Trunc(v) && a < 1e15:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		s = strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		s = strconv.FormatFloat(v, 'f', 2, 64)
	default:
		s = strconv.FormatFloat(v, 'g', 3, 64)
	}
	if strings.Contains(s, ".") && !strings.ContainsAny(s, "eE") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// pct formats a fraction as a percentage ("95%").
func pct(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "-"
	}
	return num(math.Round(f*1000)/10) + "%"
}

// recorded reports whether f holds a usable number (known and finite).
func recorded(f sweep.Figure) bool {
	return f.Known && !math.IsNaN(f.Value) && !math.IsInf(f.Value, 0)
}

// val formats a Figure, "not-recorded" when unknown (or not finite).
func val(f sweep.Figure) string {
	if !recorded(f) {
		return fingerprint.NotRecorded
	}
	return num(f.Value)
}

// valPct formats a 0..1 Figure as a percentage.
func valPct(f sweep.Figure) string {
	if !recorded(f) {
		return fingerprint.NotRecorded
	}
	return pct(f.Value)
}

// quantile formats quantile q (0..1) of a server histogram, f its value:
// "≤ first bound" when it falls into the first bucket, where
// interpolating from 0 says nothing (sweep.ServerLatency.InFirstBucket).
func quantile(l sweep.ServerLatency, f sweep.Figure, q float64) string {
	if recorded(f) && l.InFirstBucket(q) {
		return "≤ " + num(l.FirstBucketLEMS.Value)
	}
	return val(f)
}

// counts formats a count map sorted by key: "http_5xx: 3, timeout: 1".
func counts(m map[string]int) string {
	if len(m) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s: %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// utc formats a time in UTC, "not-recorded" when zero.
func utc(t time.Time) string {
	if t.IsZero() {
		return fingerprint.NotRecorded
	}
	return t.UTC().Format(time.RFC3339)
}

// mdCell escapes text for a Markdown table cell.
func mdCell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

// notRecordedFields lists the dotted JSON paths of every fingerprint field
// whose value is "not-recorded", sorted.
func notRecordedFields(fp fingerprint.Fingerprint) []string {
	b, err := json.Marshal(fp)
	if err != nil {
		return nil
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil
	}
	var out []string
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch t := v.(type) {
		case map[string]any:
			for k, c := range t {
				p := k
				if prefix != "" {
					p = prefix + "." + k
				}
				walk(p, c)
			}
		case []any:
			for i, c := range t {
				walk(fmt.Sprintf("%s[%d]", prefix, i), c)
			}
		case string:
			if t == fingerprint.NotRecorded {
				out = append(out, prefix)
			}
		}
	}
	walk("", v)
	sort.Strings(out)
	return out
}
