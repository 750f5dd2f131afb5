package compare

import (
	"strings"
	"testing"
)

func TestRoundOrder(t *testing.T) {
	if got := strings.Join(RoundOrder(OrderABBA, 8, 0), " "); got != "baseline candidate candidate baseline baseline candidate candidate baseline" {
		t.Errorf("abba: %s", got)
	}
	r := RoundOrder(OrderRandom, 20, 7)
	nb := 0
	for i := 0; i < len(r); i += 2 {
		if r[i] == r[i+1] {
			t.Fatalf("pair %d runs one side twice: %v", i/2, r)
		}
		if r[i] == SideBaseline {
			nb++
		}
	}
	if nb == 0 || nb == 10 {
		t.Errorf("random order never swaps a pair: %v", r)
	}
	if strings.Join(r, " ") != strings.Join(RoundOrder(OrderRandom, 20, 7), " ") {
		t.Error("random order is not reproducible from its seed")
	}
}
