package workload

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/llmprobe/llmprobe/prober/bounded"
)

// Tokenizer methods, as recorded in sweep fingerprints.
const (
	// MethodServerTokenize: prompts sized with the target's POST /tokenize.
	MethodServerTokenize = "server-tokenize"
	// MethodCalibrated: prompts sized with a tokens-per-word estimate
	// calibrated from the server's usage.prompt_tokens.
	MethodCalibrated = "calibrated"
	// MethodCustom is reported for a Tokenizer that does not say.
	MethodCustom = "custom"
)

// Tokenizer counts the tokens of a prompt as the target will count them
// (special tokens and, for chat, the chat template included: the figure
// the server reports as usage.prompt_tokens). Implementations must be safe
// for concurrent use.
type Tokenizer interface {
	Count(ctx context.Context, text string) (int, error)
}

// Method returns the sizing method of t: its Method() string when it has
// one, else MethodCustom.
func Method(t Tokenizer) string {
	if m, ok := t.(interface{ Method() string }); ok {
		return m.Method()
	}
	return MethodCustom
}

// ErrTokenizeUnsupported is returned (wrapped) by ServerTokenizer.Count when
// the server answers /tokenize with 404 or 405: the caller should fall back
// to Calibrate.
var ErrTokenizeUnsupported = errors.New("server has no /tokenize endpoint")

// ErrModelNotFound is returned (wrapped) by ServerTokenizer.Count when the
// server answers /tokenize with 404 and a message that names the model
// asked for (vLLM: "The model `x` does not exist."): the endpoint exists,
// the model does not.
var ErrModelNotFound = errors.New("the server does not serve this model")

// TokenizeShape is the request and response shape of a server's tokenizer
// endpoint.
type TokenizeShape string

// The tokenizer shapes (docs/engines.md cites each engine's source).
const (
	// TokenizeVLLM: POST /tokenize {"model", "prompt"} or {"model",
	// "messages"} answers {"count", "max_model_len", "tokens"} (vLLM;
	// SGLang for prompts).
	TokenizeVLLM TokenizeShape = "vllm"
	// TokenizeLlamaCpp: POST /tokenize {"content", "add_special": true}
	// answers {"tokens": [...]} (llama.cpp's llama-server); for chat the
	// text is first rendered with POST /apply-template {"messages"} ->
	// {"prompt"}.
	TokenizeLlamaCpp TokenizeShape = "llamacpp"
	// TokenizeTGI: POST /tokenize {"inputs"} answers a list of tokens
	// (TGI); for chat POST /chat_tokenize {"messages"} answers
	// {"tokenize_response": [...]}.
	TokenizeTGI TokenizeShape = "tgi"
	// TokenizeNone: the server has no usable tokenizer endpoint.
	TokenizeNone TokenizeShape = "none"
)

// ServerTokenizerOptions configures a ServerTokenizer.
type ServerTokenizerOptions struct {
	// BaseURL is the server's root, e.g. http://127.0.0.1:8000; a trailing
	// "/" or "/v1" is removed, since vLLM serves /tokenize at the root.
	BaseURL string
	// Model is sent as "model" (vLLM checks it against the served models).
	Model string
	// Chat counts the text as the content of a single user message with
	// the server's chat template and generation prompt (vLLM's
	// {"messages": [...]} form), as /v1/chat/completions will.
	Chat bool
	// Client sends the requests; nil means a client with a 30 s timeout.
	// Its redirects are never followed, whatever its CheckRedirect says.
	Client *http.Client
	// Header is added to every request (e.g. Authorization). It is never
	// logged or put into errors.
	Header http.Header
	// MaxResponseBytes caps a response body; 0 means 64 MiB.
	MaxResponseBytes int64
	// Shape is the request shape; empty means TokenizeVLLM.
	// TokenizeNone is refused by NewServerTokenizer.
	Shape TokenizeShape
}

