package sweep

import (
	"encoding/json"
	"fmt"
	"time"
)

// Validity flags of a step. A step with any flag is invalid: it is reported
// and kept, and excluded from the knee.
const (
	// FlagClientSaturated: the client could not keep its schedule (send-lag
	// p99 above the threshold) or its process used more CPU than allowed.
	FlagClientSaturated = "client-saturated"
	// FlagClientReadLag: the client's own goroutines waited too long to
	// run (Go's scheduling latency p99, runtime/metrics
	// /sched/latencies:seconds, above the threshold): its read timestamps
	// are late although its sends may have kept their schedule.
	FlagClientReadLag = "client-read-lag"
	// FlagNotIdle: the server was not proven idle before the step (its
	// /metrics showed running or waiting requests until the idle timeout).
	FlagNotIdle = "not-idle"
	// FlagErrors: the error rate was above the threshold.
	FlagErrors = "errors"
	// FlagInterrupted: the step was cut short (SIGINT or a canceled
	// context); its figures cover only part of the step.
	FlagInterrupted = "interrupted"
	// FlagByteCap: the step's records reached Config.MaxStepBytes and the
	// step stopped sending (ErrStepCapReached).
	FlagByteCap = "byte-cap"
	// FlagUnintendedPrefixCache: the server's own prefix-cache hit
	// counters (vLLM, SGLang, llama.cpp), or without them the cached
	// tokens every response's usage reported, show more reuse than the
	// configured shared prefix explains (CheckPrefixReuse): prompts met a
	// cache they were not meant to, so TTFT measured cached prefills.
	FlagUnintendedPrefixCache = "unintended-prefix-cache"
)

// Idle proof statuses.
const (
	IdleProven      = "idle"
	IdleNotIdle     = "not-idle"
	IdleNotRecorded = "not-recorded"
)

// Default validity thresholds.
const (
	DefaultMaxSendLag   = 10 * time.Millisecond
	DefaultMaxClientCPU = 0.9
	DefaultMaxErrorRate = 0.05
	// DefaultMaxSchedLatency is the default limit of the Go
	// scheduling-latency p99 of a step (client-read-lag).
	DefaultMaxSchedLatency = time.Millisecond
)

// MinSchedLatencyOverLimit is how many of a step's scheduling-latency
// samples must be over MaxSchedLatency for it to be flagged
// client-read-lag, besides more than 1 % of them (its p99 certainly over
// the limit). One burst on the host — a garbage-collection cycle, another
// process's time slice — delays the few goroutines runnable at that moment
// together; in a short step of a few hundred samples (the runtime samples
// one goroutine transition in eight) those few are already 1 %.
const MinSchedLatencyOverLimit = 5

// IdleProof records how the server was shown idle before a step.
type IdleProof struct {
	// Status is "idle" (running + waiting read 0), "not-idle" (they did
	// not reach 0 within the idle timeout) or "not-recorded" (the server
	// exposes no such metrics, or /metrics could not be read).
	Status string `json:"status"`
	// Running and Waiting are the last values read (the engine's running
	// and waiting gauges, e.g. vllm:num_requests_*).
	Running float64 `json:"running"`
	Waiting float64 `json:"waiting"`
	// Waited is how long the sweep waited for idleness, in seconds.
	Waited float64 `json:"waited_s"`
	// At is the UTC time of the last read.
	At time.Time `json:"at,omitzero"`
	// Reason explains a not-recorded or not-idle status.
	Reason string `json:"reason,omitempty"`
}

// MarshalJSON writes the proof; running and waiting are left out when the
// status is not-recorded (nothing was read, so there is no value, not 0).
func (p IdleProof) MarshalJSON() ([]byte, error) {
	type proof struct {
		Status  string    `json:"status"`
		Running *float64  `json:"running,omitempty"`
		Waiting *float64  `json:"waiting,omitempty"`
		Waited  float64   `json:"waited_s"`
		At      time.Time `json:"at,omitzero"`
		Reason  string    `json:"reason,omitempty"`
	}
	out := proof{Status: p.Status, Waited: p.Waited, At: p.At, Reason: p.Reason}
	if p.Status != IdleNotRecorded {
		out.Running, out.Waiting = &p.Running, &p.Waiting
	}
	return json.Marshal(out)
}

