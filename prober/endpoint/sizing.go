package endpoint

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-kit/log/level"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/bounded"
	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/engine"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// Backoff bounds of a failed prompt-sizing set-up: the first retry waits
// MinSizingBackoff, each further failure doubles the wait up to
// MaxSizingBackoff.
const (
	MinSizingBackoff = time.Second
	MaxSizingBackoff = time.Minute
)

// CalibrationWords are the lengths (in words of workload.CalibrationText)
// of the two calibration requests: two lengths also fit the fixed overhead
// (BOS, chat template).
var CalibrationWords = []int{32, workload.DefaultCalibrationWords}

// Sizing is how prompts for one model are sized: by the server's
// POST /tokenize, or by a calibration from usage.prompt_tokens when the
// server has no usable /tokenize. It is immutable and safe for concurrent
// use.
type Sizing struct {
	// Tokenizer counts prompt tokens as the server will.
	Tokenizer workload.Tokenizer
	// Fallback says why calibration was used ("" with /tokenize); redacted.
	Fallback string

	server *workload.ServerTokenizer // nil when calibrated
}

// Method is the sizing method for the fingerprint:
// workload.MethodServerTokenize or workload.MethodCalibrated.
func (s *Sizing) Method() string { return workload.Method(s.Tokenizer) }

// MaxModelLen is the max_model_len of the latest /tokenize answer (for
// servers whose /v1/models lacks it); 0 when unknown or calibrated.
func (s *Sizing) MaxModelLen() int {
	if s.server == nil {
		return 0
	}
	return s.server.MaxModelLen()
}

// PromptSizing returns how prompts for model are sized, setting it up on
// first use. The policy, the same for every consumer:
//
//   - the engine's tokenizer endpoint (Engine().TokenizeShape: vLLM's and
//     SGLang's {"prompt"} -> {"count"}, llama.cpp's {"content"} ->
//     {"tokens"}, TGI's {"inputs"} -> [...]) answers a positive count for
//     a probe text: the server's tokenizer;
//   - it answers another 4xx, a 200 in another shape or a count of 0, or
//     the engine has none at all (Ollama): the other shapes, vLLM's first
//     (tokenizeShapes; a completions /tokenize answering 404 or 405 ends
//     the search, as every shape uses it);
//   - none works, or the engine's tokenizer takes no chat messages
//     (SGLang, chat API): calibration from the usage.prompt_tokens of two
//     requests (never from counted tokens: a server that reports no usage is
//     an error);
//   - 401, 403, 429, a 5xx, a redirect or a transport failure: a classified
//     *Error, no fallback (calibration would fail the same way or hide the
//     problem).
//
// A success is cached per model. A failure is cached for the model with a
// growing backoff (MinSizingBackoff doubling to MaxSizingBackoff): until it
// expires every call returns it at once, so a broken endpoint is not asked
// on every arrival. A failure caused by ctx being done is not cached.
// Set-ups are serialised; a call waits for one in progress.
func (e *Endpoint) PromptSizing(ctx context.Context, model string) (*Sizing, error) {
	e.sizeMu.Lock()
	defer e.sizeMu.Unlock()
	if s, ok := e.sizings[model]; ok {
		return s, nil
	}
	f := e.failures[model]
	if f != nil && e.now().Before(f.retry) {
		return nil, f.err
	}
	s, serr := e.setUpSizing(ctx, model)
	if serr != nil {
		serr.Msg = e.Redact(serr.Msg)
		if ctx.Err() != nil {
			return nil, &Error{Class: prober.ClassCanceled, Msg: serr.Msg, Err: ctx.Err()}
		}
		if f == nil {
			f = &failure{}
			e.failures[model] = f
		}
		f.wait = min(max(2*f.wait, MinSizingBackoff), MaxSizingBackoff)
		f.err, f.retry = serr, e.now().Add(f.wait)
		level.Warn(e.logger).Log("msg", "cannot size prompts; requests fail until this works", "model", model, "err", serr.Msg, "retry_in", f.wait)
		return nil, serr
	}
	e.sizings[model] = s
	delete(e.failures, model)
	return s, nil
}

