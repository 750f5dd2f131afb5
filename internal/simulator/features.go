package simulator

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/alecthomas/kingpin/v2"
)

// Request features as vLLM serves them: LoRA adapters (--lora-modules),
// log probabilities (stream and non-stream shapes), response_format
// (json_schema: the output is a minimal JSON value that conforms to the
// schema; json_object: {}), and the sampling parameters, which are
// checked as vLLM checks them and otherwise do not change the output.
// The light mode (--light) serves none of them beyond accepting them.

// LoRAModule is one LoRA adapter of `--lora-modules name=path` (vLLM's
// flag): listed in /v1/models with the served model as parent, and
// accepted as a request's model.
type LoRAModule struct {
	Name string
	Path string
}

// MaxLogprobs is vLLM's default max_logprobs: the most logprobs (and
// top_logprobs) a request may ask.
const MaxLogprobs = 20

// maxStructuredBytes bounds the JSON built for a json_schema request.
const maxStructuredBytes = 64 << 10

// loraFlag is the repeatable --lora-modules value.
type loraFlag struct{ c *Config }

func (f loraFlag) Set(s string) error {
	if _, err := parseLoRA(s); err != nil {
		return err
	}
	f.c.LoRAModules = strings.TrimSpace(f.c.LoRAModules + " " + s)
	return nil
}

func (f loraFlag) String() string { return f.c.LoRAModules }

func (f loraFlag) IsCumulative() bool { return true }

// addFeatureFlags registers the flags of the request features.
func addFeatureFlags(cmd *kingpin.CmdClause, c *Config) {
	cmd.Flag("lora-modules", "A LoRA adapter as name=path (vLLM's flag; repeatable, or several separated by spaces): "+
		"listed in /v1/models with the served model as parent and accepted as a request's model.").SetValue(loraFlag{c})
}

// parseLoRA parses name=path pairs separated by spaces.
func parseLoRA(s string) ([]LoRAModule, error) {
	var out []LoRAModule
	for part := range strings.FieldsSeq(s) {
		name, path, ok := strings.Cut(part, "=")
		if !ok || name == "" || path == "" {
			return nil, fmt.Errorf("--lora-modules: want name=path, got %q", part)
		}
		out = append(out, LoRAModule{Name: name, Path: path})
	}
	return out, nil
}

// LoRA returns the adapters of LoRAModules (nil when it does not parse:
// Validate reports that).
func (c Config) LoRA() []LoRAModule {
	m, _ := parseLoRA(c.LoRAModules)
	return m
}

// validateLoRA checks the adapters: name=path pairs, names unique, none
// the served model's.
func (c Config) validateLoRA() error {
	mods, err := parseLoRA(c.LoRAModules)
	if err != nil {
		return err
	}
	seen := map[string]bool{c.Model: true}
	for _, m := range mods {
		if seen[m.Name] {
			return fmt.Errorf("--lora-modules: adapter name %q is given twice (or is the served model)", m.Name)
		}
		seen[m.Name] = true
	}
	return nil
}

// isLoRA reports whether name is one of the adapters.
func (s *Simulator) isLoRA(name string) bool {
	return slices.ContainsFunc(*s.lora.Load(), func(m LoRAModule) bool { return m.Name == name })
}

// SetLoRA replaces the served LoRA adapters (Config.LoRAModules at start)
// while the Simulator runs, as vLLM's runtime adapter loading
// (/v1/load_lora_adapter) changes them: /v1/models lists the new ones and
// requests naming a removed one get vLLM's 404 from the next request on.
// Safe for concurrent use. Adapter names are not checked: give unique
// names other than the served model.
func (s *Simulator) SetLoRA(mods []LoRAModule) {
	c := slices.Clone(mods)
	s.lora.Store(&c)
}

