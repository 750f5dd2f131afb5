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
// tested with a synthetic system; Search reruns an invalid level and stops
// on one that stays invalid), the closed-loop throughput probe that starts an
// adaptive search near the knee, result.json (Result), and the runner (Run)
// that drives a whole sweep: preflight (target, model, max_model_len),
// warmups, idle proof, snapshots, open loop (vLLM's normalized schedule) /
// closed loop / rate with max concurrency / burst, drain, and the run
// directory through internal/artifacts, with the fingerprint
// (internal/fingerprint) and analysis.md (internal/report). Error text that
// reaches an artifact loses credentials and echoed prompt text.
//
// docs/sweep.md describes the flags, the statistics, the validity rules,
// the knee algorithm and the result.json keys for people.
package sweep
