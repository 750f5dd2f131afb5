package workload

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

// TestSynthBounds is issue 22 D7: `workload synth` accepted rate_per_s
// 1e-300 and gap_cv2 of -1 or 1e300, and had no output cap. Each is now
// refused before anything is written, the error naming the key.
func TestSynthBounds(t *testing.T) {
	in := LengthDist{N: 10, Min: 1, P10: 2, P50: 3, P90: 4, P99: 5, Max: 6}
	timed := func(rate, cv2 float64) Stats {
		return Stats{Count: 10, InputTokens: in, Timed: true, RatePerS: rate, GapCV2: cv2}
	}
	big := LengthDist{N: 1, Min: MaxLength, P10: MaxLength, P50: MaxLength, P90: MaxLength, P99: MaxLength, Max: MaxLength}
	for _, tc := range []struct {
		name  string
		st    Stats
		count int
		want  string
	}{
		{"rate 1e-300", timed(1e-300, 1), 0, "rate_per_s: must be between 0.001 and 1e+06"},
		{"rate -1", timed(-1, 1), 0, "rate_per_s: must be between"},
		{"rate NaN", timed(math.NaN(), 1), 0, "rate_per_s: must be between"},
		{"rate 1e300", timed(1e300, 1), 0, "rate_per_s: must be between"},
		{"span past the offset cap", timed(MinSynthRate, 1), MaxSynthCount, "rate_per_s: 200000 entries at 0.001 per second span"},
		{"gap_cv2 -1", timed(10, -1), 0, "gap_cv2: must be between 0 and 100, got -1"},
		{"gap_cv2 1e300", timed(10, 1e300), 0, "gap_cv2: must be between 0 and 100, got 1e+300"},
		{"gap_cv2 NaN", timed(10, math.NaN()), 0, "gap_cv2: must be between"},
		{"output over the cap", Stats{Count: 1, InputTokens: big}, 1000, "count / input_tokens: 1000 entries of about 4194368 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			n, err := Synthesize(&b, tc.st, SynthOptions{Count: tc.count})
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) || n != 0 || b.Len() != 0 {
				t.Errorf("Synthesize = %d, %v (%d bytes written), want an error starting %q", n, err, b.Len(), tc.want)
			}
		})
	}
	// The bounds themselves are accepted.
	for _, st := range []Stats{timed(MinSynthRate, 0), timed(MaxSynthRate, MaxSynthGapCV2)} {
		if n, err := Synthesize(&bytes.Buffer{}, st, SynthOptions{Count: 2}); err != nil || n != 2 {
			t.Errorf("%+v: %d, %v", st, n, err)
		}
	}
}

// TestSynthOutputCap: the writer Synthesize writes through fails a write
// past its limit without passing any of it on.
func TestSynthOutputCap(t *testing.T) {
	var b bytes.Buffer
	c := &cappedWriter{w: &b, limit: 10}
	if n, err := c.Write([]byte("0123456789")); n != 10 || err != nil {
		t.Fatalf("write up to the limit: %d, %v", n, err)
	}
	if n, err := c.Write([]byte("x")); n != 0 || err == nil || !strings.Contains(err.Error(), "output: more than 10 bytes") {
		t.Errorf("write past the limit: %d, %v", n, err)
	}
	if b.String() != "0123456789" {
		t.Errorf("passed on %q", b.String())
	}
}