// ServerTokenizer counts tokens with the server's tokenizer endpoint, in
// the shape of Options.Shape (vLLM's by default: request {"model",
// "prompt"} or {"model", "messages"}, response {"count", "max_model_len",
// "tokens"}). A count of 0 for a text that is not blank is an error (a
// server answering another shape, e.g. llama.cpp's {"tokens": []} to vLLM's
// request). It is safe for concurrent use.
type ServerTokenizer struct {
	base        string
	url         string
	opts        ServerTokenizerOptions
	maxModelLen atomic.Int64
}

// NewServerTokenizer returns a ServerTokenizer for o; it sends nothing yet.
func NewServerTokenizer(o ServerTokenizerOptions) (*ServerTokenizer, error) {
	base := strings.TrimRight(o.BaseURL, "/")
	base = strings.TrimSuffix(base, "/v1")
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return nil, fmt.Errorf("tokenizer base url must start with http:// or https://, got %q", o.BaseURL)
	}
	// Redirects are never followed (the Authorization header would go
	// along): a redirect is a *StatusError naming its Location.
	hc := *bounded.NewClient(nil, 30*time.Second)
	if o.Client != nil {
		hc = *o.Client
	}
	hc.CheckRedirect = bounded.NoRedirects
	o.Client = &hc
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = 64 << 20
	}
	switch o.Shape {
	case "":
		o.Shape = TokenizeVLLM
	case TokenizeVLLM, TokenizeLlamaCpp, TokenizeTGI:
	default:
		return nil, fmt.Errorf("tokenizer shape %q has no endpoint to call", o.Shape)
	}
	return &ServerTokenizer{base: base, url: base + "/tokenize", opts: o}, nil
}

// Shape returns the request shape the tokenizer uses.
func (t *ServerTokenizer) Shape() TokenizeShape { return t.opts.Shape }

// Method returns MethodServerTokenize.
func (t *ServerTokenizer) Method() string { return MethodServerTokenize }

// MaxModelLen returns the max_model_len of the last /tokenize response (0
// before the first one or when the server did not say).
func (t *ServerTokenizer) MaxModelLen() int { return int(t.maxModelLen.Load()) }

type tokenizeMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type tokenizeRequest struct {
	Model    string            `json:"model,omitempty"`
	Prompt   *string           `json:"prompt,omitempty"`
	Messages []tokenizeMessage `json:"messages,omitempty"`
}

// Count asks the server for the token count of text.
func (t *ServerTokenizer) Count(ctx context.Context, text string) (int, error) {
	var n int
	var err error
	switch t.opts.Shape {
	case TokenizeLlamaCpp:
		n, err = t.countLlamaCpp(ctx, text)
	case TokenizeTGI:
		n, err = t.countTGI(ctx, text)
	default:
		n, err = t.countVLLM(ctx, text)
	}
	if err != nil {
		return 0, err
	}
	if n == 0 && strings.TrimSpace(text) != "" {
		return 0, errors.New("tokenize: the server counted 0 tokens for a non-empty text (not its request shape?)")
	}
	return n, nil
}

func (t *ServerTokenizer) countVLLM(ctx context.Context, text string) (int, error) {
	req := tokenizeRequest{Model: t.opts.Model}
	if t.opts.Chat {
		req.Messages = []tokenizeMessage{{Role: "user", Content: text}}
	} else {
		req.Prompt = &text
	}
	var out struct {
		Count       *int `json:"count"`
		MaxModelLen int  `json:"max_model_len"`
	}
	if err := t.post(ctx, t.url, req, &out); err != nil {
		return 0, err
	}
	if out.Count == nil || *out.Count < 0 {
		return 0, errors.New("tokenize: response has no valid count")
	}
	if out.MaxModelLen > 0 {
		t.maxModelLen.Store(int64(out.MaxModelLen))
	}
	return *out.Count, nil
}

