package workload

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/llmprobe/llmprobe/prober/capfile"
)

// Request feature kinds (RequestFeature.Kind).
const (
	// FeatureNoStream sends "stream": false: one JSON response, measured
	// end to end only (no TTFT, ITL or TPOT).
	FeatureNoStream = "no_stream"
	// FeatureLogprobs asks for log probabilities (completions "logprobs":
	// N; chat "logprobs": true, "top_logprobs": N).
	FeatureLogprobs = "logprobs"
	// FeatureJSONSchema sends response_format {type: json_schema} and
	// checks the generated text against the schema.
	FeatureJSONSchema = "json_schema"
	// FeatureLoRA names a LoRA adapter as the request's model.
	FeatureLoRA = "lora"
	// FeatureTools offers tools (functions) with a tool_choice; the tool
	// calls of the answer are checked against their parameter schemas
	// (tools.go).
	FeatureTools = "tools"
	// FeatureImages attaches generated images (PNG or JPEG, as base64 data
	// URLs in image content parts) to a chat or Responses request
	// (images.go).
	FeatureImages = "images"
)

// FeatureKinds lists the feature kinds in draw order.
var FeatureKinds = []string{FeatureNoStream, FeatureLogprobs, FeatureJSONSchema, FeatureLoRA, FeatureTools, FeatureImages}

// Bounds of a Request spec.
const (
	// MaxFeatures bounds the entries of Request.Features.
	MaxFeatures = 16
	// MaxStops bounds Request.Stop (entries), MaxStopBytes each entry.
	MaxStops     = 16
	MaxStopBytes = 1 << 10
	// MaxTopLogprobs is the largest top_logprobs (vLLM's default
	// max_logprobs).
	MaxTopLogprobs = 20
	// MaxExtraBodyBytes bounds the encoded extra_body.
	MaxExtraBodyBytes = 64 << 10
	// MaxSchemaBytes bounds one encoded JSON schema (inline or read from
	// schema_file).
	MaxSchemaBytes = 1 << 20
	// maxModelName bounds a LoRA adapter name.
	maxModelName = 256
)

// Request is the request-feature part of a workload (`workload.request` in
// the probe config and in a sweep's --workload file): sampling parameters
// sent with every request, a free extra_body merged into the JSON body, and
// features each carried by a share of the requests, e.g.
//
//	request:
//	  temperature: 0.7
//	  top_p: 0.9
//	  seed: 7
//	  stop: ["\n\n"]
//	  min_tokens: 4
//	  extra_body: {repetition_penalty: 1.1}
//	  features:
//	    - {kind: no_stream, share: 0.1}
//	    - {kind: logprobs, share: 0.2, top_logprobs: 5}
//	    - {kind: json_schema, share: 0.1, schema_file: order.schema.json}
//	    - {kind: lora, share: 0.3, model: sql-lora}
//
// Which features a request carries is drawn from the workload seed and the
// item index (RequestPlan.Draw): deterministic, whatever the order of the
// sends. Validate checks it; ReadSchemaFiles reads the schema files before.
type Request struct {
	// Temperature, TopP and Seed are sent as temperature, top_p and seed
	// when set (seed is the server's sampling seed, not the workload's).
	Temperature *float64 `yaml:"temperature,omitempty" json:"temperature,omitempty"`
	TopP        *float64 `yaml:"top_p,omitempty" json:"top_p,omitempty"`
	Seed        *int64   `yaml:"seed,omitempty" json:"seed,omitempty"`
	// Stop is sent as stop when not empty.
	Stop []string `yaml:"stop,omitempty" json:"stop,omitempty"`
	// MinTokens is sent as min_tokens (vLLM) when > 0.
	MinTokens int `yaml:"min_tokens,omitempty" json:"min_tokens,omitempty"`
	// ReasoningEffort, when set, asks a reasoning model for that much
	// thinking: one of ReasoningEfforts, sent as "reasoning_effort" (chat)
	// or "reasoning": {"effort": ...} (responses); completions do not send
	// it.
	ReasoningEffort string `yaml:"reasoning_effort,omitempty" json:"reasoning_effort,omitempty"`
	// ChatTemplateKwargs is sent as "chat_template_kwargs" (vLLM's chat
	// template arguments, e.g. {enable_thinking: false} for probes that
	// must stay short on a reasoning model).
	ChatTemplateKwargs map[string]any `yaml:"chat_template_kwargs,omitempty" json:"chat_template_kwargs,omitempty"`
	// ExtraBody is merged into every request's JSON body; it may not set
	// ReservedBodyKeys.
	ExtraBody map[string]any `yaml:"extra_body,omitempty" json:"extra_body,omitempty"`
	// Features are carried each by its share of the requests.
	Features []RequestFeature `yaml:"features,omitempty" json:"features,omitempty"`
}

