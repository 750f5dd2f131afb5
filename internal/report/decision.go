package report

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/llmprobe/llmprobe/prober/slo"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// Metadata keys that state the question a run serves (--decision,
// --rollback-if).
const (
	MetaDecision   = "decision"
	MetaRollbackIf = "rollback_if"
)

// writeDecision opens analysis.md with the decision the run serves
// (methodology §1): the question, the SLO beside it and a one-line answer.
// The rollback condition has its own section near the end
// (writeRollback).
func writeDecision(b *bytes.Buffer, res *sweep.Result) {
	heading(b, SectionDecision)
	if d := res.Metadata[MetaDecision]; d != "" {
		fmt.Fprintf(b, "- Question: %s\n", d)
	} else {
		b.WriteString("- Question: not-recorded (--decision)\n")
	}
	if len(res.SLO) == 0 {
		b.WriteString("- SLO: none given (--goodput): every success counts as good\n")
	} else {
		b.WriteString("- SLO: `")
		first := true
		for _, k := range slo.Names {
			v, ok := res.SLO[k]
			if !ok {
				continue
			}
			if !first {
				b.WriteByte(' ')
			}
			first = false
			b.WriteString(k + ":" + strconv.FormatFloat(v, 'f', -1, 64))
		}
		b.WriteString("` (ms; a step holds it when its p99s do)\n")
	}
	if res.CostPerHour > 0 {
		fmt.Fprintf(b, "- Price: %s USD per hour (--cost-per-hour)\n", strconv.FormatFloat(res.CostPerHour, 'f', -1, 64))
	}
	fmt.Fprintf(b, "- Answer: %s\n\n", answer(res))
}