// ValidityOptions holds the validity thresholds. Zero fields take the
// defaults; a negative MaxClientCPU disables the CPU check (the prober
// shares its process with the embedded simulator).
type ValidityOptions struct {
	// MaxSendLag is the send-lag p99 above which the client counts as
	// saturated. Default 10ms.
	MaxSendLag time.Duration
	// MaxClientCPU is the process CPU use, in cores (CPU seconds per wall
	// second) over the step, above which the client counts as saturated.
	// Default 0.9.
	MaxClientCPU float64
	// MaxErrorRate is the failed/requests ratio above which the step is
	// flagged. Default 0.05.
	MaxErrorRate float64
	// MaxSchedLatency is the Go scheduling-latency p99 over the step above
	// which it is flagged client-read-lag. Default 1ms.
	MaxSchedLatency time.Duration
}

func (o ValidityOptions) withDefaults() ValidityOptions {
	if o.MaxSendLag <= 0 {
		o.MaxSendLag = DefaultMaxSendLag
	}
	if o.MaxClientCPU == 0 {
		o.MaxClientCPU = DefaultMaxClientCPU
	}
	if o.MaxErrorRate <= 0 {
		o.MaxErrorRate = DefaultMaxErrorRate
	}
	if o.MaxSchedLatency <= 0 {
		o.MaxSchedLatency = DefaultMaxSchedLatency
	}
	return o
}

// Validity is the validity verdict of one step.
type Validity struct {
	// Valid is true when Flags is empty.
	Valid bool `json:"valid"`
	// Flags lists the validity flags raised (FlagClientSaturated, ...).
	Flags []string `json:"flags"`
	// Reasons explains each flag, in the same order.
	Reasons []string `json:"reasons"`
	// SendLagP99MS is the client send-lag p99 in milliseconds and
	// SendsOverLimit the number of sends later than the limit.
	SendLagP99MS   float64 `json:"send_lag_p99_ms"`
	SendsOverLimit int     `json:"sends_over_send_lag_limit"`
	// ClientCPU is the process CPU use over the step in cores; negative
	// when not measured.
	ClientCPU float64 `json:"client_cpu_cores"`
	// ClientCPUChecked is false when the CPU use was not compared with the
	// threshold (not measurable, or the embedded simulator shares the
	// process).
	ClientCPUChecked bool `json:"client_cpu_checked"`
	// SchedLatencyP99MS is the p99 of Go's scheduling latency over the
	// step in milliseconds (how long the process's runnable goroutines,
	// those that read the streams among them, waited to run, interpolated
	// in the runtime's buckets), from SchedLatencySamples samples of the
	// runtime; SchedLatencyOverLimit counts the samples certainly over the
	// limit (in runtime buckets whose lower bound is at or above it), the
	// figure the step is judged by. All 0 when not measured (results
	// written before the check). SchedLatencyChecked is true when the step
	// was judged (any samples at all).
	SchedLatencyP99MS     float64 `json:"sched_latency_p99_ms"`
	SchedLatencySamples   uint64  `json:"sched_latency_samples"`
	SchedLatencyOverLimit uint64  `json:"sched_latency_over_limit"`
	SchedLatencyChecked   bool    `json:"sched_latency_checked"`
	// ErrorRate is failed / requests.
	ErrorRate float64 `json:"error_rate"`
	// Idle is the idle proof taken before the step.
	Idle IdleProof `json:"idle"`
}

// MinSendsOverLimit is how many sends must exceed MaxSendLag for a step of
// fewer than 100 requests to count as client-saturated: the p99 of fewer
// than 100 samples is (nearly) the maximum, so one late send (a scheduler
// hiccup, a GC pause) would otherwise invalidate the step.
const MinSendsOverLimit = 2

