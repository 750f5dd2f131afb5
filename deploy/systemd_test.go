package deploy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// unitFile is deploy/systemd/llmprobe.service, seen from this package.
var unitFile = filepath.Join("systemd", "llmprobe.service")

func TestSystemdUnitIsHardened(t *testing.T) {
	u, err := LoadUnit(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{
		"ExecReload":              "/bin/kill -HUP $MAINPID",
		"DynamicUser":             "yes",
		"NoNewPrivileges":         "yes",
		"ProtectSystem":           "strict",
		"ProtectHome":             "yes",
		"PrivateTmp":              "yes",
		"PrivateDevices":          "yes",
		"ProtectKernelTunables":   "yes",
		"ProtectKernelModules":    "yes",
		"ProtectControlGroups":    "yes",
		"RestrictSUIDSGID":        "yes",
		"RestrictNamespaces":      "yes",
		"LockPersonality":         "yes",
		"MemoryDenyWriteExecute":  "yes",
		"CapabilityBoundingSet":   "",
		"RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX",
		"SystemCallArchitectures": "native",
		"Restart":                 "on-failure",
	} {
		_, ok := u["Service"][key]
		if !ok || u.Get("Service", key) != want {
			t.Errorf("[Service] %s=%q (set: %v), want %q", key, u.Get("Service", key), ok, want)
		}
	}
	if f := u["Service"]["SystemCallFilter"]; !slices.Contains(f, "@system-service") {
		t.Errorf("SystemCallFilter=%v, want @system-service", f)
	}
	if u.Get("Install", "WantedBy") != "multi-user.target" {
		t.Errorf("[Install] WantedBy=%q", u.Get("Install", "WantedBy"))
	}
	if !strings.Contains(u.Get("Unit", "After"), "network-online.target") {
		t.Errorf("[Unit] After=%q, want network-online.target", u.Get("Unit", "After"))
	}
}

func TestLoadUnit(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.service")
	data := "# c\n[Service]\nExecStart=/bin/a \\\n  --b 'c d'\nX=1\nX=2\n; c\n[Install]\nWantedBy=m\n"
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	u, err := LoadUnit(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := u.Get("Service", "ExecStart"); got != "/bin/a --b 'c d'" {
		t.Errorf("ExecStart=%q", got)
	}
	args, err := SplitCommand(u.Get("Service", "ExecStart"))
	if err != nil || !slices.Equal(args, []string{"/bin/a", "--b", "c d"}) {
		t.Errorf("SplitCommand() = %q, %v", args, err)
	}
	if !slices.Equal(u["Service"]["X"], []string{"1", "2"}) || u.Get("Service", "X") != "2" || u.Get("Install", "WantedBy") != "m" {
		t.Errorf("unit = %v", u)
	}
	if err := os.WriteFile(p, []byte("Key=before-a-section\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadUnit(p); err == nil {
		t.Error("a key outside a section was accepted")
	}
	if _, err := SplitCommand(`a "b`); err == nil {
		t.Error("an unterminated quote was accepted")
	}
}
