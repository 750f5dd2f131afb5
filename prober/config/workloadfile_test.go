package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadWorkloadFile(t *testing.T) {
	dir := t.TempDir()
	f := func(name, body, want string) {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		w, err := LoadWorkloadFile(path)
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case want == "" && w.InputTokens.Value != 8:
			t.Errorf("%s: input tokens %+v", name, w.InputTokens)
		case want != "" && (err == nil || !strings.HasPrefix(err.Error(), path+want)):
			t.Errorf("%s: error %v, want %s%s", name, err, path, want)
		}
	}
	f("ok.yml", "input_tokens: {dist: fixed, value: 8}\noutput_tokens: {dist: fixed, value: 2}\n", "")
	f("unknown.yml", "input_tokens: {dist: fixed, value: 8}\nbogus: 1\n", ": yaml: unmarshal errors:")
	f("share.yml", "input_tokens: {dist: fixed, value: 8}\noutput_tokens: {dist: fixed, value: 2}\nrequest:\n"+
		"  features:\n    - {kind: logprobs, share: 0.5}\n    - kind: json_schema\n      share: 1.5\n      schema: {type: object}\n",
		":7: request.features[1].share: must be in (0, 1], got 1.5")
	if _, err := LoadWorkloadFile("/dev/zero"); err == nil || err.Error() != "/dev/zero: the file is larger than 4MiB, the cap on a workload file" {
		t.Errorf("endless file: %v", err)
	}
}
