package workload

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"strings"
	"testing"
)

// TestImagesValidate pins the errors of the images feature's bounds.
func TestImagesValidate(t *testing.T) {
	f := func(feat RequestFeature, want string) {
		t.Helper()
		feat.Kind, feat.Share = FeatureImages, 0.5
		checkValidate(t, Request{Features: []RequestFeature{feat}}, want)
	}
	f(RequestFeature{Count: 2, Width: 64, Height: 32}, "")
	f(RequestFeature{Count: 1, Width: 64, Height: 32, Format: "jpeg", Distinct: 8}, "")
	f(RequestFeature{Width: 64, Height: 32}, "features[0].count: must be in [1, 16], got 0")
	f(RequestFeature{Count: MaxImages + 1, Width: 64, Height: 32}, "features[0].count: must be in [1, 16], got 17")
	f(RequestFeature{Count: 1, Width: 0, Height: 32}, "features[0].width: must be in [1, 4096] pixels, got 0")
	f(RequestFeature{Count: 1, Width: 64, Height: MaxImageHeight + 1}, "features[0].height: must be in [1, 4096] pixels, got 4097")
	f(RequestFeature{Count: 1, Width: 64, Height: 32, Format: "gif"}, `features[0].format: must be png or jpeg, got "gif"`)
	f(RequestFeature{Count: 4, Width: 2048, Height: 2048},
		"features[0]: 4 images of 2048x2048 may encode to 51130496 bytes a request, more than 16777216: fewer or smaller images")
	f(RequestFeature{Count: 1, Width: 64, Height: 32, Distinct: -1}, "features[0].distinct: must be in [0, 1024] (0: every image its own), got -1")
	f(RequestFeature{Count: 1, Width: 2048, Height: 2048, Distinct: 64},
		"features[0].distinct: a pool of 64 images of 2048x2048 may hold 818087936 bytes, more than 268435456")
	f(RequestFeature{Count: 1, Width: 64, Height: 32, Model: "x"}, "features[0].model: does not apply to kind images")
	err := (&Request{Features: []RequestFeature{{Kind: FeatureLogprobs, Share: 1, Count: 2}}}).Validate()
	if err == nil || err.Error() != "features[0].count: does not apply to kind logprobs" {
		t.Errorf("count on logprobs: %v", err)
	}
}

// TestImagesDraw: a request carrying the feature gets count images of the
// size and format asked, as data URLs that decode; the same seed and nonce
// give the same bytes, another request or nonce other bytes, and a pool of
// distinct images gives back the very same ones.
func TestImagesDraw(t *testing.T) {
	for _, format := range []string{ImagePNG, ImageJPEG} {
		plan, err := NewRequestPlan(&Request{Features: []RequestFeature{{Kind: FeatureImages, Share: 1, Count: 2, Width: 40, Height: 24, Format: format}}})
		if err != nil {
			t.Fatal(err)
		}
		plan.SetNonce(9)
		d := plan.Draw(7, 3)
		if len(d.Images) != 2 || len(d.Names) != 1 || d.Names[0] != FeatureImages {
			t.Fatalf("%s: draw %+v", format, d)
		}
		for _, im := range d.Images {
			prefix := "data:image/" + format + ";base64,"
			if !strings.HasPrefix(im.URL, prefix) {
				t.Fatalf("%s: url %.40q", format, im.URL)
			}
			b, err := base64.StdEncoding.DecodeString(im.URL[len(prefix):])
			if err != nil || len(b) != im.Bytes {
				t.Fatalf("%s: %d bytes decoded (%v), Bytes %d", format, len(b), err, im.Bytes)
			}
			var cfg image.Config
			if format == ImagePNG {
				cfg, err = png.DecodeConfig(bytes.NewReader(b))
			} else {
				cfg, err = jpeg.DecodeConfig(bytes.NewReader(b))
			}
			if err != nil || cfg.Width != 40 || cfg.Height != 24 {
				t.Fatalf("%s: decoded %+v, %v", format, cfg, err)
			}
		}
		if d.Images[0].URL == d.Images[1].URL {
			t.Errorf("%s: two images of one request are the same", format)
		}
		again := plan.Draw(7, 3)
		if again.Images[0] != d.Images[0] || again.Images[1] != d.Images[1] {
			t.Errorf("%s: the same seed, index and nonce gave other bytes", format)
		}
		if plan.Draw(7, 4).Images[0] == d.Images[0] {
			t.Errorf("%s: another request got the same image", format)
		}
		plan.SetNonce(10)
		if plan.Draw(7, 3).Images[0] == d.Images[0] {
			t.Errorf("%s: another nonce gave the same image", format)
		}
	}

	plan, err := NewRequestPlan(&Request{Features: []RequestFeature{{Kind: FeatureImages, Share: 1, Count: 1, Width: 16, Height: 16, Distinct: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i := range int64(200) {
		seen[plan.Draw(1, i).Images[0].URL] = true
	}
	if len(seen) != 3 {
		t.Errorf("a pool of 3 gave %d distinct images over 200 requests", len(seen))
	}
	// Another seed (or nonce) draws from its own pool, not the first one's.
	other := map[string]bool{}
	for i := range int64(200) {
		u := plan.Draw(2, i).Images[0].URL
		if seen[u] {
			t.Fatalf("seed 2 drew an image of seed 1's pool")
		}
		other[u] = true
	}
	if len(other) != 3 || plan.Draw(1, 0).Images[0].URL != plan.Draw(1, 0).Images[0].URL {
		t.Errorf("seed 2's pool: %d images", len(other))
	}
}

// TestImagesShare: the feature is carried by about its share of requests.
func TestImagesShare(t *testing.T) {
	plan, err := NewRequestPlan(&Request{Features: []RequestFeature{{Kind: FeatureImages, Share: 0.25, Count: 1, Width: 8, Height: 8}}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := range int64(2000) {
		if plan.Draw(5, i).Images != nil {
			n++
		}
	}
	if n < 400 || n > 600 {
		t.Errorf("%d of 2000 requests carried images at share 0.25", n)
	}
}

// BenchmarkGenerateImage measures drawing and encoding one image (the
// cost before the send of a request with images: docs/workload.md).
func BenchmarkGenerateImage(b *testing.B) {
	for _, bc := range []struct {
		w, h   int
		format string
	}{{448, 448, ImagePNG}, {448, 448, ImageJPEG}, {1024, 1024, ImagePNG}, {1024, 1024, ImageJPEG}} {
		b.Run(fmt.Sprintf("%dx%d-%s", bc.w, bc.h, bc.format), func(b *testing.B) {
			n := 0
			for i := range b.N {
				n = len(GenerateImage(uint64(i), bc.w, bc.h, bc.format))
			}
			b.ReportMetric(float64(n), "bytes")
		})
	}
}
