// Package engine owns what differs between serving engines behind the same
// OpenAI-compatible API — vLLM (V1 names and the older V0 ones), SGLang,
// Hugging Face TGI, llama.cpp's llama-server and Ollama — so that the rest of
// llmprobe reads one set of figures whatever serves the target:
//
//   - the metric names of each engine's /metrics mapped to the figures a sweep
//     and the daemon use (Quantity: running and waiting requests for the idle
//     proof, prompt and generation token counters, prefill and decode time,
//     KV-cache usage, prefix-cache queries and hits; Latency: the server's
//     TTFT, ITL, TPOT, E2E and queue-time histograms), each read as a Value
//     that is known or not, never guessed;
//   - detection of the engine from its /metrics names (FromMetrics) and from
//     the shape of its info endpoints (FromProps, FromInfo, ...), and the
//     parsing of those endpoints into a Fingerprint (version, context length,
//     engine configuration);
//   - the request shape of the engine's tokenizer endpoint (TokenizeShape).
//
// It sends nothing: prober/endpoint makes the HTTP calls. Every name is taken
// from the engine's own source or documentation; docs/engines.md cites them.
// An *Engine is immutable and safe for concurrent use.
package engine

import (
	"fmt"
	"slices"
	"strings"

	"github.com/llmprobe/llmprobe/prober/scrape"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// Name identifies an engine; it is the value of the `engine:` config key and
// of the --engine flags.
type Name string

// The engines. Auto (the empty name) means "detect it".
const (
	Auto     Name = ""
	VLLM     Name = "vllm"
	SGLang   Name = "sglang"
	TGI      Name = "tgi"
	LlamaCpp Name = "llamacpp"
	Ollama   Name = "ollama"
	// Unknown is what detection reports for a server it does not
	// recognise: an OpenAI-compatible server whose metrics are not read.
	Unknown Name = "unknown"
)

// Names lists the engines that can be configured, in a stable order.
var Names = []Name{VLLM, SGLang, TGI, LlamaCpp, Ollama}

// Parse reads a configured engine name: "" or "auto" is Auto, otherwise one
// of Names.
func Parse(s string) (Name, error) {
	n := Name(strings.TrimSpace(s))
	if n == "" || n == "auto" {
		return Auto, nil
	}
	if slices.Contains(Names, n) {
		return n, nil
	}
	return Auto, fmt.Errorf("unknown engine %q (want auto, %s)", s, joinNames())
}

func joinNames() string {
	s := make([]string, len(Names))
	for i, n := range Names {
		s[i] = string(n)
	}
	return strings.Join(s, ", ")
}

// Engine is one engine's adapter. Get one with Get or FromMetrics.
type Engine struct {
	name Name
	// title is the engine's display name.
	title string
	// prefix is the metric name prefix that identifies the engine on
	// /metrics ("" when it has no /metrics).
	prefix string
	// quantities and latencies map each figure to the sources that may
	// hold it, the first present one winning (newer names first).
	quantities map[Quantity][]source
	latencies  map[Latency][]string
	// tokenize is the shape of POST /tokenize for completions and for
	// chat (TokenizeNone: the engine has no usable one).
	tokenize, tokenizeChat workload.TokenizeShape
	// noMetrics says why the engine has no /metrics at all ("": it has
	// one, or it is the generic adapter).
	noMetrics string
}

// Name returns the engine's name (Unknown for the generic adapter).
func (e *Engine) Name() Name { return e.name }

// String returns the engine's display name, e.g. "llama.cpp".
func (e *Engine) String() string { return e.title }

// HasMetrics reports whether the engine serves a Prometheus /metrics.
func (e *Engine) HasMetrics() bool { return e.prefix != "" }

// TokenizeShape returns the request shape of the engine's tokenizer
// endpoint for the completions API or, with chat, for the chat API
// (workload.TokenizeNone when it has none: prompts are then sized by
// calibration).
func (e *Engine) TokenizeShape(chat bool) workload.TokenizeShape {
	if chat {
		return e.tokenizeChat
	}
	return e.tokenize
}

// Get returns the adapter of a named engine; Auto and unknown names get the
// generic adapter (Unknown), which reads nothing from /metrics and sizes
// prompts with vLLM's /tokenize shape, falling back to calibration.
func Get(n Name) *Engine {
	if e, ok := engines[n]; ok {
		return e
	}
	return generic
}

// FromMetrics returns the engine whose metric names a /metrics snapshot
// carries (vLLM's "vllm:", SGLang's "sglang:", TGI's "tgi_", llama.cpp's
// "llamacpp:"); ok is false when none is there (or s is nil).
func FromMetrics(s *scrape.Snapshot) (e *Engine, ok bool) {
	if s == nil {
		return generic, false
	}
	for _, n := range Names {
		e := engines[n]
		if e.prefix == "" {
			continue
		}
		for name := range s.Families {
			if strings.HasPrefix(name, e.prefix) {
				return e, true
			}
		}
	}
	return generic, false
}

// generic is the adapter of an unrecognised OpenAI-compatible server.
var generic = &Engine{
	name: Unknown, title: "OpenAI-compatible server",
	tokenize: workload.TokenizeVLLM, tokenizeChat: workload.TokenizeVLLM,
}
