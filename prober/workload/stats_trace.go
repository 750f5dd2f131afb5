package workload

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/llmprobe/llmprobe/prober/capfile"
)

// TraceStats summarises a trace for `llmprobe workload stats`: its lengths
// as written, its arrival offsets at speed 1 (every trace is timed), and
// each request's shared prefix from its hash ids (Trace.BlockSize times the
// leading hash ids an earlier request had at the same positions; 0 without
// hash ids). Tokenizer is "trace": the lengths are the trace's own counts.
func TraceStats(t *Trace) Stats {
	reqs := t.Requests()
	samples := make([]Sample, len(reqs))
	for i, r := range reqs {
		samples[i] = Sample{InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, Offset: r.Offset, Timed: true,
			SharedPrefixTokens: r.SharedPrefixTokens}
	}
	st := ComputeStats(samples)
	st.Tokenizer = MethodTrace
	st.Source = t.Path
	return st
}

// MethodTrace is the Stats.Tokenizer of a trace's statistics: the lengths
// are the counts the trace records, no tokenizer was run.
const MethodTrace = "trace"

// IsTraceLine reports whether one JSONL line is a trace entry (either trace
// format: it has input_length or input_tokens) rather than a dataset entry
// (prompt or messages). `llmprobe workload stats` sniffs the first line
// with it.
func IsTraceLine(line []byte) bool {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(line, &keys); err != nil {
		return false
	}
	_, prompt := keys["prompt"]
	_, msgs := keys["messages"]
	_, il := keys["input_length"]
	_, it := keys["input_tokens"]
	return (il || it) && !prompt && !msgs
}

// SniffTrace reports whether the first non-empty line of the file at path
// is a trace entry (IsTraceLine). It reads at most the first MiB; any error
// (a missing file too) reports false, leaving the file to the dataset
// loader, whose errors name it.
func SniffTrace(path string) bool {
	fh, err := capfile.Open(path)
	if err != nil {
		return false
	}
	defer fh.Close()
	b := make([]byte, 1<<20) // a prefix: a longer file is no error
	n, _ := io.ReadFull(fh, b)
	b = b[:n]
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		if line = bytes.TrimSpace(line); len(line) > 0 {
			return IsTraceLine(line)
		}
	}
	return false
}
