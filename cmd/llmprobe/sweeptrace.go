package main

import (
	"errors"

	"github.com/llmprobe/llmprobe/prober/sweep"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// applySweepTraceFlags loads --trace into c (before any load is sent:
// errors name the file, line and field) and replaces the rate ladder with
// the trace's speeds.
func applySweepTraceFlags(f *sweepFlags, c *sweep.Config) error {
	file := f.str("trace")
	if file == "" {
		switch {
		case f.isSet("trace-speed"):
			return &flagError{flag: "trace-speed", err: errors.New("needs --trace")}
		case f.isSet("trace-block-size"):
			return &flagError{flag: "trace-block-size", err: errors.New("needs --trace")}
		}
		return nil
	}
	switch {
	case f.isSet("rates") || f.isSet("concurrency"):
		return &flagError{flag: "trace", err: errors.New("replays the trace's own timing: give --trace-speed, not --rates or --concurrency")}
	case f.isSet("input-len") || f.isSet("output-len") || f.isSet("range-ratio") || f.str("workload") != "" || f.num("prefix-len") != 0:
		return &flagError{flag: "trace", err: errors.New("the trace gives each request's lengths and prefixes: " +
			"--input-len, --output-len, --range-ratio, --prefix-len and --workload do not apply")}
	}
	if err := sweep.LookupField("TraceSpeeds").Apply(c, f.str("trace-speed")); err != nil {
		return err
	}
	tr, err := workload.LoadTrace(file, workload.TraceOptions{BlockSize: f.num("trace-block-size")})
	if err != nil {
		return &flagError{flag: "trace", err: err}
	}
	c.Trace = tr
	c.Rates, c.Auto, c.RatesText = nil, false, ""
	if !f.isSet("duration") {
		c.Duration = 0 // the whole trace
	}
	return nil
}
