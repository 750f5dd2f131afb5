package conformance_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/llmprobe/llmprobe/prober/scrape"
)

// signature is what the drift alarm compares of one metric family: its type
// and the names of its labels (over every series; a histogram's le is not
// a label).
type signature struct {
	Type   string
	Labels string // sorted, comma-separated
}

func (s signature) String() string { return s.Type + "{" + s.Labels + "}" }

// signatures returns the signature of every family of snap, keyed as the
// scraper keys them.
func signatures(snap *scrape.Snapshot) map[string]signature {
	out := make(map[string]signature, len(snap.Families))
	for name, mf := range snap.Families {
		set := map[string]bool{}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				set[lp.GetName()] = true
			}
		}
		names := make([]string, 0, len(set))
		for n := range set {
			names = append(names, n)
		}
		sort.Strings(names)
		out[name] = signature{Type: strings.ToLower(mf.GetType().String()), Labels: strings.Join(names, ",")}
	}
	return out
}

// framing returns the facets of an SSE body that the drift alarm compares:
//
//   - terminator: "[DONE]" when the last event is data: [DONE], else "none";
//   - finish: "last-token" when the finish_reason rides on a chunk that
//     carries text (or a delta with content, reasoning or tool calls),
//     "own-chunk" when it comes on a chunk of its own;
//   - usage: where the final usage (the last one with a non-zero
//     total_tokens; Ollama's zero usage on every completions chunk is not
//     it) is: "own-chunk" (empty choices), "finish-chunk", or "none";
//   - role (chat): "own-chunk" when the first chunk carries the role and no
//     content, "first-chunk" when the first content chunk carries it and
//     later ones do not, "every-chunk" when every content chunk does,
//     "none" when no chunk does, "single-chunk" when one chunk holds all
//     the content (first and every cannot be told apart);
//   - reasoning_field (chat): the delta field that carries reasoning text
//     ("reasoning_content", "reasoning"), absent when none does;
//   - tool_name (chat): whether the first tool-call delta that names the
//     function carries it "alone" or "with-arguments" (a non-empty
//     arguments fragment beside the name), absent when no delta names one.
//
// Every event must be a "data:" line; an error names the first that is not.
func framing(body []byte) (map[string]string, error) {
	type choice struct {
		Text         *string                    `json:"text"`
		Delta        map[string]json.RawMessage `json:"delta"`
		FinishReason *string                    `json:"finish_reason"`
	}
	type chunk struct {
		Choices *[]choice `json:"choices"`
		Usage   *struct {
			TotalTokens int `json:"total_tokens"`
		} `json:"usage"`
	}
	var chunks []chunk
	f := map[string]string{"usage": "none"}
	err := scanSSE(body, false, f, func(_, data string) error {
		var c chunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			return fmt.Errorf("chunk %q: %w", data, err)
		}
		chunks = append(chunks, c)
		return nil
	})
	if err != nil {
		return nil, err
	}
	nonEmpty := func(raw json.RawMessage) bool {
		s := strings.TrimSpace(string(raw))
		return s != "" && s != "null" && s != `""` && s != "[]"
	}
	carries := func(ch choice) bool {
		if ch.Text != nil && *ch.Text != "" {
			return true
		}
		for _, k := range []string{"content", "reasoning_content", "reasoning", "tool_calls"} {
			if nonEmpty(ch.Delta[k]) {
				return true
			}
		}
		return false
	}
	chat := false
	var roles []bool // per content chunk: does it carry the role
	for i, c := range chunks {
		if c.Usage != nil && c.Usage.TotalTokens > 0 {
			switch {
			case c.Choices != nil && len(*c.Choices) == 0:
				f["usage"] = "own-chunk"
			default:
				f["usage"] = "finish-chunk"
			}
		}
		if c.Choices == nil || len(*c.Choices) == 0 {
			continue
		}
		ch := (*c.Choices)[0]
		if ch.Delta != nil {
			chat = true
			for _, k := range []string{"reasoning_content", "reasoning"} {
				if nonEmpty(ch.Delta[k]) {
					f["reasoning_field"] = k
				}
			}
			if _, seen := f["tool_name"]; !seen && nonEmpty(ch.Delta["tool_calls"]) {
				var calls []struct {
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				}
				if err := json.Unmarshal(ch.Delta["tool_calls"], &calls); err != nil {
					return nil, fmt.Errorf("tool_calls %s: %w", ch.Delta["tool_calls"], err)
				}
				for _, c := range calls {
					if c.Function.Name != "" {
						f["tool_name"] = map[bool]string{true: "alone", false: "with-arguments"}[c.Function.Arguments == ""]
						break
					}
				}
			}
			hasRole := nonEmpty(ch.Delta["role"])
			if i == 0 && hasRole && !carries(ch) {
				f["role"] = "own-chunk"
			} else if carries(ch) {
				roles = append(roles, hasRole)
			}
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			if carries(ch) {
				f["finish"] = "last-token"
			} else {
				f["finish"] = "own-chunk"
			}
		}
	}
	if chat && f["role"] == "" {
		switch {
		case len(roles) == 1:
			f["role"] = "single-chunk" // first or every: the stream cannot tell
		case len(roles) > 0 && !slices.Contains(roles, false):
			f["role"] = "every-chunk"
		case len(roles) > 0 && roles[0] && !slices.Contains(roles[1:], true):
			f["role"] = "first-chunk"
		case !slices.Contains(roles, true):
			f["role"] = "none"
		default:
			f["role"] = "mixed"
		}
	}
	return f, nil
}