// Judge decides a step's validity from its stats, the CPU it used (cores;
// negative when unknown), its idle proof and whether it was interrupted.
// The send-lag rule: with 100 requests or more, the send-lag p99 must not
// exceed MaxSendLag; with fewer, at most one send may exceed it
// (MinSendsOverLimit). Stats built by hand without per-request send lags
// fall back to the p99 rule.
func Judge(s Stats, cpuCores float64, idle IdleProof, interrupted bool, o ValidityOptions) Validity {
	o = o.withDefaults()
	v := Validity{
		SendLagP99MS: s.SendLag.P99,
		ClientCPU:    cpuCores,
		ErrorRate:    s.ErrorRate,
		Idle:         idle,
		Flags:        []string{},
		Reasons:      []string{},
	}
	flag := func(f, reason string) {
		v.Flags = append(v.Flags, f)
		v.Reasons = append(v.Reasons, reason)
	}
	var sat []string
	lagMS := ms(o.MaxSendLag)
	for _, l := range s.sendLagsMS {
		if l > lagMS {
			v.SendsOverLimit++
		}
	}
	small := s.SendLag.N < 100 && len(s.sendLagsMS) == s.SendLag.N
	switch {
	case s.SendLag.N == 0:
	case small && v.SendsOverLimit >= MinSendsOverLimit:
		sat = append(sat, fmt.Sprintf("%d of %d sends later than %.3g ms (send-lag max %.3g ms)", v.SendsOverLimit, s.SendLag.N, lagMS, s.SendLag.Max))
	case !small && s.SendLag.P99 > lagMS:
		sat = append(sat, fmt.Sprintf("send-lag p99 %.3g ms > %.3g ms", s.SendLag.P99, lagMS))
	}
	if o.MaxClientCPU > 0 && cpuCores >= 0 {
		v.ClientCPUChecked = true
		if cpuCores > o.MaxClientCPU {
			sat = append(sat, fmt.Sprintf("client CPU %.2f cores > %.2f", cpuCores, o.MaxClientCPU))
		}
	}
	if len(sat) > 0 {
		flag(FlagClientSaturated, joinReasons(sat))
	}
	sl := s.schedLat
	v.SchedLatencyP99MS, v.SchedLatencySamples, v.SchedLatencyOverLimit = sl.p99MS, sl.samples, sl.overLimit
	if sl.samples > 0 {
		v.SchedLatencyChecked = true
		if sl.overLimit*100 > sl.samples && sl.overLimit >= MinSchedLatencyOverLimit {
			flag(FlagClientReadLag, fmt.Sprintf("Go scheduling-latency p99 %.3g ms > %.3g ms (%d of %d samples over it): "+
				"the client's goroutines waited to run, so its read timestamps are late",
				sl.p99MS, ms(o.MaxSchedLatency), sl.overLimit, sl.samples))
		}
	}
	if idle.Status == IdleNotIdle {
		r := fmt.Sprintf("server not idle before the step: running %g, waiting %g after %.1fs", idle.Running, idle.Waiting, idle.Waited)
		flag(FlagNotIdle, r)
	}
	if s.Requests > 0 && s.ErrorRate > o.MaxErrorRate {
		flag(FlagErrors, fmt.Sprintf("error rate %.1f%% > %.1f%% (%d of %d failed)", 100*s.ErrorRate, 100*o.MaxErrorRate, s.Failed, s.Requests))
	}
	if interrupted {
		flag(FlagInterrupted, "the step was interrupted before it finished")
	}
	v.Valid = len(v.Flags) == 0
	return v
}

func joinReasons(rs []string) string {
	out := ""
	for i, r := range rs {
		if i > 0 {
			out += "; "
		}
		out += r
	}
	return out
}

// PrefixReuse is what CheckPrefixReuse compares: a step's server-side
// prefix-cache deltas and what the workload's prompts allow to be reused.
type PrefixReuse struct {
	// Requests is the number of measured requests of the step.
	Requests int
	// Queries and Hits are the server's prefix-cache token deltas over the
	// measured part (ServerStats.PrefixCacheQueries, PrefixCacheHits);
	// Preemptions its preemption delta (a preempted request is looked up
	// again and may hit its own blocks).
	Queries, Hits, Preemptions Figure
	// PrefixTokens is the shared prefix's length in tokens, OverheadTokens
	// what the tokenizer adds to any text (BOS, chat template: all of it is
	// allowed, though only its leading part can be shared).
	PrefixTokens, OverheadTokens int
	// MaxPromptTokens is the step's longest prompt (the allowance per
	// preemption).
	MaxPromptTokens int
	// BlockSize is the server's cache block (vLLM block_size, SGLang
	// page_size); 0 when unknown: no rounding.
	BlockSize int
	// Prompts is the number of distinct prompts the run has sent by the end
	// of the step (the nonces' overlap grows with it), NonceAlphabet the
	// number of nonce digit words (workload.Info).
	Prompts       int64
	NonceAlphabet int
	// NonceTested is workload.Info.NonceTested: false means the nonce words
	// may be several tokens each, so the check is not applied.
	NonceTested bool
	// ShortNonceItems counts the step's requests (warmups included) whose
	// input was too short for a full nonce: their prompts could repeat, so
	// the check is not applied.
	ShortNonceItems int64
	// ContextTokens is the context that a multi-turn step's later turns
	// resent (MultiTurnStats.ContextTokensResent): reuse by design,
	// allowed on top of the shared prefix.
	ContextTokens int64
	// FromUsage is true when Queries and Hits are the requests' usage
	// (prompt_tokens and prompt_tokens_details.cached_tokens summed)
	// because the server exposes no cache counters.
	FromUsage bool
}

