package schedule

import (
	"context"
	"math"
	"testing"
	"time"
)

func TestOffsetsReplaysAbsoluteTimes(t *testing.T) {
	offs := []time.Duration{0, 0, 20 * time.Millisecond, 30 * time.Millisecond, 30 * time.Millisecond, 60 * time.Millisecond}
	var rec recorder
	s, err := New(Config{Process: NewOffsets(offs), Count: int64(len(offs))}, rec.add)
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := rec.sorted()
	if st.Fired != int64(len(offs)) || len(got) != len(offs) {
		t.Fatalf("fired %d of %d", st.Fired, len(offs))
	}
	for i, f := range got {
		if want := st.Start.Add(offs[i]); !f.scheduled.Equal(want) {
			t.Errorf("arrival %d scheduled at %v, want start + %v", i, f.scheduled.Sub(st.Start), offs[i])
		}
		if f.actual.Before(f.scheduled) {
			t.Errorf("arrival %d fired %v early", i, f.scheduled.Sub(f.actual))
		}
	}
	p := NewOffsets(offs[:1])
	if p.Len() != 1 || p.Next() != 0 || p.Next() != time.Duration(math.MaxInt64) {
		t.Error("Next past the last offset is not the largest duration")
	}
}
