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
// (methodology §1): the question, the rollback condition and the SLO
// beside them. It writes nothing for a run without --decision or
// --rollback-if.
func writeDecision(b *bytes.Buffer, res *sweep.Result) {
	d, r := res.Metadata[MetaDecision], res.Metadata[MetaRollbackIf]
	if d == "" && r == "" {
		return
	}
	or := func(s, flag string) string {
		if s == "" {
			return "not-recorded (" + flag + ")"
		}
		return s
	}
	fmt.Fprintf(b, "## Decision\n\n- Question: %s\n- Roll back if: %s\n", or(d, "--decision"), or(r, "--rollback-if"))
	if len(res.SLO) == 0 {
		b.WriteString("- SLO: none given (--goodput): every success counts as good\n\n")
		return
	}
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
	b.WriteString("` (ms; a step holds it when its p99s do)\n\n")
}
