package artifacts

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/llmprobe/llmprobe/prober"
)

// RecordLine is one line of records.jsonl: the step's index and round, then
// the Record's own fields, then the prompt (only when prompts are saved).
type RecordLine struct {
	Step  int `json:"step"`
	Round int `json:"round"`
	*prober.Record
	Prompt string `json:"prompt,omitempty"`
}

// ErrorLine is one line of errors-redacted.jsonl: a failed request, named
// by its step's label, with its (already redacted) message.
type ErrorLine struct {
	Step       int       `json:"step"`
	Label      string    `json:"label"`
	RequestID  string    `json:"request_id"`
	Time       time.Time `json:"time"`
	Error      string    `json:"error"`
	HTTPStatus int       `json:"http_status,omitempty"`
	Message    string    `json:"message,omitempty"`
}

// Sink streams what a sweep measures into a run directory as it is
// measured: records.jsonl (a RecordLine per request), errors-redacted.jsonl
// (an ErrorLine per failed request), and the /metrics snapshot files
// metrics-before.txt (phases before-warmup and before), metrics-during.txt
// (phase during, then the scrapes of prober/scrape's recording format)
// and metrics-after.txt. It writes what it is given: redacting is the
// caller's job. Its methods are safe for concurrent use; lines written by
// concurrent calls land whole, in the order the calls took the file.
type Sink struct {
	records, errs, before, during, after *Appender
}

// OpenSink opens the appenders of a Sink in r (the files stay *.partial
// until Close or r.Finish).
func (r *Run) OpenSink() (*Sink, error) {
	s := &Sink{}
	var err error
	open := func(name string) *Appender {
		if err != nil {
			return nil
		}
		var a *Appender
		a, err = r.Append(name)
		return a
	}
	s.records = open(RecordsFile)
	s.errs = open(ErrorsFile)
	s.before = open(MetricsBeforeFile)
	s.during = open(MetricsDuringFile)
	s.after = open(MetricsAfterFile)
	if err != nil {
		return nil, errors.Join(err, s.Close())
	}
	return s, nil
}

// WriteRecord appends line to records.jsonl and, when its request failed, an
// ErrorLine of it (step label label) to errors-redacted.jsonl.
func (s *Sink) WriteRecord(line RecordLine, label string) error {
	bp := lineBuffers.Get().(*[]byte)
	b, ok := AppendRecordLine((*bp)[:0], line)
	var err error
	if ok {
		_, err = s.records.Write(b)
	} else {
		err = s.records.WriteLine(line) // encoding/json's error (or nil record)
	}
	if cap(b) <= maxPooledLine {
		*bp = b
		lineBuffers.Put(bp)
	}
	if err != nil {
		return err
	}
	rec := line.Record
	if rec.OK() {
		return nil
	}
	return s.errs.WriteLine(ErrorLine{Step: line.Step, Label: label, RequestID: rec.RequestID, Time: rec.WallStart.UTC(),
		Error: string(rec.Error), HTTPStatus: rec.HTTPStatus, Message: rec.ErrorMessage})
}

// WriteSnapshot appends a snapshot section (Appender.WriteSnapshot) to the
// file of its phase: metrics-before.txt for "before-warmup" and "before",
// metrics-during.txt for "during", metrics-after.txt for "after". The
// "after" snapshot ends a step: the step's records and errors are flushed
// to their files first, and the snapshot itself is flushed, so a step that
// has ended is on disk whatever happens to the process next.
func (s *Sink) WriteSnapshot(meta Snapshot, body []byte) error {
	var a *Appender
	switch meta.Phase {
	case "before-warmup", "before":
		a = s.before
	case "during":
		a = s.during
	case "after":
		a = s.after
	default:
		return fmt.Errorf("snapshot of unknown phase %q", meta.Phase)
	}
	if meta.Phase != "after" {
		return a.WriteSnapshot(meta, body)
	}
	return errors.Join(s.records.Flush(), s.errs.Flush(), s.during.Flush(), a.WriteSnapshot(meta, body), a.Flush())
}

// WriteScrape appends one during-step scrape entry (prober/scrape's
// recording format) to metrics-during.txt.
func (s *Sink) WriteScrape(entry []byte) error {
	_, err := s.during.Write(entry)
	return err
}

