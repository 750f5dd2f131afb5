package sweep

import (
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/internal/simulator/simtest"
	"github.com/llmprobe/llmprobe/prober/workload"
)

// TestSweepImages sends chat requests with the images feature to the
// simulator over HTTP: every Record counts its images and their bytes, the
// server's prompt tokens hold the images' tokens by the simulator's rule
// (ceil(w/28)·ceil(h/28) each: 56×40 is 2·2 = 4), and the step's result
// carries the images figures and the server's multimodal cache: a first
// run's images are all new (hit rate 0), a second with the same seed and
// prompt nonce sends the very same bytes (every image a hit), a third with
// another nonce new ones again.
func TestSweepImages(t *testing.T) {
	url, _ := simtest.Start(t, simtest.Fast())
	run := func(nonce int64) (*Result, *memSink) {
		t.Helper()
		cfg := testConfig(t, url)
		cfg.API = "chat"
		cfg.Rates, cfg.RatesText, cfg.NumPrompts, cfg.Warmups = []float64{50}, "50", 20, 0
		cfg.PromptNonce = nonce
		cfg.Workload.Request = &workload.Request{Features: []workload.RequestFeature{
			{Kind: workload.FeatureImages, Share: 1, Count: 2, Width: 56, Height: 40, Format: workload.ImagePNG}}}
		sink := &memSink{}
		res := runSweep(t, cfg, sink)
		return res, sink
	}
	first, sink := run(11)
	var bytes int64
	for _, sr := range sink.recs {
		r := sr.Record
		if !r.OK() {
			t.Fatalf("request %s failed: %s %s", r.RequestID, r.Error, r.ErrorMessage)
		}
		if r.Images != 2 || r.ImageBytes <= 0 || len(r.Features) != 1 || r.Features[0] != workload.FeatureImages {
			t.Errorf("record %s: images %d, bytes %d, features %v", r.RequestID, r.Images, r.ImageBytes, r.Features)
		}
		if r.PromptTokens != r.InputTokens+2*4 {
			t.Errorf("record %s: server prompt tokens %d, want the text's %d + 2 images of 4", r.RequestID, r.PromptTokens, r.InputTokens)
		}
		bytes += r.ImageBytes
	}
	im := first.Steps[0].Stats.Images
	if im == nil || im.Requests != 20 || im.Images != 40 || im.Bytes != bytes || im.Throughput <= 0 {
		t.Fatalf("step images %+v, want 20 requests, 40 images, %d bytes", im, bytes)
	}
	mm := first.Steps[0].Server.MultimodalCache
	if mm == nil || mm.Queries != 40 || mm.Hits != 0 || !mm.HitRate.Known || mm.HitRate.Value != 0 {
		t.Fatalf("first run's multimodal cache %+v, want 40 queries and no hit", mm)
	}

	again, sink2 := run(11)
	var bytes2 int64
	for _, sr := range sink2.recs {
		bytes2 += sr.Record.ImageBytes
	}
	if bytes2 != bytes {
		t.Errorf("the same seed and nonce sent %d image bytes, the first run %d", bytes2, bytes)
	}
	if mm := again.Steps[0].Server.MultimodalCache; mm == nil || mm.Queries != 40 || mm.Hits != 40 || mm.HitRate.Value != 1 {
		t.Errorf("second run's multimodal cache %+v, want every image a hit", mm)
	}
	other, _ := run(12)
	if mm := other.Steps[0].Server.MultimodalCache; mm == nil || mm.Hits != 0 {
		t.Errorf("another nonce's multimodal cache %+v, want no hit", mm)
	}

	b := resultJSON(t, first)
	for _, want := range []string{`"images":{"requests":20,"images":40,`, `"multimodal_cache":{"queries":40,"hits":0,"hit_rate":0}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("result.json lacks %s", want)
		}
	}
	back := decodeBack(t, b)
	if got := back.Steps[0].Stats.Images; got == nil || *got != *im {
		t.Errorf("result.json read back: images %+v, want %+v", got, im)
	}
	if got := back.Steps[0].Server.MultimodalCache; got == nil || *got != *first.Steps[0].Server.MultimodalCache {
		t.Errorf("result.json read back: multimodal cache %+v", got)
	}
}

// TestSweepImagesResponses sends the images as the Responses API's
// input_image parts: the records count them and the server's input tokens
// hold their tokens.
func TestSweepImagesResponses(t *testing.T) {
	url, _ := simtest.Start(t, simtest.Fast())
	cfg := testConfig(t, url)
	cfg.API = "responses"
	cfg.Rates, cfg.RatesText, cfg.NumPrompts, cfg.Warmups = []float64{50}, "50", 10, 0
	cfg.Workload.Request = &workload.Request{Features: []workload.RequestFeature{
		{Kind: workload.FeatureImages, Share: 1, Count: 1, Width: 28, Height: 84, Format: workload.ImageJPEG}}}
	sink := &memSink{}
	res := runSweep(t, cfg, sink)
	for _, sr := range sink.recs {
		r := sr.Record
		if !r.OK() || r.Images != 1 || r.ImageBytes <= 0 || r.PromptTokens != r.InputTokens+3 {
			t.Errorf("record %s: ok %v (%s), images %d, bytes %d, prompt tokens %d (text %d)", r.RequestID, r.OK(), r.ErrorMessage,
				r.Images, r.ImageBytes, r.PromptTokens, r.InputTokens)
		}
	}
	if mm := res.Steps[0].Server.MultimodalCache; mm == nil || mm.Queries != 10 {
		t.Errorf("multimodal cache %+v, want 10 queries", mm)
	}
}

// TestSweepImagesNeedChat refuses the images feature for every api but
// chat and responses.
func TestSweepImagesNeedChat(t *testing.T) {
	for _, api := range []string{"completions", "embeddings", "rerank"} {
		cfg := testConfig(t, "http://127.0.0.1:1")
		cfg.API = api
		cfg.Workload.Request = &workload.Request{Features: []workload.RequestFeature{
			{Kind: workload.FeatureImages, Share: 1, Count: 1, Width: 8, Height: 8}}}
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), "request.features[0].kind: images are sent with api chat and responses only") ||
			!strings.Contains(err.Error(), "the api is "+api) {
			t.Errorf("api %s: %v", api, err)
		}
	}
}