// countLlamaCpp counts as llama-server's completion path tokenizes a
// prompt (add_special and parse_special true); for chat the text is first
// rendered with the server's chat template.
func (t *ServerTokenizer) countLlamaCpp(ctx context.Context, text string) (int, error) {
	content := text
	if t.opts.Chat {
		var tmpl struct {
			Prompt *string `json:"prompt"`
		}
		msgs := map[string]any{"messages": []tokenizeMessage{{Role: "user", Content: text}}}
		if err := t.post(ctx, t.base+"/apply-template", msgs, &tmpl); err != nil {
			return 0, err
		}
		if tmpl.Prompt == nil {
			return 0, errors.New("tokenize: /apply-template answered no prompt")
		}
		content = *tmpl.Prompt
	}
	var out struct {
		Tokens *[]json.RawMessage `json:"tokens"`
	}
	req := map[string]any{"content": content, "add_special": true, "parse_special": true}
	if err := t.post(ctx, t.url, req, &out); err != nil {
		return 0, err
	}
	if out.Tokens == nil {
		return 0, errors.New("tokenize: response has no tokens")
	}
	return len(*out.Tokens), nil
}

// countTGI counts with TGI's /tokenize (the inputs as /generate validates
// them) or, for chat, /chat_tokenize (the chat template applied).
func (t *ServerTokenizer) countTGI(ctx context.Context, text string) (int, error) {
	if t.opts.Chat {
		var out struct {
			Tokens *[]json.RawMessage `json:"tokenize_response"`
		}
		req := map[string]any{"model": t.opts.Model, "messages": []tokenizeMessage{{Role: "user", Content: text}}}
		if err := t.post(ctx, t.base+"/chat_tokenize", req, &out); err != nil {
			return 0, err
		}
		if out.Tokens == nil {
			return 0, errors.New("tokenize: response has no tokenize_response")
		}
		return len(*out.Tokens), nil
	}
	var out []json.RawMessage
	if err := t.post(ctx, t.url, map[string]any{"inputs": text}, &out); err != nil {
		return 0, err
	}
	return len(out), nil
}

// post sends body as JSON to url and decodes a 200 answer into out.
func (t *ServerTokenizer) post(ctx context.Context, url string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("tokenize: %w", err)
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("tokenize: %w", err)
	}
	for k, vs := range t.opts.Header {
		for _, v := range vs {
			hr.Header.Add(k, v)
		}
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json")
	resp, err := t.opts.Client.Do(hr)
	if err != nil {
		return fmt.Errorf("tokenize: %w", err)
	}
	defer resp.Body.Close()
	lr := io.LimitReader(resp.Body, t.opts.MaxResponseBytes+1)
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed:
		msg, _ := io.ReadAll(io.LimitReader(lr, 512))
		_, _ = io.Copy(io.Discard, lr)
		if m := shortMessage(msg); resp.StatusCode == http.StatusNotFound && namesModel(m, t.opts.Model) {
			return fmt.Errorf("tokenize: HTTP 404: %s: %w", m, ErrModelNotFound)
		}
		return fmt.Errorf("tokenize: HTTP %d: %w", resp.StatusCode, ErrTokenizeUnsupported)
	case resp.StatusCode != http.StatusOK:
		msg, _ := io.ReadAll(io.LimitReader(lr, 512))
		se := &StatusError{Code: resp.StatusCode, Message: shortMessage(msg)}
		if loc := resp.Header.Get("Location"); loc != "" && resp.StatusCode >= 300 && resp.StatusCode < 400 {
			se.Message = "redirect to " + shortMessage([]byte(loc)) + "; redirects are not followed: fix base_url"
		}
		return fmt.Errorf("tokenize: %w", se)
	}
	raw, err := bounded.ReadBody(resp, "", t.opts.MaxResponseBytes)
	var tl *bounded.TooLargeError
	if errors.As(err, &tl) {
		return fmt.Errorf("tokenize: response larger than %d bytes", t.opts.MaxResponseBytes)
	}
	if err != nil {
		return fmt.Errorf("tokenize: reading response: %w", err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("tokenize: bad response: %w", err)
	}
	return nil
}

// namesModel reports whether a server's message names model quoted (vLLM:
// "The model `x` does not exist.").
func namesModel(msg, model string) bool {
	if model == "" {
		return false
	}
	for _, q := range []string{"`", `"`, "'"} {
		if strings.Contains(msg, q+model+q) {
			return true
		}
	}
	return false
}