// RecordBytes returns the bytes written to records.jsonl so far (buffered
// ones included): a caller capping a step's bytes takes the difference
// across the step.
func (s *Sink) RecordBytes() int64 { return s.records.Written() }

// Close closes every file (renaming it from *.partial) and returns the
// first errors; it is idempotent.
func (s *Sink) Close() error {
	var errs []error
	for _, a := range []*Appender{s.records, s.errs, s.before, s.during, s.after} {
		if a != nil {
			if err := a.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// lineBuffers recycles the buffers of records.jsonl lines.
var lineBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// maxPooledLine bounds the buffers kept in lineBuffers.
const maxPooledLine = 64 << 10

// AppendRecordLine appends line as records.jsonl writes it — the bytes
// encoding/json gives (without HTML escaping), then a newline — without
// reflection: the per-request hot path of a sweep's sink (ITL arrays are
// most of a line). It returns false, appending nothing, when it cannot
// encode line byte for byte as encoding/json does (a nil Record, a time
// outside the years 0-9999); the caller then uses encoding/json, which
// reports the error. A test holds it to encoding/json over every field.
func AppendRecordLine(b []byte, line RecordLine) ([]byte, bool) {
	r := line.Record
	if r == nil || !jsonTimeOK(r.Scheduled) || !jsonTimeOK(r.Sent) || !jsonTimeOK(r.WallStart) {
		return b, false
	}
	b = append(b, `{"step":`...)
	b = strconv.AppendInt(b, int64(line.Step), 10)
	b = append(b, `,"round":`...)
	b = strconv.AppendInt(b, int64(line.Round), 10)
	b = append(b, `,"target":`...)
	b = appendJSONString(b, r.Target)
	b = append(b, `,"probe":`...)
	b = appendJSONString(b, r.Probe)
	if r.Model != "" {
		b = append(b, `,"model":`...)
		b = appendJSONString(b, r.Model)
	}
	b = append(b, `,"request_id":`...)
	b = appendJSONString(b, r.RequestID)
	if r.TraceID != "" {
		b = append(b, `,"trace_id":`...)
		b = appendJSONString(b, r.TraceID)
	}
	b = append(b, `,"scheduled":`...)
	b = appendJSONTime(b, r.Scheduled)
	b = append(b, `,"sent":`...)
	b = appendJSONTime(b, r.Sent)
	b = appendInt(b, `,"send_lag_ns":`, int64(r.SendLag))
	if r.QueueWait != 0 {
		b = appendInt(b, `,"queue_wait_ns":`, int64(r.QueueWait))
	}
	b = appendInt(b, `,"ttft_ns":`, int64(r.TTFT))
	b = appendInt(b, `,"ttft_text_ns":`, int64(r.TTFTText))
	for _, f := range []struct {
		key string
		v   time.Duration
	}{{`,"ttfr_ns":`, r.TTFR}, {`,"thinking_ns":`, r.ThinkingTime}, {`,"first_tool_call_ns":`, r.FirstToolCall}} {
		if f.v != 0 {
			b = appendInt(b, f.key, int64(f.v))
		}
	}
	if len(r.ITL) > 0 {
		b = append(b, `,"itl_ns":[`...)
		for i, d := range r.ITL {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(d), 10)
		}
		b = append(b, ']')
	}
	b = appendInt(b, `,"e2e_ns":`, int64(r.E2E))
	for _, f := range []struct {
		key string
		v   time.Duration
	}{{`,"done_ns":`, r.Done}, {`,"resolve_ns":`, r.ResolveTime}, {`,"connect_ns":`, r.ConnectTime},
		{`,"tls_ns":`, r.TLSTime}, {`,"request_ns":`, r.WriteTime}, {`,"wait_ns":`, r.WaitTime},
		{`,"first_token_ns":`, r.FirstTokenTime}, {`,"transfer_ns":`, r.TransferTime},
		{`,"headers_ns":`, r.HeadersTime}} {
		if f.v != 0 {
			b = appendInt(b, f.key, int64(f.v))
		}
	}
	b = appendInt(b, `,"input_tokens":`, int64(r.InputTokens))
	b = appendInt(b, `,"output_tokens_requested":`, int64(r.OutputTokensRequested))
	b = appendInt(b, `,"prompt_tokens":`, int64(r.PromptTokens))
	b = appendInt(b, `,"completion_tokens":`, int64(r.CompletionTokens))
	if r.TokensCounted {
		b = append(b, `,"tokens_counted":true`...)
	}
	if r.CachedTokens != 0 {
		b = appendInt(b, `,"cached_tokens":`, int64(r.CachedTokens))
	}
	if r.CachedTokensReported {
		b = append(b, `,"cached_tokens_reported":true`...)
	}
	if r.DraftTokens != 0 {
		b = appendInt(b, `,"draft_tokens":`, int64(r.DraftTokens))
	}
	if r.DraftAccepted != 0 {
		b = appendInt(b, `,"draft_accepted":`, int64(r.DraftAccepted))
	}
	if r.DraftReported {
		b = append(b, `,"draft_reported":true`...)
	}
	for _, f := range []struct {
		key string
		v   time.Duration
	}{{`,"server_queue_ns":`, r.ServerQueueTime}, {`,"server_ttft_ns":`, r.ServerTTFT},
		{`,"server_generation_ns":`, r.ServerGenerationTime}} {
		if f.v != 0 {
			b = appendInt(b, f.key, int64(f.v))
		}
	}
	for _, f := range []struct {
		key string
		v   bool
	}{{`,"server_queue_reported":true`, r.HasServerQueue}, {`,"server_ttft_reported":true`, r.HasServerTTFT},
		{`,"server_generation_reported":true`, r.HasServerGenerationTime}} {
		if f.v {
			b = append(b, f.key...)
		}
	}
	if r.ReasoningTokens != 0 {
		b = appendInt(b, `,"reasoning_tokens":`, int64(r.ReasoningTokens))
	}
	if r.ReasoningTokensCounted {
		b = append(b, `,"reasoning_tokens_counted":true`...)
	}
	if r.ToolCalls != 0 {
		b = appendInt(b, `,"tool_calls":`, int64(r.ToolCalls))
	}
	if r.Inputs != 0 {
		b = appendInt(b, `,"inputs":`, int64(r.Inputs))
	}
	if r.Dimension != 0 {
		b = appendInt(b, `,"dimension":`, int64(r.Dimension))
	}
	b = appendInt(b, `,"events":`, int64(r.Events))
	if r.FinishReason != "" {
		b = append(b, `,"finish_reason":`...)
		b = appendJSONString(b, r.FinishReason)
	}
	b = appendInt(b, `,"http_status":`, int64(r.HTTPStatus))
	if r.Error != "" {
		b = append(b, `,"error":`...)
		b = appendJSONString(b, string(r.Error))
	}
	if r.ErrorMessage != "" {
		b = append(b, `,"error_message":`...)
		b = appendJSONString(b, r.ErrorMessage)
	}
	if r.NotSent {
		b = append(b, `,"not_sent":true`...)
	}
	if r.Retry != "" {
		b = append(b, `,"retry":`...)
		b = appendJSONString(b, string(r.Retry))
	}
	b = append(b, `,"wall_start":`...)
	b = appendJSONTime(b, r.WallStart)
	if r.SessionID != "" {
		b = append(b, `,"session_id":`...)
		b = appendJSONString(b, r.SessionID)
	}
	if r.Turn != 0 {
		b = appendInt(b, `,"turn":`, int64(r.Turn))
	}
	if r.SessionReplica != "" {
		b = append(b, `,"session_replica":`...)
		b = appendJSONString(b, r.SessionReplica)
	}
	b = appendFeatures(b, r)
	b = appendAttribution(b, r)
	if line.Prompt != "" {
		b = append(b, `,"prompt":`...)
		b = appendJSONString(b, line.Prompt)
	}
	return append(b, "}\n"...), true
}

func appendInt(b []byte, key string, v int64) []byte {
	return strconv.AppendInt(append(b, key...), v, 10)
}

// jsonTimeOK reports whether time.Time.MarshalJSON accepts t (years 0-9999).
func jsonTimeOK(t time.Time) bool {
	y := t.Year()
	return y >= 0 && y <= 9999
}

// appendJSONTime appends t as time.Time.MarshalJSON does (RFC 3339 with
// nanoseconds, quoted); t must pass jsonTimeOK.
func appendJSONTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s quoted as encoding/json does without HTML
// escaping: '"' and '\\' escaped, \b \f \n \r \t short, other control
// characters as \u00XX, invalid UTF-8 as \ufffd, U+2028 and U+2029 as
// \u2028 and \u2029.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