// loraCards are the /v1/models cards of the adapters, as vLLM lists them
// (root: the path, parent: the base model, no max_model_len).
func (s *Simulator) loraCards() []any {
	var cards []any
	for _, m := range *s.lora.Load() {
		cards = append(cards, map[string]any{
			"id": m.Name, "object": "model", "created": s.created, "owned_by": "vllm",
			"root": m.Path, "parent": s.cfg.Model, "max_model_len": nil,
			"permission": []any{map[string]any{
				"id": "modelperm-llmprobe-sim-lora", "object": "model_permission", "created": s.created,
				"allow_create_engine": false, "allow_sampling": true, "allow_logprobs": true,
				"allow_search_indices": false, "allow_view": true, "allow_fine_tuning": false,
				"organization": "*", "group": nil, "is_blocking": false,
			}},
		})
	}
	return cards
}

// featureFields are the request body fields of the features.
type featureFields struct {
	Logprobs       json.RawMessage `json:"logprobs"`
	TopLogprobs    *int            `json:"top_logprobs"`
	ResponseFormat json.RawMessage `json:"response_format"`
	Temperature    *float64        `json:"temperature"`
	TopP           *float64        `json:"top_p"`
	Seed           *int64          `json:"seed"`
	Stop           json.RawMessage `json:"stop"`
}

// parseFeatures validates the feature fields of a generation request as
// vLLM does and sets them on g.
func (s *Simulator) parseFeatures(body *genRequestJSON, g *genRequest) *apiError {
	f := body.featureFields
	g.model = s.cfg.Model
	if body.Model != nil {
		g.model = *body.Model
	}
	if t := f.Temperature; t != nil && !(*t >= 0) {
		return badRequest("temperature", "temperature must be non-negative, got %v.", *t)
	}
	if p := f.TopP; p != nil && !(*p > 0 && *p <= 1) {
		return badRequest("top_p", "top_p must be in (0, 1], got %v.", *p)
	}
	if len(f.Stop) > 0 && string(f.Stop) != "null" {
		var one string
		var many []string
		if json.Unmarshal(f.Stop, &one) == nil {
			many = []string{one}
		} else if json.Unmarshal(f.Stop, &many) != nil {
			return badRequest("stop", "stop must be a string or a list of strings")
		}
		g.stop = many
	}
	lp := f.Logprobs
	if len(lp) > 0 && string(lp) != "null" {
		switch g.kind {
		case kindCompletion:
			var n int
			if err := json.Unmarshal(lp, &n); err != nil {
				return badRequest("logprobs", "logprobs: expected an integer, got %s", string(lp))
			}
			if n < 0 {
				return badRequest("logprobs", "logprobs must be non-negative, got %d.", n)
			}
			if n > MaxLogprobs {
				return badRequest("logprobs", "Requested sample logprobs of %d, which is greater than max allowed: %d", n, MaxLogprobs)
			}
			g.logprobs, g.topLogprobs = true, n
		case kindChat:
			var b bool
			if err := json.Unmarshal(lp, &b); err != nil {
				return badRequest("logprobs", "logprobs: expected a boolean, got %s", string(lp))
			}
			g.logprobs = b
		}
	}
	if t := f.TopLogprobs; t != nil && g.kind == kindChat {
		if !g.logprobs {
			return badRequest("top_logprobs", "when using `top_logprobs`, `logprobs` must be set to true.")
		}
		if *t < 0 {
			return badRequest("top_logprobs", "`top_logprobs` must be a positive value.")
		}
		if *t > MaxLogprobs {
			return badRequest("top_logprobs", "Requested sample logprobs of %d, which is greater than max allowed: %d", *t, MaxLogprobs)
		}
		g.topLogprobs = *t
	}
	if rf := f.ResponseFormat; len(rf) > 0 && string(rf) != "null" {
		var v struct {
			Type       string `json:"type"`
			JSONSchema *struct {
				Name   string          `json:"name"`
				Schema json.RawMessage `json:"schema"`
			} `json:"json_schema"`
		}
		if err := json.Unmarshal(rf, &v); err != nil {
			return badRequest("response_format", "response_format: %v", err)
		}
		switch v.Type {
		case "text":
		case "json_object":
			g.structured = []byte("{}")
		case "json_schema":
			if v.JSONSchema == nil || len(v.JSONSchema.Schema) == 0 {
				return badRequest("response_format", "response_format.json_schema.schema is required for type json_schema")
			}
			var schema any
			if err := json.Unmarshal(v.JSONSchema.Schema, &schema); err != nil {
				return badRequest("response_format", "response_format.json_schema.schema: %v", err)
			}
			b, err := json.Marshal(minimalJSON(schema, 0))
			if err != nil || len(b) > maxStructuredBytes {
				return badRequest("response_format", "the simulator cannot build an output for this schema")
			}
			g.structured = b
		default:
			return badRequest("response_format", "response_format.type must be text, json_object or json_schema, got %q", v.Type)
		}
	}
	return nil
}

