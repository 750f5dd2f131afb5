package artifacts

import (
	"errors"
	"fmt"
	"time"

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
// (phase during, then the scrapes of collector/scrape's recording format)
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
	if err := s.records.WriteLine(line); err != nil {
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

// WriteScrape appends one during-step scrape entry (collector/scrape's
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
