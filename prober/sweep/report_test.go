package sweep_test

import (
	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/report"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// The runner's tests check analysis.md: they render it with
// internal/report, as the CLI does.
func init() {
	sweep.SetTestReport(func(run *artifacts.Run, res *sweep.Result) error { return report.WriteFiles(run, res) })
}
