package compare

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/prober/slo"
)

func TestCheckTeachingExample(t *testing.T) {
	ev, err := Decode("teaching-example.json", readTestdata(t, "teaching-example.json"))
	if err != nil {
		t.Fatal(err)
	}
	if ev.Format != FormatForeign || len(ev.Warnings) != 1 || !strings.Contains(ev.Warnings[0], "not a native result schema") ||
		!strings.Contains(ev.Warnings[0], "keys neither tool writes: percentiles_tpot_ms, percentiles_ttft_ms, slo_ms)") {
		t.Errorf("format %s, warnings %q", ev.Format, ev.Warnings)
	}
	c := CheckSLO(ev, slo.SLO{})
	if c.SLOSource != "the file's slo_ms" || c.SLO["ttft"] != 800 || c.SLO["tpot"] != 50 {
		t.Errorf("SLO %v from %q", c.SLO, c.SLOSource)
	}
	if len(c.Steps) != 1 {
		t.Fatalf("%d steps", len(c.Steps))
	}
	st := c.Steps[0]
	if st.ErrorRate == nil || math.Abs(*st.ErrorRate-0.02) > 1e-12 {
		t.Errorf("error rate %v, want 0.02", st.ErrorRate)
	}
	if st.GoodputRatio == nil || math.Abs(*st.GoodputRatio-3.1/3.7) > 1e-12 {
		t.Errorf("goodput ratio %v, want 3.1/3.7", st.GoodputRatio)
	}
	want := []SLOResult{{Metric: "ttft", ThresholdMS: 800, ValueMS: 910, Status: StatusFailed}, {Metric: "tpot", ThresholdMS: 50, ValueMS: 67, Status: StatusFailed}}
	for i, w := range want {
		g := st.SLO[i]
		if g.Metric != w.Metric || g.ThresholdMS != w.ThresholdMS || g.ValueMS != w.ValueMS || g.Status != w.Status {
			t.Errorf("SLO %d: %+v, want %+v", i, g, w)
		}
	}
	if c.Outcome != OutcomeFail || c.ExitCode() != ExitFail {
		t.Errorf("outcome %s exit %d", c.Outcome, c.ExitCode())
	}
	// A looser --goodput overrides the file's SLO; the recorded goodput
	// was counted under the file's, so the ratio is not recorded.
	c = CheckSLO(ev, slo.SLO{TTFT: time.Second, TPOT: 100 * time.Millisecond})
	if c.Outcome != OutcomePass || c.Steps[0].GoodputRatio != nil || !strings.Contains(c.Steps[0].GoodputNote, "not recorded under this SLO") {
		t.Errorf("--goodput ttft:1000 tpot:100: outcome %s, ratio %v (%s)", c.Outcome, c.Steps[0].GoodputRatio, c.Steps[0].GoodputNote)
	}
}

