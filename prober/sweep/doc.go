// Package sweep owns capacity sweeps (`llmprobe sweep`): running one fixed
// workload at increasing load against an OpenAI-compatible endpoint, each
// step started from an idle server, and finding the capacity knee.
//
// It owns the step statistics computed from a step's prober.Records
// (ComputeStats: vllm bench serve's figures plus llmprobe's extras), the
// server-side deltas from the target's /metrics before, during and after a
// step, the validity verdict of a step (Judge: client-saturated, not-idle,
// errors, interrupted), the knee (LadderKnee for a ladder, Search for
// --rates auto, both written against plain StepOutcomes so they can be
// tested with a synthetic system), result.json (Result), and the runner
// (Run) that drives a whole sweep: preflight, warmups, idle proof,
// snapshots, open loop / closed loop / rate with max concurrency / burst,
// drain, and the run directory through internal/artifacts, with the
// fingerprint (internal/fingerprint) and analysis.md (internal/report).
//
// docs/sweep.md describes the flags, the statistics, the validity rules,
// the knee algorithm and the result.json keys for people.
package sweep