func (e *Endpoint) setUpSizing(ctx context.Context, model string) (*Sizing, *Error) {
	// The Responses API's input is a list of messages rendered through the
	// chat template, as chat's.
	api, _ := client.Lookup(e.o.API)
	chat := api.Messages
	eng, _, _ := e.detect(ctx, nil, "")
	var whys []string
	shapes := tokenizeShapes(eng, chat)
	if len(shapes) == 0 {
		whys = append(whys, fmt.Sprintf("%s has no tokenizer endpoint for the %s API", eng, e.o.API))
	} else if eng.TokenizeShape(chat) == workload.TokenizeNone {
		whys = append(whys, fmt.Sprintf("%s has no tokenizer endpoint", eng))
	}
	for _, shape := range shapes {
		st, why, next, serr := e.tryTokenizer(ctx, model, chat, shape)
		if serr != nil {
			return nil, serr
		}
		if st != nil {
			level.Info(e.logger).Log("msg", "prompts are sized with the server's tokenizer", "model", model, "shape", shape)
			return &Sizing{Tokenizer: st, server: st}, nil
		}
		whys = append(whys, why)
		if !next {
			break
		}
	}
	why := e.Redact(strings.Join(whys, "; "))
	level.Info(e.logger).Log("msg", "sizing prompts by calibration from usage.prompt_tokens", "model", model, "reason", why)
	cal, cerr := e.calibrate(ctx, model)
	if cerr != nil {
		return nil, cerr
	}
	level.Info(e.logger).Log("msg", "prompts are sized by calibration from usage.prompt_tokens", "model", model,
		"tokens_per_word", fmt.Sprintf("%.3f", cal.PerWord), "intercept", fmt.Sprintf("%.1f", cal.Intercept))
	return &Sizing{Tokenizer: cal, Fallback: why}, nil
}

// fallbackShapes are the tokenizer shapes tried after the engine's own
// fails, the generic adapter's (vLLM's) first.
var fallbackShapes = []workload.TokenizeShape{workload.TokenizeVLLM, workload.TokenizeLlamaCpp, workload.TokenizeTGI}

// tokenizeShapes lists the tokenizer shapes to try for eng and the API: the
// engine's own, then the others (fallbackShapes), as a detection may be
// wrong and a configured engine may be behind a server that tokenizes in
// another shape. An engine whose tokenizer takes no chat messages (SGLang)
// gets none for chat: its /tokenize would count the messages' text without
// the chat template.
func tokenizeShapes(eng *engine.Engine, chat bool) []workload.TokenizeShape {
	own := eng.TokenizeShape(chat)
	if own == workload.TokenizeNone && eng.TokenizeShape(!chat) != workload.TokenizeNone {
		return nil
	}
	var shapes []workload.TokenizeShape
	if own != workload.TokenizeNone {
		shapes = append(shapes, own)
	}
	for _, sh := range fallbackShapes {
		if sh != own {
			shapes = append(shapes, sh)
		}
	}
	return shapes
}

