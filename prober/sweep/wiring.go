package sweep

// StepProgress reports how far a step has come; Options.NewProgress makes
// one per step. Add is called from the request goroutines (concurrently),
// Finish once when the step ends.
//
// Temporary wiring: it lets the CLI hand in internal/report's progress
// reporter without prober/sweep importing internal/report; an observer
// interface replaces it.
type StepProgress interface {
	Add(n int)
	Finish()
}
