package simulator

import "math"

// Deterministic draws: every random choice is a pure function of the seed and
// of a few integers (request number, prompt hash, position), so a run is
// reproducible under --seed apart from the wall clock and the order in which
// concurrent requests arrive.

// mix is the splitmix64 finalizer.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// hash2 combines two words.
func hash2(a, b uint64) uint64 { return mix(a ^ mix(b)) }

// uniform maps a hash to [0, 1).
func uniform(h uint64) float64 { return float64(h>>11) / (1 << 53) }

// hashTokens is a chain hash of token ids, starting from prev.
func hashTokens(prev uint64, ids []int) uint64 {
	h := prev
	for _, id := range ids {
		h = hash2(h, uint64(id))
	}
	return h
}

// geometric draws a number >= 1 of Bernoulli(p) trials up to the first
// success from a uniform u in [0, 1); it returns math.MaxInt when p is 0.
func geometric(p, u float64) int {
	if p <= 0 {
		return math.MaxInt
	}
	if p >= 1 {
		return 1
	}
	n := math.Floor(math.Log1p(-u)/math.Log1p(-p)) + 1
	if n >= math.MaxInt32 {
		return math.MaxInt32
	}
	return int(n)
}
