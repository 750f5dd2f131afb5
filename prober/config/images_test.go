package config

import (
	"strings"
	"testing"
)

// TestImagesFeature accepts the images feature on a chat or responses
// target and refuses it on every other api and out of bounds, naming the key and line.
func TestImagesFeature(t *testing.T) {
	probe := func(api, feature string) string {
		return "targets:\n  - name: a\n    base_url: http://x\n    api: " + api + "\n    probes:\n      - name: p\n        rate: 1\n" +
			"        workload:\n          request:\n            features:\n              - " + feature + "\n"
	}
	c, err := Parse([]byte(probe("chat", "{kind: images, share: 0.5, count: 2, width: 64, height: 48, format: jpeg}")), "f.yml")
	if err != nil {
		t.Fatal(err)
	}
	if f := c.Targets[0].Probes[0].Workload.Request.Features[0]; f.Count != 2 || f.Width != 64 || f.Height != 48 || f.Format != "jpeg" {
		t.Errorf("feature %+v", f)
	}
	if _, err := Parse([]byte(probe("responses", "{kind: images, share: 1, count: 1, width: 8, height: 8}")), "f.yml"); err != nil {
		t.Errorf("api responses: %v", err)
	}
	for _, tt := range []struct{ yaml, want string }{
		{probe("completions", "{kind: images, share: 1, count: 1, width: 8, height: 8}"),
			"f.yml:11: targets[0].probes[0].workload.request.features[0].kind: images are sent with api chat and responses only (image content parts), this target's api is completions"},
		{probe("embeddings", "{kind: images, share: 1, count: 1, width: 8, height: 8}"),
			"targets[0].probes[0].workload.request.features[0].kind: images are sent with api chat and responses only"},
		{probe("chat", "{kind: images, share: 1, count: 17, width: 8, height: 8}"),
			"targets[0].probes[0].workload.request.features[0].count: must be in [1, 16], got 17"},
		{probe("chat", "{kind: images, share: 1, count: 1, width: 8, height: 8, format: gif}"),
			`targets[0].probes[0].workload.request.features[0].format: must be png or jpeg, got "gif"`},
		{probe("chat", "{kind: images, share: 1, count: 1, width: 8}"),
			"targets[0].probes[0].workload.request.features[0].height: must be in [1, 4096] pixels, got 0"},
	} {
		if _, err := Parse([]byte(tt.yaml), "f.yml"); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %s", tt.yaml, err, tt.want)
		}
	}
}