// minimalJSON builds a small value that conforms to a JSON schema's
// const, enum, type, required properties, minItems, minLength and
// minimum/maximum (first branch of anyOf/oneOf, first of allOf); what it
// does not model (patterns, formats beyond a few, $ref) may not conform.
func minimalJSON(schema any, depth int) any {
	m, ok := schema.(map[string]any)
	if !ok || depth > 32 {
		return nil
	}
	if c, ok := m["const"]; ok {
		return c
	}
	if e, ok := m["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if alts, ok := m[k].([]any); ok && len(alts) > 0 {
			return minimalJSON(alts[0], depth+1)
		}
	}
	typ, _ := m["type"].(string)
	if ts, ok := m["type"].([]any); ok {
		for _, t := range ts {
			if s, _ := t.(string); s != "" && (typ == "" || typ == "null") {
				typ = s
			}
		}
	}
	if typ == "" {
		if _, ok := m["properties"]; ok {
			typ = "object"
		} else if _, ok := m["items"]; ok {
			typ = "array"
		}
	}
	num := func(k string) (float64, bool) {
		f, ok := m[k].(float64)
		return f, ok
	}
	switch typ {
	case "object":
		out := map[string]any{}
		props, _ := m["properties"].(map[string]any)
		req, _ := m["required"].([]any)
		for _, r := range req {
			if k, ok := r.(string); ok {
				out[k] = minimalJSON(props[k], depth+1)
			}
		}
		return out
	case "array":
		n := 0
		if f, ok := num("minItems"); ok {
			n = min(int(f), 16)
		}
		out := make([]any, 0, n)
		prefix, _ := m["prefixItems"].([]any)
		for i := range n {
			if i < len(prefix) {
				out = append(out, minimalJSON(prefix[i], depth+1))
			} else {
				out = append(out, minimalJSON(m["items"], depth+1))
			}
		}
		return out
	case "string":
		switch m["format"] {
		case "date-time":
			return "2025-01-01T00:00:00Z"
		case "date":
			return "2025-01-01"
		case "email":
			return "sim@example.com"
		case "uuid":
			return "00000000-0000-4000-8000-000000000000"
		case "uri":
			return "https://example.com/"
		}
		n := 1
		if f, ok := num("minLength"); ok {
			n = min(int(f), 256)
		}
		if f, ok := num("maxLength"); ok && int(f) < n {
			n = int(f)
		}
		return strings.Repeat("x", n)
	case "integer", "number":
		v := 0.0
		if f, ok := num("minimum"); ok && v < f {
			v = f
		}
		if f, ok := num("exclusiveMinimum"); ok && v <= f {
			v = f + 1
		}
		if f, ok := num("maximum"); ok && v > f {
			v = f
		}
		if f, ok := num("exclusiveMaximum"); ok && v >= f {
			v = f - 1
		}
		if typ == "integer" {
			v = math.Ceil(v)
		}
		return v
	case "boolean":
		return false
	}
	return nil
}