// RequestFeature is one feature of a Request and its share of requests.
// Features of different kinds are drawn independently; several features of
// the kind json_schema (or lora) split one draw, so a request carries at
// most one schema and one adapter and their shares may add up to 1 at most.
type RequestFeature struct {
	// Kind is one of FeatureKinds.
	Kind string `yaml:"kind" json:"kind"`
	// Share is the fraction of requests that carry the feature, in (0, 1].
	Share float64 `yaml:"share" json:"share"`
	// TopLogprobs (logprobs) is the number of top alternatives asked per
	// token, 0..MaxTopLogprobs.
	TopLogprobs int `yaml:"top_logprobs,omitempty" json:"top_logprobs,omitempty"`
	// Name (json_schema) is the schema's name in response_format; default
	// "llmprobe".
	Name string `yaml:"name,omitempty" json:"name,omitempty"`
	// Schema (json_schema) is the JSON schema, inline; SchemaFile names a
	// JSON file holding it instead (relative to the configuration or
	// workload file), read by ReadSchemaFiles into Schema.
	Schema     map[string]any `yaml:"schema,omitempty" json:"schema,omitempty"`
	SchemaFile string         `yaml:"schema_file,omitempty" json:"schema_file,omitempty"`
	// Model (lora) is the adapter's name, sent as the request's model.
	Model string `yaml:"model,omitempty" json:"model,omitempty"`
	// Tools (tools) are the functions offered, ToolChoice how the model
	// may use them: auto (default), required, none, or a tool's name.
	Tools      []ToolSpec `yaml:"tools,omitempty" json:"tools,omitempty"`
	ToolChoice string     `yaml:"tool_choice,omitempty" json:"tool_choice,omitempty"`
	// Count, Width, Height and Format (images) are the images attached to
	// a request: how many (1..MaxImages), their size in pixels and their
	// encoding (png, the default, or jpeg). Distinct, when > 0, draws them
	// from a pool of that many images made once (so a server's multimodal
	// cache may hit); 0 gives every image of every request its own.
	Count    int    `yaml:"count,omitempty" json:"count,omitempty"`
	Width    int    `yaml:"width,omitempty" json:"width,omitempty"`
	Height   int    `yaml:"height,omitempty" json:"height,omitempty"`
	Format   string `yaml:"format,omitempty" json:"format,omitempty"`
	Distinct int    `yaml:"distinct,omitempty" json:"distinct,omitempty"`

	fileRead bool // Schema was read from SchemaFile
}

// FieldError is a Request (or Spec) validation error naming the field at
// fault as a YAML path below the workload, e.g. "request.features[1].share".
type FieldError struct {
	Field string
	Err   error
}

// Error returns "field: reason".
func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }

// Unwrap returns Err.
func (e *FieldError) Unwrap() error { return e.Err }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Err: fmt.Errorf(format, args...)}
}

// under prefixes the field of a *FieldError.
func under(prefix string, err error) error {
	if fe, ok := errors.AsType[*FieldError](err); ok {
		return &FieldError{Field: prefix + "." + fe.Field, Err: fe.Err}
	}
	return &FieldError{Field: prefix, Err: err}
}

var schemaNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// ReadSchemaFiles reads the schema_file of every json_schema feature
// (relative paths from dir; empty dir: the working directory) into Schema,
// at most MaxSchemaBytes each. Errors are *FieldError naming the feature.
func (r *Request) ReadSchemaFiles(dir string) error {
	if r == nil {
		return nil
	}
	for i := range r.Features {
		f := &r.Features[i]
		if f.SchemaFile == "" || f.fileRead {
			continue
		}
		field := fmt.Sprintf("features[%d].schema_file", i)
		if f.Schema != nil {
			return fieldErr(field, "give schema or schema_file, not both")
		}
		path := f.SchemaFile
		if !filepath.IsAbs(path) && dir != "" {
			path = filepath.Join(dir, path)
		}
		b, err := readBounded(path, MaxSchemaBytes)
		if err != nil {
			return &FieldError{Field: field, Err: err}
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			return fieldErr(field, "%s: not a JSON object: %w", path, err)
		}
		f.Schema, f.fileRead = m, true
	}
	return nil
}

// readBounded reads at most limit bytes of the file at path; a larger (or
// endless) file is an error naming it.
func readBounded(path string, limit int64) ([]byte, error) {
	fh, err := capfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	b, err := capfile.ReadAll(fh, path, limit)
	var te *capfile.TooLargeError
	if errors.As(err, &te) {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}

// Validate checks every field: errors are *FieldError naming the first
// field at fault (paths below `request`). Schemas are compiled here, so a
// bad schema fails at load. A json_schema feature with a schema_file must
// have been through ReadSchemaFiles.
func (r *Request) Validate() error {
	if r == nil {
		return nil
	}
	_, err := NewRequestPlan(r)
	return err
}

// RequestPlan is a validated Request ready for drawing: the sampling
// members of the body encoded once, the schemas compiled. It is immutable
// and safe for concurrent use.
type RequestPlan struct {
	minTokens   int
	noStream    float64 // share, 0: none
	logprobs    float64
	topLogprobs int
	schemas     []planSchema
	loras       []planLoRA
	tools       float64 // share, 0: none
	toolSet     *ToolSet
	images      float64 // share, 0: none
	imageSet    *imageSet
	nonce       uint64 // SetNonce
	effort      string
	body        []byte // the members sent with every request
}

type planSchema struct {
	cum    float64 // cumulative share
	schema *Schema
	body   []byte // body + the response_format member
}

type planLoRA struct {
	cum   float64
	model string
}

// NewRequestPlan validates r and builds its plan; nil r gives a nil plan
// (no features). Errors are *FieldError.
func NewRequestPlan(r *Request) (*RequestPlan, error) {
	if r == nil {
		return nil, nil
	}
	p := &RequestPlan{minTokens: r.MinTokens}
	var body []byte
	member := func(k string, v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		kb, _ := json.Marshal(k)
		body = append(append(append(append(body, ','), kb...), ':'), b...)
		return nil
	}
	if t := r.Temperature; t != nil {
		if !(*t >= 0) || math.IsInf(*t, 0) {
			return nil, fieldErr("temperature", "must be a finite number >= 0, got %v", *t)
		}
		_ = member("temperature", *t)
	}
	if t := r.TopP; t != nil {
		if !(*t > 0 && *t <= 1) {
			return nil, fieldErr("top_p", "must be in (0, 1], got %v", *t)
		}
		_ = member("top_p", *t)
	}
	if r.Seed != nil {
		_ = member("seed", *r.Seed)
	}
	if len(r.Stop) > MaxStops {
		return nil, fieldErr("stop", "at most %d stop strings, got %d", MaxStops, len(r.Stop))
	}
	for i, s := range r.Stop {
		if s == "" || len(s) > MaxStopBytes {
			return nil, fieldErr(fmt.Sprintf("stop[%d]", i), "must be 1 to %d bytes, got %d", MaxStopBytes, len(s))
		}
	}
	if len(r.Stop) > 0 {
		_ = member("stop", r.Stop)
	}
	if r.MinTokens < 0 || r.MinTokens > MaxLength {
		return nil, fieldErr("min_tokens", "must be in [0, %d], got %d", MaxLength, r.MinTokens)
	}
	if r.ReasoningEffort != "" && !slices.Contains(ReasoningEfforts, r.ReasoningEffort) {
		return nil, fieldErr("reasoning_effort", "must be one of %s, got %q", strings.Join(ReasoningEfforts, ", "), r.ReasoningEffort)
	}
	p.effort = r.ReasoningEffort
	if r.ChatTemplateKwargs != nil {
		start := len(body)
		if err := member("chat_template_kwargs", r.ChatTemplateKwargs); err != nil {
			return nil, fieldErr("chat_template_kwargs", "cannot be encoded as JSON: %w", err)
		}
		if len(body)-start > MaxExtraBodyBytes {
			return nil, fieldErr("chat_template_kwargs", "encodes to %d bytes, more than %d", len(body)-start, MaxExtraBodyBytes)
		}
	}
	keys := slices.Sorted(maps.Keys(r.ExtraBody))
	for _, k := range keys {
		if slices.Contains(ReservedBodyKeys, k) {
			return nil, fieldErr("extra_body."+k, "may not be set in extra_body (llmprobe sets it; use the request field or feature that sends it)")
		}
		if why, ok := MultiplyingBodyKeys[k]; ok {
			return nil, fieldErr("extra_body."+k, "may not be set in extra_body: %s", why)
		}
		if k == "" {
			return nil, fieldErr("extra_body", "keys must not be empty")
		}
	}
	start := len(body)
	for _, k := range keys {
		if err := member(k, r.ExtraBody[k]); err != nil {
			return nil, fieldErr("extra_body."+k, "cannot be encoded as JSON: %w", err)
		}
	}
	if len(body)-start > MaxExtraBodyBytes {
		return nil, fieldErr("extra_body", "encodes to %d bytes, more than %d", len(body)-start, MaxExtraBodyBytes)
	}
	p.body = body

	if len(r.Features) > MaxFeatures {
		return nil, fieldErr("features", "at most %d features, got %d", MaxFeatures, len(r.Features))
	}
	var schemaCum, loraCum float64
	for i, f := range r.Features {
		at := fmt.Sprintf("features[%d]", i)
		if !slices.Contains(FeatureKinds, f.Kind) {
			return nil, fieldErr(at+".kind", "must be one of %s, got %q", strings.Join(FeatureKinds, ", "), f.Kind)
		}
		if !(f.Share > 0 && f.Share <= 1) {
			return nil, fieldErr(at+".share", "must be in (0, 1], got %v", f.Share)
		}
		if err := f.checkUnused(at); err != nil {
			return nil, err
		}
		switch f.Kind {
		case FeatureNoStream:
			if p.noStream > 0 {
				return nil, fieldErr(at+".kind", "no_stream is given twice")
			}
			p.noStream = f.Share
		case FeatureLogprobs:
			if p.logprobs > 0 {
				return nil, fieldErr(at+".kind", "logprobs is given twice")
			}
			if f.TopLogprobs < 0 || f.TopLogprobs > MaxTopLogprobs {
				return nil, fieldErr(at+".top_logprobs", "must be in [0, %d], got %d", MaxTopLogprobs, f.TopLogprobs)
			}
			p.logprobs, p.topLogprobs = f.Share, f.TopLogprobs
		case FeatureJSONSchema:
			name := f.Name
			if name == "" {
				name = "llmprobe"
			} else if !schemaNameRE.MatchString(name) {
				return nil, fieldErr(at+".name", "must match [a-zA-Z0-9_-]{1,64}, got %q", name)
			}
			if f.Schema == nil {
				if f.SchemaFile != "" {
					return nil, fieldErr(at+".schema_file", "not read (ReadSchemaFiles)")
				}
				return nil, fieldErr(at+".schema", "required for kind json_schema (or schema_file)")
			}
			field := at + ".schema"
			if f.fileRead {
				field = at + ".schema_file"
			}
			sb, err := json.Marshal(f.Schema)
			if err != nil {
				return nil, fieldErr(field, "cannot be encoded as JSON: %w", err)
			}
			if len(sb) > MaxSchemaBytes {
				return nil, fieldErr(field, "encodes to %d bytes, more than %d", len(sb), MaxSchemaBytes)
			}
			sch, err := CompileSchema(sb)
			if err != nil {
				return nil, &FieldError{Field: field, Err: err}
			}
			schemaCum += f.Share
			if schemaCum > 1+1e-9 {
				return nil, fieldErr(at+".share", "the shares of the json_schema features add up to %v, more than 1", schemaCum)
			}
			rf, _ := json.Marshal(map[string]any{"type": "json_schema",
				"json_schema": map[string]any{"name": name, "schema": json.RawMessage(sb)}})
			b := append(append(slices.Clip(body), `,"response_format":`...), rf...)
			p.schemas = append(p.schemas, planSchema{cum: schemaCum, schema: sch, body: b})
		case FeatureLoRA:
			if err := validateModelName(f.Model); err != nil {
				return nil, &FieldError{Field: at + ".model", Err: err}
			}
			loraCum += f.Share
			if loraCum > 1+1e-9 {
				return nil, fieldErr(at+".share", "the shares of the lora features add up to %v, more than 1", loraCum)
			}
			p.loras = append(p.loras, planLoRA{cum: loraCum, model: f.Model})
		case FeatureTools:
			if p.tools > 0 {
				return nil, fieldErr(at+".kind", "tools is given twice")
			}
			ts, err := newToolSet(f.Tools, f.ToolChoice)
			if err != nil {
				return nil, under(at, err)
			}
			p.tools, p.toolSet = f.Share, ts
		case FeatureImages:
			if p.images > 0 {
				return nil, fieldErr(at+".kind", "images is given twice")
			}
			is, err := newImageSet(f, at)
			if err != nil {
				return nil, err
			}
			p.images, p.imageSet = f.Share, is
		}
	}
	return p, nil
}

// checkUnused rejects fields set for a kind that does not use them.
func (f RequestFeature) checkUnused(at string) error {
	set := map[string]bool{
		"top_logprobs": f.TopLogprobs != 0, "name": f.Name != "", "schema": f.Schema != nil && !f.fileRead,
		"schema_file": f.SchemaFile != "", "model": f.Model != "", "tools": f.Tools != nil, "tool_choice": f.ToolChoice != "",
		"count": f.Count != 0, "width": f.Width != 0, "height": f.Height != 0, "format": f.Format != "", "distinct": f.Distinct != 0,
	}
	used := map[string][]string{
		FeatureLogprobs:   {"top_logprobs"},
		FeatureJSONSchema: {"name", "schema", "schema_file"},
		FeatureLoRA:       {"model"},
		FeatureTools:      {"tools", "tool_choice"},
		FeatureImages:     {"count", "width", "height", "format", "distinct"},
	}[f.Kind]
	for _, k := range []string{"top_logprobs", "name", "schema", "schema_file", "model", "tools", "tool_choice",
		"count", "width", "height", "format", "distinct"} {
		if set[k] && !slices.Contains(used, k) {
			return fieldErr(at+"."+k, "does not apply to kind %s", f.Kind)
		}
	}
	return nil
}

// validateModelName checks a LoRA adapter name: 1 to 256 bytes of
// printable characters without spaces.
func validateModelName(s string) error {
	if s == "" {
		return errors.New("required for kind lora: the adapter's name as /v1/models lists it")
	}
	if len(s) > maxModelName {
		return fmt.Errorf("must be at most %d bytes, got %d", maxModelName, len(s))
	}
	if strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0 {
		return fmt.Errorf("must not contain spaces or control characters, got %q", s)
	}
	return nil
}

// LoRAModels returns the adapter names of the plan's lora features, in
// order (nil for a nil plan).
func (p *RequestPlan) LoRAModels() []string {
	if p == nil {
		return nil
	}
	var out []string
	for _, l := range p.loras {
		out = append(out, l.model)
	}
	return out
}

// RequestDraw is what one request carries of a RequestPlan.
type RequestDraw struct {
	// NoStream, Logprobs (with TopLogprobs), Schema (nil: none) and Model
	// (the LoRA adapter; "": the target's model) are the drawn features.
	NoStream    bool
	Logprobs    bool
	TopLogprobs int
	Schema      *Schema
	Model       string
	// MinTokens is the spec's min_tokens; ReasoningEffort its
	// reasoning_effort ("": none).
	MinTokens       int
	ReasoningEffort string
	// Tools is the tools feature's set when drawn (nil: none).
	Tools *ToolSet
	// Images are the images feature's images when drawn (nil: none),
	// made here, before the send (images.go).
	Images []Image
	// Body holds the JSON members (`,"key":value`...) to append to the
	// request body: sampling parameters, extra_body, response_format. It
	// is shared: do not modify it.
	Body []byte
	// Names lists the kinds drawn, in FeatureKinds order (nil: none).
	Names []string
}

// Draw returns the features the request of item index carries under the
// workload seed: one uniform draw per kind, a pure function of (seed,
// index, kind), so each kind realises its share whatever the order of the
// calls. A nil plan draws nothing.
func (p *RequestPlan) Draw(seed uint64, index int64) RequestDraw {
	if p == nil {
		return RequestDraw{}
	}
	d := RequestDraw{MinTokens: p.minTokens, Body: p.body, ReasoningEffort: p.effort}
	u := func(kind uint64) float64 {
		h := splitmix(seed ^ 0x6665617475726573 ^ splitmix(uint64(index)^splitmix(kind)))
		return float64(h>>11) / (1 << 53)
	}
	if p.noStream > 0 && u(0) < p.noStream {
		d.NoStream = true
		d.Names = append(d.Names, FeatureNoStream)
	}
	if p.logprobs > 0 && u(1) < p.logprobs {
		d.Logprobs, d.TopLogprobs = true, p.topLogprobs
		d.Names = append(d.Names, FeatureLogprobs)
	}
	if len(p.schemas) > 0 {
		x := u(2)
		for _, s := range p.schemas {
			if x < s.cum {
				d.Schema, d.Body = s.schema, s.body
				d.Names = append(d.Names, FeatureJSONSchema)
				break
			}
		}
	}
	if len(p.loras) > 0 {
		x := u(3)
		for _, l := range p.loras {
			if x < l.cum {
				d.Model = l.model
				d.Names = append(d.Names, FeatureLoRA)
				break
			}
		}
	}
	if p.tools > 0 && u(4) < p.tools {
		d.Tools = p.toolSet
		d.Names = append(d.Names, FeatureTools)
	}
	if p.images > 0 && u(5) < p.images {
		d.Images = p.imageSet.images(MixNonce(seed, p.nonce), index)
		d.Names = append(d.Names, FeatureImages)
	}
	return d
}

// SetNonce mixes a run's prompt nonce into the images the plan makes (as
// Generator.SetPromptNonce does into the texts), so that runs with fresh
// nonces send images a server has not seen; the same seed and nonce give
// the same bytes. Call it before the plan is used.
func (p *RequestPlan) SetNonce(n uint64) {
	if p != nil {
		p.nonce = n
	}
}

// ImagesFeature returns the index of the request's images feature, or -1
// when it has none (nil r included): callers refuse it for APIs other
// than chat.
func (r *Request) ImagesFeature() int {
	if r == nil {
		return -1
	}
	return slices.IndexFunc(r.Features, func(f RequestFeature) bool { return f.Kind == FeatureImages })
}
