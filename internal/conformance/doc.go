// Package conformance holds the engine conformance corpus checks: its tests
// read testdata/engines/<engine>/<version>/ — each engine's /metrics
// exposition, streamed completions and chats, /v1/models, info endpoints
// and error bodies, written from the engine's own source (the README beside
// each version names the file and commit of every fact) — and run
// llmprobe's scraper, engine detection, discovery and streaming client over
// every file served by a real HTTP server. The drift alarm
// (TestPersonaConformance) runs the same checks against each simulator
// persona and fails on any difference of metric names, types, label names
// or SSE framing that allowlist_test.go does not list with its reason.
//
// The package has no code of its own; docs/engines.md describes the corpus.
package conformance
