package answer

import (
	"strings"
	"testing"
)

// FuzzParse: Parse never panics, and every set it accepts is within the
// bounds and judges any reply without panicking.
func FuzzParse(f *testing.F) {
	f.Add(`{"id":"a","prompt":"p","exact":"x"}`)
	f.Add(`{"id":"a","messages":[{"role":"user","content":"c"}],"regex":"^a+$"}`)
	f.Add(`{"id":"a","prompt":"p","json_schema":{"type":"object"}}` + "\n# c\n" + `{"id":"b","prompt":"p","number":1,"tolerance":0.5}`)
	f.Add(`{"id":"a","prompt":"p","length":true,"max_tokens":3}`)
	f.Fuzz(func(t *testing.T, in string) {
		s, err := Parse("f", strings.NewReader(in))
		if err != nil {
			return
		}
		if len(s.Items) == 0 || len(s.Items) > MaxChecks {
			t.Fatalf("%d items", len(s.Items))
		}
		for _, it := range s.Items {
			if it.ID == "" || len(it.ID) > MaxIDBytes || it.MaxTokens < 1 || it.MaxTokens > MaxCheckTokens {
				t.Fatalf("item %+v", it)
			}
			Judge(it, Reply{Text: in, FinishReason: "stop", CompletionTokens: it.MaxTokens})
		}
	})
}
