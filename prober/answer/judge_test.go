package answer

import (
	"strings"
	"testing"
)

func mustItem(t *testing.T, line string) *Item {
	t.Helper()
	s, err := Parse("t", strings.NewReader(line))
	if err != nil {
		t.Fatalf("parse %s: %v", line, err)
	}
	return s.Items[0]
}

func TestJudge(t *testing.T) {
	for _, tc := range []struct {
		name   string
		item   string
		reply  Reply
		pass   bool
		reason string
	}{
		{"exact", `{"id":"a","prompt":"p","exact":"PROBE"}`, Reply{Text: " PROBE\n"}, true, ""},
		{"exact wrong", `{"id":"a","prompt":"p","exact":"PROBE"}`, Reply{Text: "probe"}, false, `reply "probe" is not "PROBE"`},
		{"exact leaked template", `{"id":"a","prompt":"p","exact":"PROBE"}`, Reply{Text: "<|im_start|>assistant\nPROBE<|im_end|>"}, false, "is not"},
		{"contains", `{"id":"a","prompt":"p","contains":"Paris"}`, Reply{Text: "The capital is Paris."}, true, ""},
		{"contains no", `{"id":"a","prompt":"p","contains":"Paris"}`, Reply{Text: "Lyon"}, false, `does not contain "Paris"`},
		{"regex", `{"id":"a","prompt":"p","regex":"^(?i)yes\\b"}`, Reply{Text: " Yes."}, true, ""},
		{"regex no", `{"id":"a","prompt":"p","regex":"^(?i)yes\\b"}`, Reply{Text: "no"}, false, "does not match"},
		{"number", `{"id":"a","prompt":"p","number":42}`, Reply{Text: " 42"}, true, ""},
		{"number period", `{"id":"a","prompt":"p","number":42}`, Reply{Text: "42."}, true, ""},
		{"number thousands", `{"id":"a","prompt":"p","number":6912}`, Reply{Text: "6,912"}, true, ""},
		{"number off by one", `{"id":"a","prompt":"p","number":42}`, Reply{Text: "43"}, false, `reply "43" is not 42 ± 0`},
		{"number within tolerance", `{"id":"a","prompt":"p","number":3.5,"tolerance":0.01}`, Reply{Text: "3.505"}, true, ""},
		{"number words", `{"id":"a","prompt":"p","number":42}`, Reply{Text: "The answer is 42"}, false, "is not a number"},
		{"number hex refused", `{"id":"a","prompt":"p","number":16}`, Reply{Text: "0x10"}, false, "is not a number"},
		{"number NaN refused", `{"id":"a","prompt":"p","number":1}`, Reply{Text: "NaN"}, false, "is not a number"},
		{"json", `{"id":"a","prompt":"p","json_schema":{"type":"object","required":["age"],"properties":{"age":{"const":31}}}}`,
			Reply{Text: `{"name":"Alice","age":31}`}, true, ""},
		{"json fenced", `{"id":"a","prompt":"p","json_schema":{"type":"object","required":["age"]}}`,
			Reply{Text: "```json\n{\"age\":31}\n```"}, true, ""},
		{"json wrong value", `{"id":"a","prompt":"p","json_schema":{"type":"object","properties":{"age":{"const":31}}}}`,
			Reply{Text: `{"age":32}`}, false, "does not match the schema"},
		{"json not json", `{"id":"a","prompt":"p","json_schema":{"type":"object"}}`, Reply{Text: `{"age":`}, false, "not JSON"},
		{"stop", `{"id":"a","prompt":"p","stop":", 6"}`, Reply{Text: "1, 2, 3, 4, 5", FinishReason: "stop"}, true, ""},
		{"stop ignored", `{"id":"a","prompt":"p","stop":", 6"}`, Reply{Text: "1, 2, 3, 4, 5, 6, 7", FinishReason: "stop"}, false, "goes past the stop sequence"},
		{"stop cut by length", `{"id":"a","prompt":"p","stop":", 6"}`, Reply{Text: "1, 2", FinishReason: "length"}, false, `finish_reason "length", want "stop"`},
		{"length", `{"id":"a","prompt":"p","max_tokens":8,"length":true}`, Reply{Text: "1, 2, 3", FinishReason: "length", CompletionTokens: 8}, true, ""},
		{"length stopped early", `{"id":"a","prompt":"p","max_tokens":8,"length":true}`, Reply{Text: "1", FinishReason: "stop", CompletionTokens: 2}, false, `finish_reason "stop"`},
		{"length miscounted", `{"id":"a","prompt":"p","max_tokens":8,"length":true}`, Reply{FinishReason: "length", CompletionTokens: 7}, false, "7 tokens generated, want max_tokens 8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Judge(mustItem(t, tc.item), tc.reply)
			if v.Pass != tc.pass || !strings.Contains(v.Reason, tc.reason) || tc.pass != (v.Reason == "") {
				t.Errorf("Judge = %+v, want pass %v reason containing %q", v, tc.pass, tc.reason)
			}
		})
	}
}

func TestJudgeQuotesBounded(t *testing.T) {
	it := mustItem(t, `{"id":"a","prompt":"p","exact":"x"}`)
	v := Judge(it, Reply{Text: strings.Repeat("é", 500)})
	if len(v.Reason) > 3*quoteBytes {
		t.Errorf("reason of %d bytes: %s", len(v.Reason), v.Reason)
	}
}
