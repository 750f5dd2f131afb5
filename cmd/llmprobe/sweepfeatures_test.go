package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSweepBadRequestFlags pins the one-line error of each bad request
// flag and of a bad request section in a workload file (file, line and
// field), all refused before anything is sent.
func TestSweepBadRequestFlags(t *testing.T) {
	dir := t.TempDir()
	wl := filepath.Join(dir, "wl.yml")
	os.WriteFile(wl, []byte("input_tokens: {dist: fixed, value: 8}\noutput_tokens: {dist: fixed, value: 2}\nrequest:\n"+
		"  features:\n    - {kind: logprobs, share: 0.5}\n    - kind: json_schema\n      share: 1.5\n      schema: {type: object}\n"), 0o644)
	wl2 := filepath.Join(dir, "wl2.yml")
	os.WriteFile(wl2, []byte("input_tokens: {dist: fixed, value: 8}\noutput_tokens: {dist: fixed, value: 2}\nrequest:\n"+
		"  features:\n    - {kind: json_schema, share: 0.5, schema_file: missing.json}\n"), 0o644)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"negative temperature", []string{"--temperature=-1"}, "llmprobe: error: --temperature: temperature: must be a finite number >= 0, got -1\n"},
		{"top-p over 1", []string{"--top-p", "1.5"}, "llmprobe: error: --top-p: top_p: must be in (0, 1], got 1.5\n"},
		{"negative min tokens", []string{"--min-tokens=-2"}, "llmprobe: error: --min-tokens: min_tokens: must be in [0, 1048576], got -2\n"},
		{"empty stop", []string{"--stop", ""}, "llmprobe: error: --stop: stop[0]: must be 1 to 1024 bytes, got 0\n"},
		{"extra body not an object", []string{"--extra-body", "[1]"}, "llmprobe: error: --extra-body: must be a JSON object: json: cannot unmarshal array"},
		{"extra body sets stream", []string{"--extra-body", `{"stream":false}`}, "llmprobe: error: --extra-body: extra_body.stream: may not be set in extra_body"},
		{"bad share in the workload file", []string{"--workload", wl}, "llmprobe: error: --workload: " + wl + ":7: request.features[1].share: must be in (0, 1], got 1.5\n"},
		{"missing schema file", []string{"--workload", wl2}, "llmprobe: error: --workload: " + wl2 + ":5: request.features[0].schema_file: open " +
			filepath.Join(dir, "missing.json") + ": no such file or directory\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantUsageError(t, append([]string{"sweep"}, tt.args...), tt.want) })
	}
}
