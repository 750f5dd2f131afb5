package main

import (
	"errors"

	"github.com/alecthomas/kingpin/v2"

	"github.com/llmprobe/llmprobe/prober/sweep"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// sweepTraceFlags are the sweep's trace replay flags: --trace,
// --trace-speed, --trace-block-size.
type sweepTraceFlags struct {
	file, speeds       string
	blockSize          int
	speedSet, blockSet bool
}

func init() {
	sweepFieldFlags["Trace"] = "trace"
	sweepFieldFlags["TraceSpeeds"] = "trace-speed"
}

func addSweepTraceFlags(cmd *kingpin.CmdClause, f *sweepTraceFlags) {
	cmd.Flag("trace", "Replay a trace instead of --rates: JSONL of Mooncake entries {\"timestamp\" (ms), \"input_length\", "+
		"\"output_length\", \"hash_ids\"} or {\"offset_ms\", \"input_tokens\", \"output_tokens\"}, sent open loop on its own "+
		"timing divided by --trace-speed, prompts of its lengths, hash_ids as shared prompt prefixes. --num-prompts "+
		"(the first N entries) or --duration (the entries due within it) cut it. See docs/workload.md.").StringVar(&f.file)
	cmd.Flag("trace-speed", "With --trace: replay speeds, one step each (1: the trace's own timing, 2: twice as fast; "+
		"a list such as 1,2,4 is a ladder).").Default("1").IsSetByUser(&f.speedSet).StringVar(&f.speeds)
	cmd.Flag("trace-block-size", "With --trace: the tokens one hash id stands for (512 in Mooncake's traces).").
		Default("512").IsSetByUser(&f.blockSet).IntVar(&f.blockSize)
}

// applySweepTraceFlags loads --trace into c (before any load is sent:
// errors name the file, line and field) and replaces the rate ladder with
// the trace's speeds.
func applySweepTraceFlags(f *sweepFlags, c *sweep.Config) error {
	t := &f.trace
	if t.file == "" {
		switch {
		case t.speedSet:
			return &flagError{flag: "trace-speed", err: errors.New("needs --trace")}
		case t.blockSet:
			return &flagError{flag: "trace-block-size", err: errors.New("needs --trace")}
		}
		return nil
	}
	switch {
	case f.ratesSet || f.concurrencySet:
		return &flagError{flag: "trace", err: errors.New("replays the trace's own timing: give --trace-speed, not --rates or --concurrency")}
	case f.inputSet || f.outputSet || f.rangeSet || f.workloadFile != "" || f.prefixLen != 0:
		return &flagError{flag: "trace", err: errors.New("the trace gives each request's lengths and prefixes: " +
			"--input-len, --output-len, --range-ratio, --prefix-len and --workload do not apply")}
	}
	speeds, err := sweep.ParseTraceSpeeds(t.speeds)
	if err != nil {
		return err
	}
	tr, err := workload.LoadTrace(t.file, workload.TraceOptions{BlockSize: t.blockSize})
	if err != nil {
		return &flagError{flag: "trace", err: err}
	}
	c.Trace, c.TraceSpeeds = tr, speeds
	c.Rates, c.Auto, c.RatesText = nil, false, ""
	if !f.durationSet {
		c.Duration = 0 // the whole trace
	}
	return nil
}