// StatusError is returned (wrapped) by ServerTokenizer.Count when the
// server answers /tokenize with a status other than 200, 404 and 405.
type StatusError struct {
	Code    int
	Message string // the server's message, shortened; may echo request data
}

func (e *StatusError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.Code, e.Message) }

// shortMessage returns a server error body as one short line: the "message"
// of an OpenAI-style error object when there is one, else the raw text, cut
// to 200 bytes.
func shortMessage(b []byte) string {
	var e struct {
		Message string `json:"message"`
		Error   struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	s := strings.TrimSpace(string(b))
	if json.Unmarshal(b, &e) == nil {
		if e.Error.Message != "" {
			s = e.Error.Message
		} else if e.Message != "" {
			s = e.Message
		}
	}
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// Observation is one calibration request: the prompt text sent and the
// usage.prompt_tokens the server reported for it.
type Observation struct {
	Text         string
	PromptTokens int
}

// DefaultCalibrationWords is the length, in words, of the calibration prompt
// a caller should send (CalibrationText) when the server has no /tokenize.
const DefaultCalibrationWords = 256

// CalibrationText returns a deterministic prompt of n words from the same
// vocabulary the Generator uses, for the calibration request(s) whose
// usage.prompt_tokens feed Calibrate. Two observations of different
// lengths (e.g. 32 and 256 words) also calibrate the fixed overhead (BOS,
// chat template).
func CalibrationText(n int) string {
	r := newRand(derive(0, tagCalibration))
	w := make([]string, n)
	for i := range w {
		w[i] = wordList[r.IntN(len(wordList))]
	}
	return strings.Join(w, " ")
}

// Calibrated estimates token counts as Intercept + PerWord * words, where
// words is the number of whitespace-separated words. It is the fallback
// for servers without /tokenize; the Record still carries the server's own
// usage.prompt_tokens, so reports use the true count. Safe for concurrent
// use (immutable).
type Calibrated struct {
	Intercept float64
	PerWord   float64
}

// Calibrate fits a Calibrated estimator to observed (text, prompt_tokens)
// pairs. With one observation (or all of equal word count) the intercept is
// 0 and PerWord = tokens / words; with two or more distinct word counts a
// least-squares line gives both. Errors: no observation, a text without
// words, a non-positive token count, or a fit with PerWord <= 0.
func Calibrate(obs ...Observation) (*Calibrated, error) {
	if len(obs) == 0 {
		return nil, errors.New("calibrate: no observation")
	}
	xs := make([]float64, len(obs))
	ys := make([]float64, len(obs))
	for i, o := range obs {
		n := len(strings.Fields(o.Text))
		if n == 0 {
			return nil, fmt.Errorf("calibrate: observation %d has no words", i)
		}
		if o.PromptTokens <= 0 {
			return nil, fmt.Errorf("calibrate: observation %d has prompt_tokens %d, want > 0", i, o.PromptTokens)
		}
		xs[i], ys[i] = float64(n), float64(o.PromptTokens)
	}
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx /= float64(len(xs))
	my /= float64(len(xs))
	var sxx, sxy float64
	for i := range xs {
		sxx += (xs[i] - mx) * (xs[i] - mx)
		sxy += (xs[i] - mx) * (ys[i] - my)
	}
	c := &Calibrated{PerWord: my / mx}
	if sxx > 0 {
		c.PerWord = sxy / sxx
		c.Intercept = my - c.PerWord*mx
	}
	if !(c.PerWord > 0) || math.IsInf(c.PerWord, 0) {
		return nil, fmt.Errorf("calibrate: fitted %.3g tokens per word, want > 0", c.PerWord)
	}
	return c, nil
}

// Method returns MethodCalibrated.
func (c *Calibrated) Method() string { return MethodCalibrated }

// Count returns max(1, round(Intercept + PerWord * words(text))).
func (c *Calibrated) Count(_ context.Context, text string) (int, error) {
	n := float64(len(strings.Fields(text)))
	return max(1, int(math.Round(c.Intercept+c.PerWord*n))), nil
}
