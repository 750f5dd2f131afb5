package compare

import (
	"github.com/llmprobe/llmprobe/prober/stats"
)

// Where each side's TTFT went (issue 36 Deliver 2): a request whose
// response carried the server's own timing (vLLM's per-request metrics
// object, prober.Record.HasServerQueue and HasServerTTFT) splits its client
// TTFT into the server's queue time, the server's TTFT (scheduled to the
// first token: the prefill) and the client-side remainder (network,
// gateways, the HTTP frontend, the first event's flush:
// prober.Record.TTFTOverhead). Both sides' splits are reported per level so
// that a TTFT regression can be attributed to the queue, the engine or the
// client and network; they are reported, never judged.

// ServerTiming is both sides' TTFT split at one level
// (Verdict.ServerTiming).
type ServerTiming struct {
	Level     string           `json:"level"`
	Baseline  ServerTimingSide `json:"baseline"`
	Candidate ServerTimingSide `json:"candidate"`
}

// ServerTimingSide is one side's TTFT split at a level, pooled over its
// rounds: N successful requests carried the server's timing, and each part
// is summarised by its median and p99 in ms (stats.Percentile, vLLM's
// rule) over those N requests. ClientTTFT is the same requests' client
// TTFT; per request ClientTTFT = Queue + ServerTTFT + Overhead exactly,
// the quantiles of the parts need not add up. Without any such request
// NotRecorded says why (the engine returns no per-request timing, the
// setting was off, or the input holds no per-request samples) and the
// parts are absent.
type ServerTimingSide struct {
	NotRecorded string     `json:"not_recorded,omitempty"`
	N           int        `json:"n"`
	ClientTTFT  *SplitPart `json:"client_ttft_ms,omitempty"`
	Queue       *SplitPart `json:"server_queue_ms,omitempty"`
	ServerTTFT  *SplitPart `json:"server_ttft_ms,omitempty"`
	Overhead    *SplitPart `json:"ttft_overhead_ms,omitempty"`
	// NegativeOverhead counts the requests whose server figures exceeded
	// the client's TTFT (kept as they are in the quantiles).
	NegativeOverhead int `json:"negative_overhead_requests,omitempty"`
}

// SplitPart is one part of the TTFT split: its median and p99 in ms.
type SplitPart struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
}

// splitPart summarises xs (not empty).
func splitPart(xs []float64) *SplitPart {
	return &SplitPart{P50: stats.Percentile(xs, 50), P99: stats.Percentile(xs, 99)}
}

// noServerTimingSamples is ServerTimingSide.NotRecorded for an input
// without per-request samples.
const noServerTimingSamples = "the input holds no per-request samples (records.jsonl) to split the TTFT by"

// serverTimingSide is the TTFT split of one side's steps of a level.
func serverTimingSide(steps []*Step) ServerTimingSide {
	var ttft, queue, srv, over []float64
	s := ServerTimingSide{}
	samples := false
	for _, st := range steps {
		samples = samples || st.Requests != nil
		for _, r := range st.Requests {
			if !r.OK || !r.ServerTiming {
				continue
			}
			ttft, queue, srv = append(ttft, r.TTFT), append(queue, r.ServerQueue), append(srv, r.ServerTTFT)
			o := r.TTFT - r.ServerQueue - r.ServerTTFT
			over = append(over, o)
			if o < 0 {
				s.NegativeOverhead++
			}
		}
	}
	if len(ttft) == 0 {
		switch {
		case !samples:
			s.NotRecorded = noServerTimingSamples
		default:
			s.NotRecorded = "no successful request carried the server's per-request timing"
			for _, st := range steps {
				if st.ServerTimingNote != "" {
					s.NotRecorded = st.ServerTimingNote
					break
				}
			}
		}
		return s
	}
	s.N = len(ttft)
	s.ClientTTFT, s.Queue, s.ServerTTFT, s.Overhead = splitPart(ttft), splitPart(queue), splitPart(srv), splitPart(over)
	return s
}

// compareServerTiming is both sides' TTFT split at level l.
func compareServerTiming(l level) ServerTiming {
	return ServerTiming{Level: l.label, Baseline: serverTimingSide(l.b), Candidate: serverTimingSide(l.c)}
}