// PrefixReuseMargin is the unexplained prefix-cache reuse tolerated before a
// step is flagged FlagUnintendedPrefixCache: 5 % of the step's prefix-cache
// queries, and at least one cache block (16 tokens when the block size is
// unknown).
const PrefixReuseMargin = 0.05

// ExpectedReusePerRequest is the most prompt tokens one request of r's
// workload may find in the server's prefix cache: the shared prefix, the
// tokenizer's overhead and the nonce words it may share with an earlier
// prompt — 1 + log_B(prompts) words (one past B prompts, two past B², with
// one word of margin for coincidences below that), one token each —
// rounded down to the cache block, as a block-hashing cache (vLLM) only
// hits whole blocks.
func (r PrefixReuse) ExpectedReusePerRequest() int {
	words := 1
	if b := int64(max(r.NonceAlphabet, 2)); r.Prompts > 0 {
		for c := b; c < r.Prompts && words < 8; c *= b {
			words++
		}
	}
	e := r.PrefixTokens + r.OverheadTokens + words
	if r.BlockSize > 1 {
		e -= e % r.BlockSize
	}
	return e
}

// CheckPrefixReuse decides whether a step's prompts met the server's prefix
// cache more than its shared prefix explains. The unexplained reuse is
// hits − requests × ExpectedReusePerRequest − preemptions ×
// MaxPromptTokens; it is too much when it exceeds PrefixReuseMargin of the
// queries and one block. Then flag is true, with reason saying so — unless
// repeats were possible (short nonces) or the nonce words could not be
// tested: then flag is false and note says so instead. All are zero when
// the reuse is explained, or there is nothing to judge (no counters, no
// requests, no queries).
func CheckPrefixReuse(r PrefixReuse) (flag bool, reason, note string) {
	if !r.Hits.Known || !r.Queries.Known || r.Requests <= 0 || r.Queries.Value <= 0 {
		return false, "", ""
	}
	per := r.ExpectedReusePerRequest()
	allowed := float64(r.Requests) * float64(per)
	if r.Preemptions.Known {
		allowed += r.Preemptions.Value * float64(r.MaxPromptTokens)
	}
	allowed += float64(r.ContextTokens)
	block := r.BlockSize
	if block <= 0 {
		block = 16
	}
	margin := max(PrefixReuseMargin*r.Queries.Value, float64(block))
	if r.Hits.Value-allowed <= margin {
		return false, "", ""
	}
	what := "the server's prefix cache hit"
	if r.FromUsage {
		what = "the server's responses reported cached (usage.prompt_tokens_details.cached_tokens)"
	}
	hit := fmt.Sprintf("%s %.0f of %.0f prompt tokens (%.1f per request), more than the shared "+
		"prefix explains (at most %d per request: prefix %d + overhead %d tokens + nonce words, %s)",
		what, r.Hits.Value, r.Queries.Value, r.Hits.Value/float64(r.Requests), per, r.PrefixTokens, r.OverheadTokens, blockText(r.BlockSize))
	switch {
	case r.ShortNonceItems > 0:
		return false, "", hit + fmt.Sprintf("; %d requests had an input too short for a full nonce, so their prompts could "+
			"repeat: not flagged unintended-prefix-cache, but TTFT may have measured cached prefills", r.ShortNonceItems)
	case !r.NonceTested:
		return false, "", hit + "; the nonce words could not be tested with the server's tokenizer (they may be several " +
			"tokens each): not flagged unintended-prefix-cache, but TTFT may have measured cached prefills"
	}
	return true, hit + ": prompts met a cache they were not meant to (an earlier run with the same --prompt-nonce, " +
		"another client, or repeated prompts), so TTFT measured cached prefills", ""
}

// blockText says how the expected reuse was rounded to the cache block.
func blockText(block int) string {
	switch {
	case block > 1:
		return fmt.Sprintf("rounded down to the %d-token cache block", block)
	case block == 1:
		return "a cache of single-token pages"
	}
	return "not rounded: the cache block size is unknown"
}