// tryTokenizer sizes a probe text with the server's tokenizer in shape. It
// returns the tokenizer when that works; else why not and whether another
// shape is worth trying (not when a completions /tokenize does not exist); or
// an *Error that ends the set-up (401, 403, 429, a 5xx, a redirect, a
// transport failure: calibration would fail the same way or hide it).
func (e *Endpoint) tryTokenizer(ctx context.Context, model string, chat bool, shape workload.TokenizeShape) (
	st *workload.ServerTokenizer, why string, next bool, serr *Error) {
	hdr := http.Header{}
	client.Authorize(hdr, e.o.APIKey)
	st, err := workload.NewServerTokenizer(workload.ServerTokenizerOptions{
		BaseURL: e.base, Model: model, Chat: chat, Shape: shape,
		Client: bounded.NewClient(e.info, e.o.TokenizeTimeout),
		Header: hdr,
	})
	if err != nil {
		return nil, "", false, &Error{Class: prober.ClassInvalidResponse, Msg: err.Error()}
	}
	_, err = st.Count(ctx, "hello")
	var se *workload.StatusError
	switch {
	case err == nil:
		return st, "", false, nil
	case errors.Is(err, workload.ErrModelNotFound):
		// The endpoint exists and says the model does not: calibration
		// would fail the same way, and "no /tokenize" would mislead.
		return nil, "", false, &Error{Class: prober.ClassHTTP4xx, Msg: fmt.Sprintf("model %q: the server does not serve it "+
			"(POST /tokenize: %s); check the model name against GET /v1/models", model, e.short(err.Error()))}
	case errors.Is(err, workload.ErrTokenizeUnsupported):
		// Every shape sizes a completions prompt with POST /tokenize; a
		// chat one goes elsewhere in some (TGI's /chat_tokenize,
		// llama.cpp's /apply-template first).
		return nil, fmt.Sprintf("the server has no tokenizer endpoint for the %s shape (%s)", shape, e.short(err.Error())), chat, nil
	case errors.As(err, &se):
		if se.Code < 400 || se.Code >= 500 || se.Code == http.StatusUnauthorized ||
			se.Code == http.StatusForbidden || se.Code == http.StatusTooManyRequests {
			return nil, "", false, &Error{Class: prober.ClassForStatus(se.Code), Msg: "POST /tokenize: " + e.short(se.Error())}
		}
		return nil, fmt.Sprintf("the server's /tokenize does not take the %s shape (%s)", shape, e.short(se.Error())), true, nil
	}
	var ue interface{ Timeout() bool }
	if errors.As(err, &ue) || ctx.Err() != nil { // transport failure (*url.Error, net.Error)
		return nil, "", false, e.transportError(ctx, "POST /tokenize", err)
	}
	return nil, fmt.Sprintf("the server's /tokenize answer is not in the %s shape (%s)", shape, e.short(err.Error())), true, nil
}

// calibrate sends one request per CalibrationWords length (max_tokens 1)
// and fits the tokens-per-word estimate to the server's
// usage.prompt_tokens.
func (e *Endpoint) calibrate(ctx context.Context, model string) (*workload.Calibrated, *Error) {
	c, err := e.Client(model)
	if err != nil {
		return nil, &Error{Class: prober.ClassInvalidResponse, Msg: "calibration: " + err.Error()}
	}
	var obs []workload.Observation
	for i, words := range CalibrationWords {
		text := workload.CalibrationText(words)
		rec := &prober.Record{Scheduled: time.Now()}
		c.Do(ctx, NewRequest(e.o.API, e.o.NewRequestID(), workload.Item{Prompt: text, OutputTokens: 1}, false), rec)
		if !rec.OK() {
			return nil, &Error{Class: rec.Error, Msg: fmt.Sprintf("calibration request %d: %s", i+1, rec.ErrorMessage)}
		}
		if rec.TokensCounted || rec.PromptTokens <= 0 {
			return nil, &Error{Class: prober.ClassInvalidResponse,
				Msg: "the server has no usable /tokenize and reports no usage.prompt_tokens: cannot size prompts"}
		}
		obs = append(obs, workload.Observation{Text: text, PromptTokens: rec.PromptTokens})
	}
	cal, err := workload.Calibrate(obs...)
	if err != nil {
		return nil, &Error{Class: prober.ClassInvalidResponse, Msg: "calibration: " + err.Error()}
	}
	return cal, nil
}

// DiscoverSizing makes an endpoint of o, discovers its model (Discover, o.Model
// when given) and sets up that model's prompt sizing (PromptSizing): one call
// for a tool that only counts prompt tokens as a server does (`llmprobe
// workload stats --target`). closeIdle closes the endpoint's idle
// connections: call it once the sizing's tokenizer is done. On an error the
// connections are closed already.
func DiscoverSizing(ctx context.Context, o Options) (s *Sizing, closeIdle func(), err error) {
	ep, err := New(o)
	if err != nil {
		return nil, nil, err
	}
	info, err := ep.Discover(ctx)
	if err == nil {
		s, err = ep.PromptSizing(ctx, info.Model)
	}
	if err != nil {
		ep.CloseIdleConnections()
		return nil, nil, err
	}
	return s, ep.CloseIdleConnections, nil
}
