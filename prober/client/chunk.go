package client

import (
	"errors"
	"strconv"
)

// chunk is what the measurement needs from one streamed JSON event. It is
// filled by decodeChunk without reflection and without allocation; byte
// slices alias the event data (raw JSON string contents, still escaped).
//
// Semantics (the fuzz test holds decodeChunk to an encoding/json oracle):
// the text must be one JSON object; keys match exactly and the last of
// duplicate keys wins; fields not listed are validated and skipped.
//   - "choices": null or an array (else an error); choices is its length.
//     Its first element must be an object, whose "text" and "finish_reason"
//     are strings or null and whose "delta" is an object or null with
//     "content" a string or null and "role" anything (set when not null);
//     its "logprobs" is anything, skipped, and marks the chunk when not null.
//     The delta's "reasoning_content" and "reasoning" (the two spellings of
//     vLLM's reasoning parsers and other servers) mark a reasoning chunk
//     when either is a non-empty string (any other value is validated and
//     skipped); its "tool_calls", when a non-empty array, marks a tool-call
//     chunk and is kept raw (any other value is validated and skipped).
//   - "usage": null or an object whose "prompt_tokens" and
//     "completion_tokens" are integers or null, and whose
//     "prompt_tokens_details", when an object, has "cached_tokens" an
//     integer or null, and "completion_tokens_details", when an object,
//     "reasoning_tokens" an integer or null (any other value of either is
//     validated and skipped).
//   - "timings" (llama.cpp's llama-server): when an object, its "draft_n"
//     and "draft_n_accepted" (speculative decoding's drafted and accepted
//     tokens) each when a non-negative integer; any other value of either,
//     or of "timings", is validated and skipped, not an error (servers
//     differ), and every other timings key is skipped.
//   - "metrics" (vLLM's per-request timing, --enable-per-request-metrics
//     with the request's include_metrics): when an object, its
//     "queue_time_ms", "time_to_first_token_ms" and "generation_time_ms"
//     each when a finite non-negative number; any other value of either,
//     or of "metrics", is validated and skipped, not an error, and every
//     other metrics key is skipped.
//   - "error" not null, or "object" equal to "error", marks an error event;
//     its message is "error" itself when a string, "error.message" when
//     "error" is an object, or the top-level "message" for the old form.
type chunk struct {
	choices       int
	hasText       bool   // choices[0].text or choices[0].delta.content non-empty
	text          []byte // that text, raw (aliases the event data)
	textEscaped   bool
	hasRole       bool // choices[0].delta.role present and not null
	hasFinish     bool // choices[0].finish_reason is a string
	finish        []byte
	finishEscaped bool
	hasLogprobs   bool   // choices[0].logprobs present and not null
	logprobs      []byte // that value, raw JSON (aliases the event data)
	hasReasoning  bool   // choices[0].delta.reasoning_content or .reasoning non-empty
	toolCalls     []byte // choices[0].delta.tool_calls, raw, when a non-empty array (nil: none)

	hasUsage         bool
	hasPrompt        bool
	hasCompletion    bool
	hasCached        bool // usage.prompt_tokens_details.cached_tokens an integer
	hasReasonTokens  bool // usage.completion_tokens_details.reasoning_tokens an integer
	promptTokens     int
	completionTokens int
	cachedTokens     int
	reasonTokens     int

	hasDraft         bool // timings.draft_n a non-negative integer
	hasDraftAccepted bool // timings.draft_n_accepted a non-negative integer
	draftTokens      int
	draftAccepted    int

	// The server's timing of the request (vLLM's metrics object), in
	// milliseconds, each with its has flag (srvQueue: metrics.queue_time_ms,
	// srvTTFT: time_to_first_token_ms, srvGen: generation_time_ms).
	hasSrvQueue, hasSrvTTFT, hasSrvGen bool
	srvQueue, srvTTFT, srvGen          float64

	isError       bool
	errMsg        []byte
	errMsgEscaped bool

	id, model       []byte // top-level id and model strings, raw (alias the event data; nil: absent)
	idEsc, modelEsc bool
}

// maxDepth matches encoding/json's nesting limit.
const maxDepth = 10000

// errSyntax is wrapped by every decodeChunk error.
var errSyntax = errors.New("invalid JSON")

type chunkError struct {
	what string
	off  int
}

func (e *chunkError) Error() string {
	return "invalid JSON: " + e.what + " at offset " + strconv.Itoa(e.off)
}

func (e *chunkError) Unwrap() error { return errSyntax }

