package endpoint

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/go-kit/log/level"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/client"
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
//   - the engine has none (Ollama; SGLang for chat), or it answers 404 or
//     405 (workload.ErrTokenizeUnsupported), another 4xx, a 200 in another
//     shape or a count of 0: calibration from the usage.prompt_tokens of two
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
	chat := e.o.API == client.APIChat
	eng, _, _ := e.detect(ctx, nil, "")
	shape := eng.TokenizeShape(chat)
	var why string
	if shape == workload.TokenizeNone {
		why = fmt.Sprintf("%s has no tokenizer endpoint for the %s API", eng, e.o.API)
	} else {
		hdr := http.Header{}
		client.Authorize(hdr, e.o.APIKey)
		st, err := workload.NewServerTokenizer(workload.ServerTokenizerOptions{
			BaseURL: e.base, Model: model, Chat: chat, Shape: shape,
			Client: &http.Client{Transport: e.hc.Transport, Timeout: e.o.TokenizeTimeout, CheckRedirect: client.NoRedirects},
			Header: hdr,
		})
		if err != nil {
			return nil, &Error{Class: prober.ClassInvalidResponse, Msg: err.Error()}
		}
		_, err = st.Count(ctx, "hello")
		var se *workload.StatusError
		switch {
		case err == nil:
			level.Info(e.logger).Log("msg", "prompts are sized with the server's tokenizer", "model", model, "shape", shape)
			return &Sizing{Tokenizer: st, server: st}, nil
		case errors.Is(err, workload.ErrTokenizeUnsupported):
			why = "the server has no tokenizer endpoint (" + e.short(err.Error()) + ")"
		case errors.As(err, &se):
			if se.Code < 400 || se.Code >= 500 || se.Code == http.StatusUnauthorized ||
				se.Code == http.StatusForbidden || se.Code == http.StatusTooManyRequests {
				return nil, &Error{Class: prober.ClassForStatus(se.Code), Msg: "POST /tokenize: " + e.short(se.Error())}
			}
			why = fmt.Sprintf("the server's /tokenize does not take the %s shape (%s)", shape, e.short(se.Error()))
		default:
			var ue interface{ Timeout() bool }
			if errors.As(err, &ue) || ctx.Err() != nil { // transport failure (*url.Error, net.Error)
				return nil, e.transportError(ctx, "POST /tokenize", err)
			}
			why = fmt.Sprintf("the server's /tokenize answer is not in the %s shape (%s)", shape, e.short(err.Error()))
		}
	}
	why = e.Redact(why)
	level.Info(e.logger).Log("msg", "sizing prompts by calibration from usage.prompt_tokens", "model", model, "reason", why)
	cal, cerr := e.calibrate(ctx, model)
	if cerr != nil {
		return nil, cerr
	}
	level.Info(e.logger).Log("msg", "prompts are sized by calibration from usage.prompt_tokens", "model", model,
		"tokens_per_word", fmt.Sprintf("%.3f", cal.PerWord), "intercept", fmt.Sprintf("%.1f", cal.Intercept))
	return &Sizing{Tokenizer: cal, Fallback: why}, nil
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
