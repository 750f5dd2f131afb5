package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/llmprobe/llmprobe/internal/simulator"
	"github.com/llmprobe/llmprobe/prober/stats"
	"github.com/llmprobe/llmprobe/prober/sweep"
)

// record is the part of a records.jsonl line the benchmark reads.
type record struct {
	RequestID string          `json:"request_id"`
	Scheduled time.Time       `json:"scheduled"`
	Sent      time.Time       `json:"sent"`
	WallStart time.Time       `json:"wall_start"`
	TTFT      time.Duration   `json:"ttft_ns"`
	ITL       []time.Duration `json:"itl_ns"`
	Events    int             `json:"events"`
	Error     string          `json:"error"`
}

// run is one finished sweep child: its result and records.
type run struct {
	dir     string
	result  *sweep.Result
	step    *sweep.Step
	records []record
}

// readRun reads the single run directory under out.
func readRun(out string) (*run, error) {
	dirs, err := filepath.Glob(filepath.Join(out, "*", "result.json"))
	if err != nil || len(dirs) != 1 {
		return nil, fmt.Errorf("want one run directory with result.json under %s, found %d", out, len(dirs))
	}
	dir := filepath.Dir(dirs[0])
	f, err := os.Open(dirs[0])
	if err != nil {
		return nil, err
	}
	res, err := sweep.DecodeResult(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dirs[0], err)
	}
	if len(res.Steps) != 1 {
		return nil, fmt.Errorf("%s: %d steps, want 1", dir, len(res.Steps))
	}
	r := &run{dir: dir, result: res, step: res.Steps[0]}
	rf, err := os.Open(filepath.Join(dir, "records.jsonl"))
	if err != nil {
		return nil, err
	}
	defer rf.Close()
	dec := json.NewDecoder(bufio.NewReaderSize(rf, 1<<20))
	for {
		var rec record
		if err := dec.Decode(&rec); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("%s/records.jsonl: %w", dir, err)
		}
		r.records = append(r.records, rec)
	}
	return r, nil
}

// traceReader reads the simulator's trace file as it grows.
type traceReader struct {
	path string
	off  int64
	recs map[string]simulator.TraceRecord
}

func newTraceReader(path string) *traceReader {
	return &traceReader{path: path, recs: map[string]simulator.TraceRecord{}}
}

// update reads the lines appended since the last call (whole lines only).
func (t *traceReader) update() error {
	f, err := os.Open(t.path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(t.off, io.SeekStart); err != nil {
		return err
	}
	br := bufio.NewReaderSize(f, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			return nil // an incomplete last line is read next time
		}
		t.off += int64(len(line))
		var tr simulator.TraceRecord
		if err := json.Unmarshal(line, &tr); err != nil {
			return fmt.Errorf("trace %s: %w", t.path, err)
		}
		t.recs[tr.RequestID] = tr
	}
}

// match waits (briefly) until every record's trace line is there: the
// simulator writes a request's line after its [DONE], so the last lines
// may trail the client by a moment.
func (t *traceReader) match(recs []record) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		if err := t.update(); err != nil {
			return err
		}
		missing := 0
		for i := range recs {
			if _, ok := t.recs[recs[i].RequestID]; !ok {
				missing++
			}
		}
		if missing == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d requests have no trace line", missing, len(recs))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Delay summarises read delays (llmprobe's timestamp of an event minus the
// server's write time of it) in milliseconds.
type Delay struct {
	// Events is the number of events compared; Requests the requests
	// they came from; Skipped the successful requests whose event count
	// differed from the trace's (not compared).
	Events   int `json:"events"`
	Requests int `json:"requests"`
	Skipped  int `json:"skipped,omitempty"`
	// P50, P99, Max and Min are over every event; FirstP99 over first
	// token events only.
	P50      float64 `json:"p50_ms"`
	P99      float64 `json:"p99_ms"`
	Max      float64 `json:"max_ms"`
	Min      float64 `json:"min_ms"`
	FirstP99 float64 `json:"first_token_p99_ms"`
}

// readDelays compares every successful record's event times with the
// trace: llmprobe's time of event k is wall_start + ttft + itl[0..k-1].
func (t *traceReader) readDelays(recs []record) Delay {
	var all, first []float64
	var d Delay
	for i := range recs {
		r := &recs[i]
		if r.Error != "" {
			continue
		}
		tr, ok := t.recs[r.RequestID]
		if !ok || len(tr.EventsNS) != r.Events || len(r.ITL) != max(r.Events-1, 0) || r.Events == 0 {
			d.Skipped++
			continue
		}
		d.Requests++
		at := r.WallStart.UnixNano() + int64(r.TTFT)
		for k, w := range tr.EventsNS {
			if k > 0 {
				at += int64(r.ITL[k-1])
			}
			ms := float64(at-w) / 1e6
			all = append(all, ms)
			if k == 0 {
				first = append(first, ms)
			}
		}
	}
	d.Events = len(all)
	if len(all) == 0 {
		return d
	}
	slices.Sort(all)
	slices.Sort(first)
	d.P50 = stats.PercentileSorted(all, 50)
	d.P99 = stats.PercentileSorted(all, 99)
	d.Max = all[len(all)-1]
	d.Min = all[0]
	d.FirstP99 = stats.PercentileSorted(first, 99)
	return d
}