// decoder is a minimal validating JSON reader over one event's data. It
// accepts exactly what encoding/json accepts (RFC 8259; invalid UTF-8 is
// tolerated inside strings, as encoding/json does).
type decoder struct {
	b []byte
	i int
}

// topState collects top-level members; decodeChunk resolves it at the end
// so that the last of duplicate keys wins.
type topState struct {
	errSet, errMsgSet                  bool
	errMsg                             []byte
	errMsgEsc                          bool
	objectError                        bool
	topMsgSet                          bool
	topMsg                             []byte
	topMsgEsc                          bool
	textSet, contentSet                bool
	text                               []byte // the last non-empty text or content
	textEsc                            bool
	finishSet, roleSet                 bool
	logprobsSet                        bool
	logprobs                           []byte
	finish                             []byte
	finishEsc                          bool
	promptSet, complSet                bool
	promptTok, complTokens             int
	cachedSet                          bool
	cachedTok                          int
	reasonCSet, reasonSet              bool // delta.reasoning_content, delta.reasoning non-empty
	toolCalls                          []byte
	reasonTokSet                       bool
	reasonTok                          int
	draftSet, draftAccSet              bool
	draftTok, draftAcc                 int
	srvQueueSet, srvTTFTSet, srvGenSet bool
	srvQueue, srvTTFT, srvGen          float64
}

// decodeChunk parses data into c, which it overwrites.
func decodeChunk(data []byte, c *chunk) error {
	*c = chunk{}
	d := decoder{b: data}
	var st topState
	if err := d.top(c, &st); err != nil {
		return err
	}
	if c.choices > 0 {
		c.hasText = st.textSet || st.contentSet
		if c.hasText {
			c.text, c.textEscaped = st.text, st.textEsc
		}
		c.hasRole = st.roleSet
		c.hasFinish, c.finish, c.finishEscaped = st.finishSet, st.finish, st.finishEsc
		c.hasLogprobs, c.logprobs = st.logprobsSet, st.logprobs
		c.hasReasoning = st.reasonCSet || st.reasonSet
		c.toolCalls = st.toolCalls
	}
	if c.hasUsage {
		c.hasPrompt, c.promptTokens = st.promptSet, st.promptTok
		c.hasCompletion, c.completionTokens = st.complSet, st.complTokens
		c.hasCached, c.cachedTokens = st.cachedSet, st.cachedTok
		c.hasReasonTokens, c.reasonTokens = st.reasonTokSet, st.reasonTok
	}
	if c.hasDraft = st.draftSet; c.hasDraft {
		c.draftTokens = st.draftTok
	}
	if c.hasDraftAccepted = st.draftAccSet; c.hasDraftAccepted {
		c.draftAccepted = st.draftAcc
	}
	c.hasSrvQueue, c.hasSrvTTFT, c.hasSrvGen = st.srvQueueSet, st.srvTTFTSet, st.srvGenSet
	if c.hasSrvQueue {
		c.srvQueue = st.srvQueue
	}
	if c.hasSrvTTFT {
		c.srvTTFT = st.srvTTFT
	}
	if c.hasSrvGen {
		c.srvGen = st.srvGen
	}
	switch {
	case st.errSet:
		c.isError = true
		if st.errMsgSet {
			c.errMsg, c.errMsgEscaped = st.errMsg, st.errMsgEsc
		}
	case st.objectError:
		c.isError = true
		if st.topMsgSet {
			c.errMsg, c.errMsgEscaped = st.topMsg, st.topMsgEsc
		}
	}
	return nil
}

func (d *decoder) fail(what string) error { return &chunkError{what: what, off: d.i} }