func TestDecodeVLLM(t *testing.T) {
	sloGiven := slo.SLO{TTFT: 800 * time.Millisecond, TPOT: 50 * time.Millisecond}
	t.Run("detailed", func(t *testing.T) {
		ev, err := Decode("d.json", readTestdata(t, "vllm-serve-detailed.json"))
		if err != nil {
			t.Fatal(err)
		}
		if ev.Format != FormatVLLM || len(ev.Warnings) != 0 {
			t.Errorf("format %s warnings %q", ev.Format, ev.Warnings)
		}
		st := ev.Steps[0]
		if st.Label != "rate=4" || st.Completed != 198 || st.Failed != 2 || len(st.Requests) != 200 || st.Goodput == nil {
			t.Fatalf("step %+v", st)
		}
		if st.ErrorClasses["Internal Server Error"] != 2 {
			t.Errorf("error classes %v", st.ErrorClasses)
		}
		if got := ev.Fields[FieldModel]; len(got) != 1 || got[0] != "Qwen/Qwen2.5-7B-Instruct" {
			t.Errorf("model field %v", got)
		}
		c := CheckSLO(ev, sloGiven)
		s := c.Steps[0]
		if s.GoodputRatio == nil || *s.GoodputRatio != 1 || !strings.Contains(s.GoodputNote, "198 of 198") {
			t.Errorf("goodput ratio %v (%s)", s.GoodputRatio, s.GoodputNote)
		}
		if s.SLO[0].Source != "recorded" || s.SLO[0].Status != StatusOK || s.SLO[0].N != 198 || !s.SLO[0].Reliable {
			t.Errorf("ttft check %+v", s.SLO[0])
		}
		// The recorded p99 equals the one of the per-request samples.
		rs, _ := latencySamples([]*Step{&ev.Steps[0]}, MetricTPOT)
		if got := newFigure(rs, nil, 99).value(); math.Abs(got-st.Percentiles[MetricTPOT][99]) > 1e-6 {
			t.Errorf("tpot p99 from samples %v, recorded %v", got, st.Percentiles[MetricTPOT][99])
		}
		if c.Outcome != OutcomePass {
			t.Errorf("outcome %s", c.Outcome)
		}
	})
	t.Run("old goodput key", func(t *testing.T) {
		ev, err := Decode("o.json", readTestdata(t, "vllm-serve-old-goodput-key.json"))
		if err != nil {
			t.Fatal(err)
		}
		if len(ev.Warnings) != 1 || !strings.Contains(ev.Warnings[0], `"request_goodput:"`) {
			t.Errorf("warnings %q", ev.Warnings)
		}
		st := ev.Steps[0]
		if st.Goodput == nil || *st.Goodput != 7.05 || st.Requests != nil || st.Label != "rate=8" {
			t.Fatalf("step %+v", st)
		}
		missing := strings.Join(ev.Missing, "\n")
		for _, w := range []string{"failed (older", "per-request samples (vllm bench serve --save-detailed)"} {
			if !strings.Contains(missing, w) {
				t.Errorf("missing lacks %q:\n%s", w, missing)
			}
		}
		c := CheckSLO(ev, sloGiven)
		s := c.Steps[0]
		if s.GoodputRatio == nil || math.Abs(*s.GoodputRatio-7.05/7.84) > 1e-12 || !strings.Contains(s.GoodputNote, "does not record which") {
			t.Errorf("goodput ratio %v (%s)", s.GoodputRatio, s.GoodputNote)
		}
		if s.SLO[0].ValueMS != 612 || s.SLO[0].Status != StatusOK || s.SLO[1].ValueMS != 41.7 {
			t.Errorf("checks %+v", s.SLO)
		}
	})
	t.Run("append-result lines", func(t *testing.T) {
		one := strings.TrimSpace(string(readTestdata(t, "vllm-serve-old-goodput-key.json")))
		one = strings.ReplaceAll(one, "\n", "")
		ev, err := Decode("a.jsonl", []byte(one+"\n"+one+"\n"))
		if err != nil {
			t.Fatal(err)
		}
		if len(ev.Steps) != 2 || ev.Steps[1].Round != 2 || ev.Rounds() != 2 {
			t.Errorf("steps %d, second round %d", len(ev.Steps), ev.Steps[1].Round)
		}
	})
}

func TestDecodeBadInput(t *testing.T) {
	for in, msg := range map[string]string{
		"":                   "not a result file: empty",
		"hello":              "not a result file: not a JSON object",
		`{"a": 1}`:           "no completed or request_throughput key",
		`{"completed": 1`:    "invalid JSON",
		`[1, 2]`:             "not a JSON object",
		`{"completed": "x"}`: "key completed",
		`{"llmprobe_result_schema": 1, "steps": 3}`: "llmprobe result.json",
	} {
		_, err := Decode("x", []byte(in))
		if err == nil || !errors.Is(err, ErrNotResult) || !strings.Contains(err.Error(), msg) || strings.Contains(err.Error(), "\n") {
			t.Errorf("Decode(%q) = %v, want one line with %q", in, err, msg)
		}
	}
}
