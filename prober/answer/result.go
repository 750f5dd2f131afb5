package answer

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
	"unicode/utf8"

	"github.com/llmprobe/llmprobe/prober"
	"github.com/llmprobe/llmprobe/prober/client"
	"github.com/llmprobe/llmprobe/prober/endpoint"
)

// Outcome is the result of one check: a closed set (a label value).
type Outcome string

// The outcomes.
const (
	// Pass: the reply met the expectation.
	Pass Outcome = "pass"
	// Fail: a reply came and did not meet it.
	Fail Outcome = "fail"
	// Error: no reply to judge (the request failed: its error class says
	// why); an error is not evidence about the answers.
	Error Outcome = "error"
)

// Outcomes lists every outcome in a stable order.
var Outcomes = []Outcome{Pass, Fail, Error}

// Bounds of a check's record.
const (
	// MaxReplyBytes bounds the reply a Result keeps (the judge and the hash
	// see the whole reply the client collected).
	MaxReplyBytes = 2 << 10
	// MaxReasonBytes bounds a Result's Reason.
	MaxReasonBytes = 512
	// LogprobTokens is how many first tokens' log-probabilities a check
	// keeps when it asks for them (RequestOptions.TopLogprobs > 0).
	LogprobTokens = 32
)

// DefaultSeed is the seed every check is sent with unless RequestOptions
// sets another.
const DefaultSeed uint64 = 1234

// RequestOptions are the settings of a check request beside the item's.
type RequestOptions struct {
	// Seed is sent as "seed" (0: DefaultSeed).
	Seed uint64
	// TopLogprobs > 0 asks for that many log-probabilities per token (2 is
	// enough for the margin between the two most likely tokens) and keeps
	// those of the first LogprobTokens tokens in Result.Logprobs. A server
	// that refuses logprobs fails every check: leave it 0 there.
	TopLogprobs int
}

// Request builds the client request of the check for api (a generating
// row of client's API table): temperature 0, the seed, max_tokens, the stop sequence of a
// stop expectation, streaming, its reply collected. A prompt is sent as
// one user message to a chat target; messages need a chat target.
func (it *Item) Request(api, id string, o RequestOptions) (client.Request, error) {
	seed := o.Seed
	if seed == 0 {
		seed = DefaultSeed
	}
	c := endpoint.CheckRequest{Prompt: it.Prompt, Messages: it.Messages, MaxTokens: it.MaxTokens, Seed: seed}
	if it.Kind == KindStop {
		c.Stop = []string{it.Text}
	}
	if o.TopLogprobs > 0 {
		c.TopLogprobs, c.LogprobTokens = o.TopLogprobs, LogprobTokens
	}
	req, err := endpoint.NewCheckRequest(api, id, c)
	if err != nil {
		return client.Request{}, err
	}
	req.Features = []string{"answer_check"}
	return req, nil
}

// Result is the record of one check: what the daemon exports, the landing
// page shows and a comparison of two servers' replies reads (the reply's
// hash, the first tokens' top-2 log-probabilities).
type Result struct {
	// Check is the item's id; Kind its expectation.
	Check string `json:"check"`
	Kind  Kind   `json:"kind"`
	// Outcome is pass, fail or error; Reason says why it is not a pass
	// (the judge's reason, or the request's error class and message), at
	// most MaxReasonBytes.
	Outcome Outcome `json:"outcome"`
	Reason  string  `json:"reason,omitempty"`
	// Reply is the reply's text (redacted), at most MaxReplyBytes (valid
	// UTF-8); ReplyTruncated says it was longer. ReplyHash is "sha256:"
	// and the hex SHA-256 of the whole reply collected, redacted: equal
	// hashes, equal replies.
	Reply          string `json:"reply"`
	ReplyTruncated bool   `json:"reply_truncated,omitempty"`
	ReplyHash      string `json:"reply_hash"`
	// FinishReason and CompletionTokens are the server's.
	FinishReason     string `json:"finish_reason,omitempty"`
	CompletionTokens int    `json:"completion_tokens"`
	// Logprobs are the first tokens' log-probabilities with the two most
	// likely tokens at each position, when asked for and given (nil
	// otherwise).
	Logprobs []client.TokenLogprob `json:"logprobs,omitempty"`
	// RequestID and Time (when it was sent) identify the request.
	RequestID string    `json:"request_id"`
	Time      time.Time `json:"time"`
}

// Evaluate judges the finished request rec of req (built by Item.Request
// and sent by a client.Client) and returns its record. A failed request is
// an Error with its class and message; otherwise the judge decides, on the
// reply as it came. redact (nil: none; give the target's Redactor's Redact)
// is applied to the whole reply before it is hashed and bounded, and to the
// reason, so that a server that echoes a secret leaks it into neither, nor
// into its hash.
func Evaluate(it *Item, req *client.Request, rec *prober.Record, redact func(string) string) Result {
	if redact == nil {
		redact = func(s string) string { return s }
	}
	r := Result{Check: it.ID, Kind: it.Kind, RequestID: rec.RequestID, Time: rec.WallStart,
		FinishReason: rec.FinishReason, CompletionTokens: rec.CompletionTokens}
	var text []byte
	if req.Collect != nil {
		text = req.Collect.Bytes()
	}
	shown := []byte(redact(string(text)))
	sum := sha256.Sum256(shown)
	r.ReplyHash = "sha256:" + hex.EncodeToString(sum[:])
	r.Reply, r.ReplyTruncated = boundUTF8(shown, MaxReplyBytes)
	if lp := req.CollectLogprobs; lp != nil && len(lp.Tokens) > 0 {
		r.Logprobs = lp.Tokens
	}
	if !rec.OK() {
		r.Outcome = Error
		r.Reason = trim(redact(string(rec.Error)+": "+rec.ErrorMessage), MaxReasonBytes)
		return r
	}
	v := Judge(it, Reply{Text: string(text), FinishReason: rec.FinishReason, CompletionTokens: rec.CompletionTokens})
	r.Outcome = Fail
	if v.Pass {
		r.Outcome = Pass
	}
	r.Reason = trim(redact(v.Reason), MaxReasonBytes)
	return r
}

// boundUTF8 is b as valid UTF-8, at most n bytes, and whether it was cut.
func boundUTF8(b []byte, n int) (string, bool) {
	cut := len(b) > n
	if cut {
		b = b[:n]
		for len(b) > 0 && !utf8.Valid(b) {
			b = b[:len(b)-1]
		}
	}
	if !utf8.Valid(b) {
		return string([]rune(string(b))), cut
	}
	return string(b), cut
}
