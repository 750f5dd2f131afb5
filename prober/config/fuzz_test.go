package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse checks that Parse never panics, that every error is a located
// *Error list, and that a config it accepts marshals to YAML that parses back
// to the same config. Seeds: every testdata/*.yml and the deploy example.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yml")
	files = append(files, "../../deploy/examples/llmprobe.yml")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Setenv("VLLM_B_API_KEY", "sk-fuzz")
	f.Setenv("LLMPROBE_TEST_KEY", "sk-fuzz")
	// Relative key files resolve under testdata/.
	const name = "testdata/fuzz.yml"
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data, name)
		if err != nil {
			if !strings.HasPrefix(err.Error(), name) {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		again, err := Parse([]byte(c.String()), name)
		if err != nil {
			t.Fatalf("String() does not parse back: %v\n%s", err, c)
		}
		if configKey(c) != configKey(again) {
			t.Fatalf("round trip changed the config:\n%s\nvs\n%s", c, again)
		}
	})
}
