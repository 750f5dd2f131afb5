// Package sweep owns capacity sweeps: running one fixed workload at
// increasing load against an OpenAI-compatible endpoint, each step started
// from an idle server, and finding the capacity knee. It is a library that
// writes no files, tables or progress bars: Prepare validates a Config
// (errors are *FieldError naming the field) and checks the target, then
// Prepared.Run drives the sweep, hands every measured prober.Record to a
// RecordSink as soon as it completes (and the server's /metrics snapshots),
// reports progress to an Observer, and returns the Result (result.json).
// internal/rundir composes it with the run directory; the CLI and a daemon
// call that.
//
// Files by concern: sweep.go (the API: Prepare, Run, RecordSink,
// Observer), settings.go and settings_table.go (the settings table: every
// Config field once, with its flag, YAML / API key, default, bound, unit
// and doc; the sweep and compare flags, the scheduled-sweep YAML and the
// sweep API body are built from it, and a FieldError's reason refers to
// other settings by field path for each surface to spell),
// settings_format.go (Setting.Format and CommandLine: a Config as the
// sweep command line that gives it), spec.go (FromSpec: a scheduled
// sweep's or the sweep API's spec against its target, registered as
// prober/config's check at load), speckeys.go (a spec's keys decoded one
// by one through the settings table's rows, an unknown key refused), config.go (Config and its validation;
// the rules shared with probes are prober/knob's), parse.go (the list and
// text values a surface gives: rates, levels, goodput, metadata),
// preflight.go (target, model, max_model_len, /metrics), fingerprint.go
// (the experiment fingerprint), prompts.go (prompt sizing and the bounded
// prompt window), levels.go (the ladder and the search over levels),
// step.go (one step: warmups, idle proof, snapshots, load, statistics),
// load.go (the schedule of a step and its requests), snapshots.go (idle
// proof and /metrics snapshots), probe.go (the closed-loop throughput
// probe before --rates auto), accumulate.go and stats.go (StatsAccumulator:
// vllm bench serve's figures plus llmprobe's extras, from Records fed one
// at a time), servertiming.go (why a step has no per-request server
// timing), server.go (server-side deltas), validity.go (Judge:
// client-saturated, not-idle, errors, interrupted), knee.go (LadderKnee)
// and search.go (Search; searchopts.go: SearchOptions and its defaults),
// written against plain StepOutcomes so they can be
// tested with a synthetic system (Search reruns an invalid level once and
// steps down from one that stays invalid; searchbound.go: the bound it
// states below a level it could not measure, and the repeats of the levels
// that bracket a found knee), assemble.go (the Result and its notes), result.go
// (the Result's types), resultjson.go (result.json's keys: one table per
// object, used to write and to read) and decode.go (MarshalJSON,
// DecodeResult and the value codecs), view.go (small readings of a Result
// that reports need). Workload and measurement variants: answers.go
// (answer checks after the last step), background.go (the background mode
// beside production traffic), dataset.go (a dataset file), multiturn.go
// (multi-turn chat sessions), trace.go (trace replay), features.go (request
// features /v1/models does not list), shard.go and merge.go (sharded sweeps
// and their Merger), cost.go (cost per hour), energy.go (GPU energy from
// DCGM), kneeci.go (the knee's bootstrap interval), schedlatency.go (Go
// scheduling latency of a step; the process's CPU time is prober/proccpu's),
// httpconfig.go (the sweep's HTTP clients). Error text
// that reaches a sink or the Result loses credentials and echoed prompt
// text.
//
// docs/sweep.md describes the flags, the statistics, the validity rules,
// the knee algorithm, the result.json keys and the Go API for people.
package sweep
