package artifacts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmprobe/llmprobe/prober"
)

// TestSink pins the line formats of records.jsonl and errors-redacted.jsonl
// and the file each snapshot phase goes to.
func TestSink(t *testing.T) {
	r := newRun(t)
	s, err := r.OpenSink()
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	ok := &prober.Record{Target: "http://x", Probe: "rate=4", RequestID: "llmprobe-a-0-0", Scheduled: at, Sent: at,
		E2E: 3, CompletionTokens: 2, WallStart: at}
	bad := &prober.Record{Target: "http://x", Probe: "rate=4", RequestID: "llmprobe-a-0-1", Scheduled: at, Sent: at,
		HTTPStatus: 500, Error: prober.ClassHTTP5xx, ErrorMessage: "boom", WallStart: at.In(time.FixedZone("X", 3600))}
	if err := s.WriteRecord(RecordLine{Step: 0, Round: 1, Record: ok, Prompt: "hello"}, "rate=4"); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteRecord(RecordLine{Step: 0, Round: 1, Record: bad}, "rate=4"); err != nil {
		t.Fatal(err)
	}
	for _, phase := range []string{"before-warmup", "before", "during", "after"} {
		if err := s.WriteSnapshot(Snapshot{Step: 0, Label: "rate=4", Phase: phase, Time: at}, []byte("m 1\n")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.WriteScrape([]byte("# scrape 2026-05-06T07:08:09Z 1778051289000\nm 2\n")); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteSnapshot(Snapshot{Phase: "later"}, nil); err == nil {
		t.Error("a snapshot of an unknown phase was accepted")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(r.Dir(), name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	recs := strings.Split(strings.TrimSpace(read(RecordsFile)), "\n")
	wantOK := `{"step":0,"round":1,"target":"http://x","probe":"rate=4","request_id":"llmprobe-a-0-0","scheduled":"2026-05-06T07:08:09Z",` +
		`"sent":"2026-05-06T07:08:09Z","send_lag_ns":0,"ttft_ns":0,"ttft_text_ns":0,"e2e_ns":3,"input_tokens":0,` +
		`"output_tokens_requested":0,"prompt_tokens":0,"completion_tokens":2,"events":0,"http_status":0,` +
		`"wall_start":"2026-05-06T07:08:09Z","prompt":"hello"}`
	if len(recs) != 2 || recs[0] != wantOK || !strings.Contains(recs[1], `"error":"http_5xx","error_message":"boom"`) ||
		strings.Contains(recs[1], `"prompt"`) {
		t.Errorf("records.jsonl:\n%s\nwant first line\n%s", strings.Join(recs, "\n"), wantOK)
	}
	wantErr := `{"step":0,"label":"rate=4","request_id":"llmprobe-a-0-1","time":"2026-05-06T07:08:09Z","error":"http_5xx","http_status":500,"message":"boom"}` + "\n"
	if got := read(ErrorsFile); got != wantErr {
		t.Errorf("errors-redacted.jsonl = %q, want %q", got, wantErr)
	}
	for name, phases := range map[string][]string{MetricsBeforeFile: {"before-warmup", "before"}, MetricsDuringFile: {"during"}, MetricsAfterFile: {"after"}} {
		secs, err := ParseSnapshots([]byte(read(name)))
		if err != nil || len(secs) != len(phases) {
			t.Fatalf("%s: %d sections, %v", name, len(secs), err)
		}
		for i, p := range phases {
			if secs[i].Phase != p {
				t.Errorf("%s section %d: phase %s, want %s", name, i, secs[i].Phase, p)
			}
		}
	}
	if d := read(MetricsDuringFile); !strings.HasSuffix(d, "m 1\n# scrape 2026-05-06T07:08:09Z 1778051289000\nm 2\n") {
		t.Errorf("metrics-during.txt = %q", d)
	}
}
