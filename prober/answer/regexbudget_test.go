package answer

import (
	"strings"
	"testing"
	"time"
)

// TestRegexBudget: a regex check matches at most the first
// MaxRegexReplyBytes of a reply, less for a large pattern, and says so
// when a cut reply fails; an ordinary pattern still sees a whole answer.
func TestRegexBudget(t *testing.T) {
	small := mustItem(t, `{"id":"a","prompt":"p","regex":"^(?i)yes\\b"}`)
	if small.reBytes != MaxRegexReplyBytes {
		t.Errorf("^(?i)yes\\b: budget %d bytes, want %d", small.reBytes, MaxRegexReplyBytes)
	}
	if v := Judge(small, Reply{Text: "Yes" + strings.Repeat(" indeed", 1<<20)}); !v.Pass {
		t.Errorf("a 7 MiB reply starting with Yes: %s", v.Reason)
	}
	end := mustItem(t, `{"id":"a","prompt":"p","regex":"z$"}`)
	v := Judge(end, Reply{Text: strings.Repeat("a", 1<<20) + "z"})
	if v.Pass || !strings.Contains(v.Reason, "(matched on its first 65536 of 1048577 bytes)") {
		t.Errorf("a match past the budget: %+v, want a failure naming the cut", v)
	}
	big := mustItem(t, `{"id":"a","prompt":"p","regex":"\\w{999}\\d"}`)
	if big.reBytes >= 8<<10 || big.reBytes < 1<<10 {
		t.Errorf(`\w{999}\d: budget %d bytes, want a few KiB`, big.reBytes)
	}
	if got := cutUTF8("aé", 2); got != "a" {
		t.Errorf("cutUTF8 cut inside é: %q", got)
	}
}

// BenchmarkRegexCheck: the case, a large pattern against a 4 MiB
// reply, judged with the budget; "unbounded" is the match without it (as
// Judge did before) on a 64 KiB reply, a sixty-fourth of the size: about
// 3 s a match on a busy 2-core machine, so about 200 s for 4 MiB.
func BenchmarkRegexCheck(b *testing.B) {
	it, err := Parse("b", strings.NewReader(`{"id":"a","prompt":"p","regex":"\\w{999}\\d"}`))
	if err != nil {
		b.Fatal(err)
	}
	item := it.Items[0]
	reply := Reply{Text: strings.Repeat("a", 4<<20)}
	b.Run("budget-4MiB", func(b *testing.B) {
		for b.Loop() {
			if Judge(item, reply).Pass {
				b.Fatal("passed")
			}
		}
	})
	b.Run("unbounded-64KiB", func(b *testing.B) {
		text := reply.Text[:64<<10]
		start := time.Now()
		for b.Loop() {
			if item.re.MatchString(text) {
				b.Fatal("matched")
			}
		}
		b.ReportMetric(time.Since(start).Seconds()/float64(b.N)*64, "s-extrapolated-to-4MiB")
	})
}