// structuredText is the text of output tokens [from, to) of a json_schema
// (or json_object) request: the JSON value spread over the tokens that
// carry text, whole runes per token, then spaces (valid trailing JSON
// whitespace) when there are more tokens than bytes.
func structuredText(seq *sequence, from, to int) string {
	j := seq.structured
	// The value is spread over the answer tokens, after the reasoning.
	from, to = from-seq.reasoning, to-seq.reasoning
	n := seq.finishLen - seq.reasoning
	if seq.finishWhy == finishStop {
		n-- // the EOS token has no text
	}
	n = max(n, 1)
	bound := func(i int) int {
		if i >= n {
			return len(j)
		}
		b := min(i, len(j)) // one byte per token when there are more tokens than bytes
		if len(j) > n {
			b = i * len(j) / n
		}
		for b < len(j) && !utf8.RuneStart(j[b]) {
			b++
		}
		return b
	}
	var sb strings.Builder
	for i := max(from, 0); i < to && i < n; i++ {
		a := bound(i)
		if a >= len(j) {
			sb.WriteByte(' ')
			continue
		}
		sb.Write(j[a:bound(i+1)])
	}
	return sb.String()
}

// tokenText is the text of output token i (outputText's piece of it).
func tokenText(seq *sequence, i int) string { return outputText(seq, i, i+1) }

// logprobsOf builds the logprobs of output tokens [from, to) in vLLM's
// shape (completions: CompletionLogProbs; chat: ChatCompletionLogProbs);
// nil when the request asked none. Values are deterministic from the
// sequence's seed; the sampled token is the most likely.
func logprobsOf(g *genRequest, seq *sequence, from, to int, offset int) any {
	if !g.logprobs {
		return nil
	}
	lp := func(i, k int) float64 {
		if seq.answer != nil {
			return answerLogprob(seq.answer, i, k)
		}
		return -float64(k)*0.75 - 2*uniform(hash2(seq.textSeed^0x10b, uint64(i)<<8|uint64(k)))
	}
	alt := func(i, k int) string {
		w := " " + vocabWord(int(hash2(seq.textSeed^0xa17, uint64(i)<<8|uint64(k))%VocabSize))
		if seq.answer != nil {
			return answerAlt(seq.answer, i, k, w)
		}
		return w
	}
	if g.kind == kindChat {
		type top struct {
			Token   string  `json:"token"`
			Logprob float64 `json:"logprob"`
			Bytes   []int   `json:"bytes"`
		}
		type entry struct {
			Token       string  `json:"token"`
			Logprob     float64 `json:"logprob"`
			Bytes       []int   `json:"bytes"`
			TopLogprobs []top   `json:"top_logprobs"`
		}
		bytesOf := func(s string) []int {
			out := make([]int, len(s))
			for i := range len(s) {
				out[i] = int(s[i])
			}
			return out
		}
		content := []entry{}
		for i := from; i < to; i++ {
			t := tokenText(seq, i)
			e := entry{Token: t, Logprob: lp(i, 0), Bytes: bytesOf(t), TopLogprobs: []top{}}
			for k := range g.topLogprobs {
				tt := t
				if k > 0 {
					tt = alt(i, k)
				}
				e.TopLogprobs = append(e.TopLogprobs, top{Token: tt, Logprob: lp(i, k), Bytes: bytesOf(tt)})
			}
			content = append(content, e)
		}
		return map[string]any{"content": content}
	}
	var offsets []int
	var tokenLPs []float64
	var tokens []string
	var tops []map[string]float64
	for i := from; i < to; i++ {
		t := tokenText(seq, i)
		offsets = append(offsets, offset)
		offset += len(t)
		tokens = append(tokens, t)
		tokenLPs = append(tokenLPs, lp(i, 0))
		top := map[string]float64{t: lp(i, 0)}
		for k := 1; k < g.topLogprobs; k++ {
			top[alt(i, k)] = lp(i, k)
		}
		tops = append(tops, top)
	}
	return map[string]any{"text_offset": offsets, "token_logprobs": tokenLPs, "tokens": tokens, "top_logprobs": tops}
}

// traceFeatures names the features g asked for, for its TraceRecord.
func (g *genRequest) traceFeatures() []string {
	var out []string
	if g.logprobs {
		out = append(out, "logprobs")
	}
	if g.structured != nil {
		out = append(out, "response_format")
	}
	if !g.stream {
		out = append(out, "no_stream")
	}
	if len(g.images) > 0 {
		out = append(out, "images")
	}
	return out
}
