package simulator

// The engine's capacity as a formula (docs/simulator.md derives it).

import "math"

// Capacity returns the steady-state request rate (requests per second) the
// engine serves when every request has inputLen prompt tokens (no prefix
// cache hits), ignores EOS and generates outputLen tokens, and the queue
// never runs dry. docs/simulator.md derives it:
//
//	occupancy  = (1/O) * sum_{k=0}^{O-1} ceil((I+k)/block-size)   blocks a running sequence holds on average
//	B_kv       = num-gpu-blocks / occupancy   (floor'ed when a sequence never outgrows its prompt blocks)
//	B          = min(max-num-seqs, B_kv)
//	decode-bound:  X = B / (O*(base + per_seq*B) + per_prefill_token*B*I)
//	budget-bound (when B*(I+O-1)/O > max-num-batched-tokens = T):
//	  P = T*I/(I+O-1), D = T-P, N = min(B, D + 1 + P/I)
//	  X = T / ((I+O-1) * (base + per_prefill_token*P + per_seq*N))
//
// and the result is the smaller of the two. When the batch is KV-bound and
// sequences outgrow the blocks they were admitted with, preemptions
// (recompute) make the true rate up to about 8% lower. It returns 0 when a
// request of that size cannot be served (inputLen+outputLen >
// max-model-len, lengths < 1, a full-length sequence does not fit the KV
// cache).
func (c Config) Capacity(inputLen, outputLen int) float64 {
	if inputLen < 1 || outputLen < 1 || inputLen > c.MaxModelLen-outputLen || c.BlockSize < 1 || c.MaxNumSeqs < 1 {
		return 0
	}
	if c.NumGPUBlocks < ceilDiv(inputLen+outputLen-1, c.BlockSize) {
		return 0
	}
	b := math.Min(float64(c.MaxNumSeqs), c.kvBatch(inputLen, outputLen))
	in, out := float64(inputLen), float64(outputLen)
	base := c.StepBase.Seconds()
	perTok := c.StepPerPrefillToken.Seconds()
	perSeq := c.StepPerSeq.Seconds()

	decodeBound := b / (out*(base+perSeq*b) + perTok*b*in)
	budget := float64(c.MaxNumBatchedTokens)
	work := in + out - 1 // tokens computed per request: the prompt + every output but the last
	if b*work/out <= budget {
		return decodeBound
	}
	prefill := budget * in / work
	seqs := math.Min(b, budget-prefill+1+prefill/in)
	budgetBound := budget / (work * (base + perTok*prefill + perSeq*seqs))
	return math.Min(decodeBound, budgetBound)
}

// kvBatch is how many sequences of inputLen prompt and outputLen output
// tokens the KV cache holds in steady state. A sequence holds
// ceil(computed/block-size) blocks and computes inputLen+k tokens in the
// k-th step of its life (k = 0..outputLen-1), so with ages spread evenly the
// pool holds num-gpu-blocks / (mean blocks over a lifetime) sequences. When
// a sequence never needs more blocks than its prompt's, the pool is
// partitioned exactly and the batch is an integer.
func (c Config) kvBatch(inputLen, outputLen int) float64 {
	first := ceilDiv(inputLen, c.BlockSize)
	last := ceilDiv(inputLen+outputLen-1, c.BlockSize)
	if first == last {
		return float64(c.NumGPUBlocks / last)
	}
	sum := 0
	for k := range outputLen {
		sum += ceilDiv(inputLen+k, c.BlockSize)
	}
	return float64(c.NumGPUBlocks) * float64(outputLen) / float64(sum)
}

// ceilDiv is ceil(a/b) for a >= 0, b > 0, without overflow.
func ceilDiv(a, b int) int {
	if a <= 0 {
		return 0
	}
	return (a-1)/b + 1
}
