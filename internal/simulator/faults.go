package simulator

// The fault injection: its probabilities and durations (Faults), their
// names and their validation. generate.go draws them per request.

import (
	"fmt"
	"time"
)

// Faults configures fault injection. Each probability is drawn independently
// per generation request from the seed; 0 (the default) disables the fault.
// A Faults is a plain value; copying it is safe.
type Faults struct {
	// HTTP429, HTTP500 and HTTP503 answer the request with that status and a
	// vLLM-shaped error body (429 carries `Retry-After: 1`).
	HTTP429 float64
	HTTP500 float64
	HTTP503 float64
	// StallBeforeFirstToken holds the request for StallDuration before it
	// enters the engine (streams have already sent their headers).
	StallBeforeFirstToken float64
	// StallMidStream pauses the response for StallDuration once half of the
	// output tokens were written.
	StallMidStream float64
	// StallDuration is how long a stall lasts. Default 30s.
	StallDuration time.Duration
	// CutStream ends a stream after half of its tokens, without usage chunk
	// and without `data: [DONE]` (non-streaming: half of the body, then the
	// connection is aborted).
	CutStream float64
	// MalformedEvent inserts one event whose JSON is truncated once half of
	// the tokens were written (non-streaming: the body is truncated JSON).
	MalformedEvent float64
	// ConnectionReset reads the request, then resets the TCP connection
	// (RST, no response bytes).
	ConnectionReset float64
	// SlowDrip writes the response one byte at a time, flushing each byte
	// and waiting SlowDripInterval between bytes.
	SlowDrip float64
	// SlowDripInterval is the pause between bytes of a slow drip. Default 1ms.
	SlowDripInterval time.Duration
	// Hang accepts the request (streams send their headers) but never
	// produces a token, while /health keeps answering 200.
	Hang float64
	// ErrorEvent ends a stream once half of its tokens were written with
	// an error event (`data: {"error": {...}}`), without usage and
	// without `data: [DONE]`, as llama.cpp and vLLM report an error met
	// mid-generation (non-streaming: a 500).
	ErrorEvent float64
	// WrongAnswers answers a prompt of the built-in answer-check set
	// wrongly (answers.go: yes and no swapped, the first number one higher,
	// the first word reversed). Other prompts are unchanged.
	WrongAnswers float64
	// Truncate cuts such an answer to its first half, then ends it (EOS,
	// finish_reason stop): replies cut short.
	Truncate float64
	// Nondeterministic flips the late, uncertain token of such an answer
	// (its last, when it has two or more) to the other likely one, as
	// batch variance flips a greedy choice; the top-2 margin reported there
	// is FragileMargin.
	Nondeterministic float64
	// TemplateBroken leaks the chat template's role tokens into every
	// answer (<|im_start|>assistant ... <|im_end|>), as a server with a
	// broken chat template does.
	TemplateBroken bool
	// BrokenToolCall breaks the arguments of a tool call (a request with
	// tools): their opening brace is left out, so they are not JSON.
	BrokenToolCall float64
	// WrongCount drops the last embedding of an embeddings answer, the
	// last result of a rerank answer and the last score of a score answer
	// (embed.go): a response with the wrong count.
	WrongCount float64
	// EmptyAnswer answers a generation request with nothing, without
	// engine work: a stream sends chat's role chunk (completions: none),
	// the usage chunk with 0 completion tokens when asked, then [DONE];
	// a non-streamed answer has empty content (text) and no tool call.
	// The finish_reason is stop.
	EmptyAnswer float64
	// SessionScatter sends a request that names its session
	// (Config.SessionHeader) to another replica than its session's
	// (`--fault.session-scatter`): a router that stopped keeping sessions,
	// whose later turns find none of their prefix cached. Only with
	// ServedByReplicas > 1; it draws apart from the other faults and is
	// not named in trace lines.
	SessionScatter float64
}

// DefaultFaults returns Faults with every fault off and the default stall
// duration (30s) and slow-drip interval (1ms).
func DefaultFaults() Faults {
	return Faults{StallDuration: 30 * time.Second, SlowDripInterval: time.Millisecond}
}

// Validate reports the first invalid fault parameter; the error names its flag.
func (f Faults) Validate() error {
	for _, p := range f.probabilities() {
		if !isProbability(p.p) {
			return fmt.Errorf("--fault.%s must be a probability in [0, 1], got %v", p.name, p.p)
		}
	}
	if f.StallDuration < 0 {
		return fmt.Errorf("--fault.stall-duration must be >= 0, got %s", f.StallDuration)
	}
	if f.SlowDripInterval < 0 {
		return fmt.Errorf("--fault.slow-drip-interval must be >= 0, got %s", f.SlowDripInterval)
	}
	return nil
}

type namedProbability struct {
	name string
	p    float64
}

// probabilities lists the fault probabilities in draw order; the names are
// the flag suffixes and the trace file's fault names.
func (f Faults) probabilities() []namedProbability {
	return []namedProbability{
		{faultReset, f.ConnectionReset},
		{faultHTTP429, f.HTTP429},
		{faultHTTP500, f.HTTP500},
		{faultHTTP503, f.HTTP503},
		{faultHang, f.Hang},
		{faultStallBefore, f.StallBeforeFirstToken},
		{faultStallMid, f.StallMidStream},
		{faultCut, f.CutStream},
		{faultMalformed, f.MalformedEvent},
		{faultSlowDrip, f.SlowDrip},
		{faultErrorEvent, f.ErrorEvent},
		{faultWrongAnswers, f.WrongAnswers},
		{faultTruncate, f.Truncate},
		{faultNondeterministic, f.Nondeterministic}, // appending keeps the draws of the others
		{faultBrokenTool, f.BrokenToolCall},         // appending keeps the draws of the others
		{faultWrongCount, f.WrongCount},             // appending keeps the draws of the others
		{faultEmptyAnswer, f.EmptyAnswer},           // appending keeps the draws of the others
		{faultSessionScatter, f.SessionScatter},     // last; drawn in servedby.go, skipped by drawFaults
	}
}

func isProbability(p float64) bool { return p >= 0 && p <= 1 } // false for NaN

// Fault names: flag suffixes (--fault.<name>) and the names in trace lines.
const (
	faultHTTP429     = "http-429"
	faultHTTP500     = "http-500"
	faultHTTP503     = "http-503"
	faultStallBefore = "stall-before-first-token"
	faultStallMid    = "stall-mid-stream"
	faultCut         = "cut-stream"
	faultMalformed   = "malformed-event"
	faultReset       = "connection-reset"
	faultSlowDrip    = "slow-drip"
	faultHang        = "hang"
	faultErrorEvent  = "error-event"

	faultWrongAnswers     = "wrong-answers"
	faultTruncate         = "truncate"
	faultNondeterministic = "nondeterministic"
	faultTemplateBroken   = "template-broken"
	faultBrokenTool       = "broken-tool-call"
	faultWrongCount       = "wrong-count"
	faultEmptyAnswer      = "empty-answer"
	faultSessionScatter   = "session-scatter"
)
