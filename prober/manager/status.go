package manager

import "time"

// Result is one finished request as the landing page shows it. It carries
// no prompt text and no secrets.
type Result struct {
	Time      time.Time
	RequestID string
	// TraceID is Record.TraceID: the trace id of a traced, sampled request.
	TraceID      string
	Outcome      string
	Good         bool
	HTTPStatus   int
	TTFT         time.Duration
	E2E          time.Duration
	TPOT         time.Duration
	OutputTokens int
	SendLag      time.Duration
	Message      string
	// Backend is the request's attributed backend (Record.Backend; empty
	// without attribution_headers).
	Backend string
}

// ProbeStatus is the state of one probe.
type ProbeStatus struct {
	Name     string
	Rate     float64
	Arrival  string
	Workload string
	Sent     uint64
	Good     uint64
	Failed   uint64
	Skipped  uint64
	Recent   []Result // newest first
	Failures []Result // newest first; kept longer than Recent
}

// TargetStatus is the state of one target and its probes.
type TargetStatus struct {
	Name          string
	BaseURL       string
	API           string
	Model         string
	ServerVersion string
	SLO           string
	Note          string // e.g. "built-in simulator"
	Probes        []ProbeStatus
}