// msgFraming describes a streamed Anthropic Messages answer: whether
// data: [DONE] ends it ("terminator"), whether it has a ping event, whether
// message_start's usage.input_tokens is "zero" or "set" (vLLM counts the
// prompt there; SGLang's role chunk has no usage) and whether events carry
// null fields ("nulls": "yes" or "none"; SGLang dumps with exclude_none).
// Each event's data must be JSON whose type repeats the event name.
func msgFraming(body []byte) (map[string]string, error) {
	f := map[string]string{"ping": "none", "start_input_tokens": "none", "nulls": "none"}
	err := scanSSE(body, true, f, func(name, data string) error {
		var ev struct {
			Type    string `json:"type"`
			Message *struct {
				Usage struct {
					InputTokens int `json:"input_tokens"`
				} `json:"usage"`
			} `json:"message"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			return fmt.Errorf("event %s: %w", name, err)
		}
		if ev.Type != name {
			return fmt.Errorf("event %q has type %q", name, ev.Type)
		}
		if strings.Contains(data, ":null") {
			f["nulls"] = "yes"
		}
		switch ev.Type {
		case "ping":
			f["ping"] = "yes"
		case "message_start":
			f["start_input_tokens"] = "zero"
			if ev.Message != nil && ev.Message.Usage.InputTokens > 0 {
				f["start_input_tokens"] = "set"
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

// scanSSE calls fn with each data line of the SSE body (trimmed; data:
// [DONE] excepted) and the name of the event line before it (with events;
// without, an event line is an error), and sets f["terminator"] to "[DONE]"
// when data: [DONE] ends the body, else "none".
func scanSSE(body []byte, events bool, f map[string]string, fn func(name, data string) error) error {
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	name, last := "", ""
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if line == "" || strings.HasPrefix(line, ":") {
			continue
		}
		if ev, ok := strings.CutPrefix(line, "event:"); ok && events {
			name = strings.TrimSpace(ev)
			continue
		}
		data, ok := strings.CutPrefix(line, "data:")
		if !ok && events {
			return fmt.Errorf("line %q is neither an event nor a data line", line)
		} else if !ok {
			return fmt.Errorf("event line %q is not a data line", line)
		}
		data = strings.TrimSpace(data)
		last = data
		if data == "[DONE]" {
			continue
		}
		if err := fn(name, data); err != nil {
			return err
		}
		name = ""
	}
	f["terminator"] = "none"
	if last == "[DONE]" {
		f["terminator"] = "[DONE]"
	}
	return sc.Err()
}
