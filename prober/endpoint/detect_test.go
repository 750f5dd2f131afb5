package endpoint

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/engine"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// TestGenericServerIsNotOllama is issue 22 V4: a server of no known engine
// whose router answers GET /version — and, being a catch-all, every other
// GET, Ollama's /api/version included — with {"version": "..."} was taken
// for Ollama, and prompts were then not sized with its working vLLM-shaped
// /tokenize. Detection must want evidence only the engine gives, so the
// server stays the generic adapter (its version read from /version), and
// prompts are sized with its tokenizer for both APIs.
func TestGenericServerIsNotOllama(t *testing.T) {
	sc := fastSim()
	sc.Engine = simulator.EngineGeneric
	base, _ := simtest.Start(t, sc)
	for _, api := range []string{client.APICompletions, client.APIChat} {
		e := newEndpoint(t, Options{BaseURL: base, API: api})
		info := discover(t, e)
		if info.Engine != engine.Unknown || info.EngineSource != "" || info.ServerVersion != simulator.VersionGeneric ||
			e.Engine().Name() != engine.Unknown {
			t.Errorf("%s: info %+v, engine %s; want the generic adapter", api, info, e.Engine().Name())
		}
		sz, err := e.PromptSizing(context.Background(), info.Model)
		if err != nil {
			t.Fatalf("%s: sizing: %v", api, err)
		}
		if sz.Method() != workload.MethodServerTokenize || sz.Fallback != "" {
			t.Errorf("%s: sizing %s (fallback %q), want the server's /tokenize", api, sz.Method(), sz.Fallback)
		}
		n, rec := countAndSend(t, e, sz, api, info.Model, 50, 2)
		if !rec.OK() || rec.PromptTokens != n {
			t.Errorf("%s: counted %d, the server reported %d (%s %s)", api, n, rec.PromptTokens, rec.Error, rec.ErrorMessage)
		}
	}
}

// TestSizingFallsBackToOtherShapes: when the engine-specific tokenizer
// fails — Ollama has none; a server told to be TGI answers TGI's
// {"inputs"} with a 400 — the generic shapes are tried before calibration,
// and the server's vLLM-shaped /tokenize sizes the prompts. A server with
// no /tokenize at all (the Ollama persona: 404) is calibrated after one
// try, and a chat API without a chat tokenizer (SGLang) tries none.
func TestSizingFallsBackToOtherShapes(t *testing.T) {
	sc := fastSim()
	sc.Engine = simulator.EngineGeneric
	generic, _ := simtest.Start(t, sc)
	for _, eng := range []engine.Name{engine.Ollama, engine.TGI} {
		for _, api := range []string{client.APICompletions, client.APIChat} {
			e := newEndpoint(t, Options{BaseURL: generic, API: api, Engine: eng})
			sz, err := e.PromptSizing(context.Background(), sc.Model)
			if err != nil {
				t.Fatalf("%s %s: %v", eng, api, err)
			}
			if sz.Method() != workload.MethodServerTokenize {
				t.Errorf("%s %s: sizing %s (fallback %q), want the server's /tokenize", eng, api, sz.Method(), sz.Fallback)
			}
		}
	}
	oc := fastSim()
	oc.Engine = simulator.EngineOllama
	ollama, _ := simtest.Start(t, oc)
	e := newEndpoint(t, Options{BaseURL: ollama})
	sz, err := e.PromptSizing(context.Background(), oc.Model)
	if err != nil {
		t.Fatal(err)
	}
	if sz.Method() != workload.MethodCalibrated || !strings.Contains(sz.Fallback, "Ollama has no tokenizer endpoint") ||
		!strings.Contains(sz.Fallback, "404") {
		t.Errorf("ollama: sizing %s, fallback %q", sz.Method(), sz.Fallback)
	}
	gc := fastSim()
	gc.Engine = simulator.EngineSGLang
	sglang, _ := simtest.Start(t, gc)
	e = newEndpoint(t, Options{BaseURL: sglang, API: client.APIChat})
	if sz, err = e.PromptSizing(context.Background(), gc.Model); err != nil {
		t.Fatal(err)
	}
	if sz.Method() != workload.MethodCalibrated || sz.Fallback != "SGLang has no tokenizer endpoint for the chat API" {
		t.Errorf("sglang chat: sizing %s, fallback %q", sz.Method(), sz.Fallback)
	}
}

// TestSizingWrongModel: a model the server does not serve is named as
// such (vLLM's /tokenize answers 404 "The model `x` does not exist."), not
// taken for a server without /tokenize and calibrated into the same 404.
func TestSizingWrongModel(t *testing.T) {
	base, _ := simtest.Start(t, fastSim())
	e := newEndpoint(t, Options{BaseURL: base, API: client.APIChat})
	_, err := e.PromptSizing(context.Background(), "wrong")
	var ee *Error
	if !errors.As(err, &ee) || ee.Class != prober.ClassHTTP4xx || !strings.Contains(ee.Msg, `model "wrong": the server does not serve it`) ||
		!strings.Contains(ee.Msg, "does not exist") || strings.Contains(ee.Msg, "no /tokenize") {
		t.Fatalf("sizing with a wrong model: %v", err)
	}
}
