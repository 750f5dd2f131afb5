package sweep

import "github.com/llmprobe/llmprobe/internal/artifacts"

// testReport renders analysis.md and the plots of the runs of this
// package's tests (testOptions' Options.Report). This package cannot
// import internal/report (which imports it); report_test.go, in package
// sweep_test, sets it through SetTestReport.
var testReport func(run *artifacts.Run, res *Result) error

// SetTestReport sets the Options.Report of the runs of this package's
// tests.
func SetTestReport(f func(run *artifacts.Run, res *Result) error) { testReport = f }
