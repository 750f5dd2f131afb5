package logging

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/go-kit/log/level"
)

func TestLevelsAndFormats(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     Config
		want    []string
		notWant []string
	}{
		{"info logfmt", Config{Level: "info", Format: "logfmt"}, []string{`msg="an info"`, "level=info", "level=warn"}, []string{"a debug"}},
		{"debug", Config{Level: "debug", Format: "logfmt"}, []string{"a debug", "an info"}, nil},
		{"error only", Config{Level: "error", Format: "logfmt"}, []string{"an error"}, []string{"an info", "a warning"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			l := New(tc.cfg, &buf)
			level.Debug(l).Log("msg", "a debug")
			level.Info(l).Log("msg", "an info")
			level.Warn(l).Log("msg", "a warning")
			level.Error(l).Log("msg", "an error")
			out := buf.String()
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(out, w) {
					t.Errorf("output has %q:\n%s", w, out)
				}
			}
			if !strings.Contains(out, "caller=logging_test.go:") {
				t.Errorf("caller is not the logging call site:\n%s", out)
			}
		})
	}
}

func TestJSONAndSlogBridge(t *testing.T) {
	var buf bytes.Buffer
	l := New(Config{Level: "info", Format: "json"}, &buf)
	s := Slog(l).With("component", "web").WithGroup("tls")
	s.Info("Listening on", "address", ":9741")
	s.Debug("hidden")
	var m map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(buf.Bytes()), &m); err != nil {
		t.Fatalf("not one JSON line: %v\n%s", err, buf.String())
	}
	if m["msg"] != "Listening on" || m["level"] != "info" || m["component"] != "web" || m["tls.address"] != ":9741" {
		t.Errorf("record = %v", m)
	}
}

func TestValidate(t *testing.T) {
	if err := (Config{Level: "loud", Format: "logfmt"}).Validate(); err == nil || !strings.Contains(err.Error(), "--log.level") {
		t.Errorf("bad level: %v", err)
	}
	if err := (Config{Level: "info", Format: "xml"}).Validate(); err == nil || !strings.Contains(err.Error(), "--log.format") {
		t.Errorf("bad format: %v", err)
	}
	if err := (Config{Level: "warn", Format: "json"}).Validate(); err != nil {
		t.Error(err)
	}
}
