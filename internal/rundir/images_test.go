package rundir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/artifacts"
	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober/config"
)

// TestRunImages sweeps chat with the images feature read from a workload
// file (sweep --workload) against the simulator: records.jsonl counts
// each request's images and bytes, the server's prompt tokens hold the
// images' tokens (448x448: ceil(448/28)² = 256 each), and result.json and
// analysis.md carry the step's images and the server's multimodal cache,
// whose pool of 2 images is hit by all but the first two lookups.
func TestRunImages(t *testing.T) {
	url, _ := simtest.Start(t, simtest.Fast())
	wl := filepath.Join(t.TempDir(), "wl.yml")
	if err := os.WriteFile(wl, []byte("input_tokens: {dist: fixed, value: 32}\noutput_tokens: {dist: fixed, value: 4}\n"+
		"request:\n  features:\n    - {kind: images, share: 1, count: 1, width: 448, height: 448, format: jpeg, distinct: 2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec, err := config.LoadWorkloadFile(wl)
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, url)
	cfg.API = "chat"
	cfg.Workload, cfg.WorkloadSource = spec, wl
	cfg.Rates, cfg.RatesText, cfg.Warmups = []float64{40}, "40", 0
	res := mustRun(t, cfg, testOptions(t))
	verifyClean(t, res.Dir)
	n := 0
	err = artifacts.ReadRecords(filepath.Join(res.Dir, "records.jsonl"), func(l artifacts.RecordLine, raw []byte) error {
		n++
		r := l.Record
		if !r.OK() || r.Images != 1 || r.ImageBytes <= 0 || r.PromptTokens != r.InputTokens+256 {
			t.Errorf("%s: ok %v, images %d, bytes %d, prompt tokens %d (text %d)", r.RequestID, r.OK(), r.Images, r.ImageBytes, r.PromptTokens, r.InputTokens)
		}
		if !strings.Contains(string(raw), `"images":1,"image_bytes":`) {
			t.Errorf("records.jsonl line %s", raw)
		}
		return nil
	})
	if err != nil || n != 20 {
		t.Fatalf("records: %d, %v", n, err)
	}
	st := res.Result.Steps[0]
	if st.Stats.Images == nil || st.Stats.Images.Images != 20 {
		t.Errorf("step images %+v", st.Stats.Images)
	}
	mm := st.Server.MultimodalCache
	if mm == nil || mm.Queries != 20 || mm.Hits != 18 || mm.HitRate.Value != 0.9 {
		t.Errorf("multimodal cache %+v, want 20 queries and 18 hits", mm)
	}
	b := mustRead(t, filepath.Join(res.Dir, "analysis.md"))
	if !strings.Contains(string(b), "### Images") || !strings.Contains(string(b), "| 20 | 20 | 1 |") || !strings.Contains(string(b), "| 20 | 18 | 90") {
		t.Errorf("analysis.md images section:\n%s", section(string(b), "### Images"))
	}
	b = mustRead(t, filepath.Join(res.Dir, "result.json"))
	if !strings.Contains(string(b), `"multimodal_cache": {`) && !strings.Contains(string(b), `"multimodal_cache":{`) {
		t.Errorf("result.json has no multimodal_cache")
	}
}

// section returns s from the heading to the next blank line after its table.
func section(s, heading string) string {
	i := strings.Index(s, heading)
	if i < 0 {
		return "(no " + heading + ")"
	}
	s = s[i:]
	if j := strings.Index(s[len(heading)+2:], "\n\n|"); j >= 0 {
		if k := strings.Index(s[len(heading)+2+j+2:], "\n\n"); k >= 0 {
			return s[:len(heading)+2+j+2+k]
		}
	}
	return s
}