func (d *decoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *decoder) peek() byte {
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

// null consumes a null literal and reports whether there was one.
func (d *decoder) null() bool {
	if len(d.b)-d.i >= 4 && string(d.b[d.i:d.i+4]) == "null" {
		d.i += 4
		return true
	}
	return false
}

// key reads an object key and the colon after it; the key is unescaped
// (allocating) only when it has escapes.
func (d *decoder) key() ([]byte, error) {
	if d.peek() != '"' {
		return nil, d.fail("expected object key")
	}
	k, esc, err := d.str()
	if err != nil {
		return nil, err
	}
	d.ws()
	if d.peek() != ':' {
		return nil, d.fail("expected colon")
	}
	d.i++
	d.ws()
	if esc {
		k = unescape(k)
	}
	return k, nil
}

// objectOpen consumes '{' and reports whether the object is empty (in which
// case '}' is consumed too).
func (d *decoder) objectOpen() (empty bool, err error) {
	if d.peek() != '{' {
		return false, d.fail("expected object")
	}
	d.i++
	d.ws()
	if d.peek() == '}' {
		d.i++
		return true, nil
	}
	return false, nil
}

// objectNext consumes the separator after a member and reports whether the
// object ended.
func (d *decoder) objectNext() (end bool, err error) { return d.next('}') }

// arrayOpen consumes the '[' the caller saw and reports whether the array
// is empty (in which case ']' is consumed too).
func (d *decoder) arrayOpen() (empty bool) {
	d.i++
	d.ws()
	if d.peek() == ']' {
		d.i++
		return true
	}
	return false
}

// arrayNext is objectNext for an array element.
func (d *decoder) arrayNext() (end bool, err error) { return d.next(']') }

// next reads a comma (and the space after it) or closer (end).
func (d *decoder) next(closer byte) (end bool, err error) {
	d.ws()
	switch d.peek() {
	case ',':
		d.i++
		d.ws()
		return false, nil
	case closer:
		d.i++
		return true, nil
	}
	if closer == ']' {
		return false, d.fail("expected comma or end of array")
	}
	return false, d.fail("expected comma or end of object")
}

// objectOrSkip reads an object member by member as members does; a value
// that is not an object is skipped at depth.
func (d *decoder) objectOrSkip(depth int, field func(k []byte) error) error {
	if d.peek() != '{' {
		return d.skip(depth)
	}
	return d.members(field)
}

// event reads the whole of d.b as one JSON object, member by member as
// members does, with nothing but white space around it: an event's data.
func (d *decoder) event(field func(k []byte) error) error {
	d.ws()
	if err := d.members(field); err != nil {
		return err
	}
	d.ws()
	if d.i != len(d.b) {
		return d.fail("data after top-level value")
	}
	return nil
}

// members reads an object member by member: field gets each key, with the
// decoder at the member's value, and must consume that value (or return an
// error, which ends the object). Every object loop of the decoders is this
// one; field does not escape, so the closure a caller passes costs no
// allocation (BenchmarkDecodeChunk).
func (d *decoder) members(field func(k []byte) error) error {
	if empty, err := d.objectOpen(); empty || err != nil {
		return err
	}
	for {
		k, err := d.key()
		if err != nil {
			return err
		}
		if err := field(k); err != nil {
			return err
		}
		if end, err := d.objectNext(); end || err != nil {
			return err
		}
	}
}

// top reads a chunk's data: the top-level object.
func (d *decoder) top(c *chunk, st *topState) error {
	return d.event(func(k []byte) (err error) {
		switch string(k) {
		case "choices":
			err = d.choices(c, st)
		case "usage":
			err = d.usage(c, st)
		case "timings":
			err = d.timings(st)
		case "metrics":
			err = d.serverMetrics(st)
		case "error":
			err = d.errorValue(st)
		case "object":
			var s []byte
			var esc bool
			err = d.strOrSkip(2, &s, &esc)
			st.objectError = stringIs(s, esc, "error")
		case "id":
			err = d.strOrSkip(2, &c.id, &c.idEsc)
		case "model":
			err = d.strOrSkip(2, &c.model, &c.modelEsc)
		case "message":
			st.topMsgSet = d.peek() == '"'
			err = d.strOrSkip(2, &st.topMsg, &st.topMsgEsc)
		default:
			err = d.skip(2)
		}
		return err
	})
}

func (d *decoder) choices(c *chunk, st *topState) error {
	c.choices = 0
	st.textSet, st.contentSet, st.finishSet, st.roleSet, st.logprobsSet = false, false, false, false, false
	st.reasonCSet, st.reasonSet, st.toolCalls = false, false, nil
	if d.null() {
		return nil
	}
	if d.peek() != '[' {
		return d.fail("choices is not an array")
	}
	if d.arrayOpen() {
		return nil
	}
	for {
		var err error
		if c.choices == 0 {
			err = d.choice(st)
		} else {
			err = d.skip(3)
		}
		if err != nil {
			return err
		}
		c.choices++
		if end, err := d.arrayNext(); end || err != nil {
			return err
		}
	}
}

// optString reads a string or null (else an error) and reports whether it
// was a string.
func (d *decoder) optString(what string) (s []byte, esc, ok bool, err error) {
	if d.null() {
		return nil, false, false, nil
	}
	if d.peek() != '"' {
		return nil, false, false, d.fail(what + " is not a string")
	}
	s, esc, err = d.str()
	return s, esc, err == nil, err
}

// strOrSkip reads a string member into *s and *esc (nil and false when
// the value is not a string, which is skipped at depth).
func (d *decoder) strOrSkip(depth int, s *[]byte, esc *bool) (err error) {
	*s, *esc = nil, false
	if d.peek() == '"' {
		*s, *esc, err = d.str()
		return err
	}
	return d.skip(depth)
}

func (d *decoder) choice(st *topState) error {
	if d.peek() != '{' {
		return d.fail("choices[0] is not an object")
	}
	return d.members(func(k []byte) (err error) {
		switch string(k) {
		case "text":
			var s []byte
			var esc bool
			s, esc, _, err = d.optString("text")
			st.textSet = len(s) > 0
			if st.textSet {
				st.text, st.textEsc = s, esc
			}
		case "finish_reason":
			st.finish, st.finishEsc, st.finishSet, err = d.optString("finish_reason")
		case "delta":
			err = d.delta(st)
		case "logprobs":
			// Skipped (validated, not decoded): its objects can be larger
			// than the token itself.
			st.logprobsSet = !d.null()
			if st.logprobsSet {
				start := d.i
				err = d.skip(4)
				st.logprobs = d.b[start:d.i]
			}
		default:
			err = d.skip(4)
		}
		return err
	})
}

func (d *decoder) delta(st *topState) error {
	st.contentSet, st.roleSet = false, false
	st.reasonCSet, st.reasonSet, st.toolCalls = false, false, nil
	if d.null() {
		return nil
	}
	if d.peek() != '{' {
		return d.fail("delta is not an object")
	}
	return d.members(func(k []byte) (err error) {
		switch string(k) {
		case "content":
			var s []byte
			var esc bool
			s, esc, _, err = d.optString("content")
			st.contentSet = len(s) > 0
			if st.contentSet {
				st.text, st.textEsc = s, esc
			}
		case "role":
			st.roleSet = !d.null()
			if st.roleSet {
				err = d.skip(5)
			}
		case "reasoning_content":
			st.reasonCSet, err = d.nonEmptyString()
		case "reasoning":
			st.reasonSet, err = d.nonEmptyString()
		case "tool_calls":
			st.toolCalls = nil
			start := d.i
			if d.peek() == '[' {
				if err = d.skip(5); err == nil && !isEmptyArray(d.b[start:d.i]) {
					st.toolCalls = d.b[start:d.i]
				}
			} else {
				err = d.skip(5)
			}
		default:
			err = d.skip(5)
		}
		return err
	})
}

// nonEmptyString reads any value and reports whether it was a non-empty
// string.
func (d *decoder) nonEmptyString() (bool, error) {
	if d.peek() != '"' {
		return false, d.skip(5)
	}
	s, _, err := d.str()
	return err == nil && len(s) > 0, err
}

// isEmptyArray reports whether raw, a valid JSON array, has no element.
func isEmptyArray(raw []byte) bool {
	for _, b := range raw[1:] {
		switch b {
		case ' ', '\t', '\n', '\r':
		case ']':
			return true
		default:
			return false
		}
	}
	return true
}

// optInt reads an integer or null. Like encoding/json decoding into an int,
// a fraction, an exponent or an overflow is an error.
func (d *decoder) optInt(what string) (int, bool, error) {
	if d.null() {
		return 0, false, nil
	}
	start := d.i
	if err := d.number(); err != nil {
		return 0, false, err
	}
	n, err := strconv.ParseInt(string(d.b[start:d.i]), 10, 0)
	if err != nil {
		d.i = start
		return 0, false, d.fail(what + " is not an integer")
	}
	return int(n), true, nil
}

// intOrSkip reads an integer member (0 when the value is not a number,
// which is skipped at depth; a number that is not an integer is an error).
func (d *decoder) intOrSkip(what string, depth int) (n int, err error) {
	if c := d.peek(); c == '-' || c >= '0' && c <= '9' {
		n, _, err = d.optInt(what)
		return n, err
	}
	return 0, d.skip(depth)
}

func (d *decoder) errorValue(st *topState) error {
	st.errSet, st.errMsgSet = false, false
	if d.null() {
		return nil
	}
	st.errSet = true
	switch d.peek() {
	case '"':
		var err error
		st.errMsg, st.errMsgEsc, err = d.str()
		st.errMsgSet = err == nil
		return err
	case '{':
	default:
		return d.skip(2)
	}
	return d.members(func(k []byte) (err error) {
		if string(k) == "message" && d.peek() == '"' {
			st.errMsg, st.errMsgEsc, err = d.str()
			st.errMsgSet = err == nil
		} else {
			if string(k) == "message" {
				st.errMsgSet = false
			}
			err = d.skip(3)
		}
		return err
	})
}
