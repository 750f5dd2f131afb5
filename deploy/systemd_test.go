package deploy

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/prober/config"
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

// systemdCredentialsDir is where systemd puts a system service's
// credentials ($CREDENTIALS_DIRECTORY, the specifier %d): below it one
// directory per unit name, one file per credential ID (systemd.exec(5),
// "Credentials"). llmprobe does not read $CREDENTIALS_DIRECTORY: the
// configuration names the file by its absolute path, so the docs must spell
// the path out for the unit name deploy/systemd installs.
const systemdCredentialsDir = "/run/credentials"

// maxSystemdExposure is the highest `systemd-analyze security --offline=yes`
// exposure (times 10, as --threshold takes it) the unit may have: 1.5, what
// it has (deploy/README.md).
const maxSystemdExposure = 15

// credentialUse is one documented pair: a LoadCredential= line and the
// api_key_file that reads it.
type credentialUse struct {
	where         string
	id, source    string
	apiKeyFile    string
	dropInSection string // the drop-in's text, where the doc gives one
}

var (
	loadCredentialRE = regexp.MustCompile(`LoadCredential=([^:\s]+):(\S+)`)
	apiKeyFileRE     = regexp.MustCompile("api_key_file: (/run/credentials/[^\\s`]+)")
	iniBlockRE       = regexp.MustCompile("(?s)```ini\n(.*?)```")
)

// documentedCredentials returns the LoadCredential= / api_key_file pairs of
// the unit's comments and of deploy/README.md's systemd section.
func documentedCredentials(t *testing.T) []credentialUse {
	t.Helper()
	unit, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## systemd on a VM\n")
	if !ok {
		t.Fatal(`deploy/README.md has no section "## systemd on a VM"`)
	}
	section, _, _ = strings.Cut(section, "\n#") // the install steps, not "How the unit is checked"
	var uses []credentialUse
	for _, doc := range []struct{ where, text string }{{unitFile, string(unit)}, {"deploy/README.md", section}} {
		lc := loadCredentialRE.FindAllStringSubmatch(doc.text, -1)
		kf := apiKeyFileRE.FindAllStringSubmatch(doc.text, -1)
		if len(lc) != 1 || len(kf) != 1 {
			t.Fatalf("%s: want one LoadCredential=ID:PATH and one api_key_file: /run/credentials/..., got %q and %q", doc.where, lc, kf)
		}
		u := credentialUse{where: doc.where, id: lc[0][1], source: lc[0][2], apiKeyFile: kf[0][1]}
		if m := iniBlockRE.FindStringSubmatch(doc.text); m != nil {
			var lines []string
			for _, l := range strings.Split(strings.TrimSpace(m[1]), "\n") {
				lines = append(lines, strings.TrimSpace(l)) // indented in a list item
			}
			u.dropInSection = strings.Join(lines, "\n") + "\n"
		}
		uses = append(uses, u)
	}
	return uses
}

// validCredentialID is systemd's rule for a credential name: a valid file
// name (not empty, not . or .., no /, at most 255 bytes).
func validCredentialID(id string) bool {
	return id != "" && id != "." && id != ".." && !strings.ContainsAny(id, "/\x00") && len(id) <= 255
}

// TestSystemdCredentialPath checks that the credential the docs hand to the
// unit is the file they tell llmprobe to read: api_key_file is
// /run/credentials/<unit name>/<ID> for the LoadCredential=ID:... line, the
// unit name the one deploy/systemd installs; that the unit hides nothing
// of /run/credentials (no InaccessiblePaths=, TemporaryFileSystem=,
// RootDirectory= or RootImage=, which would need this check redone); and that llmprobe's configuration reads a key from
// such a path (absolute, outside the config's directory, mode 0400 as
// systemd writes it).
func TestSystemdCredentialPath(t *testing.T) {
	u, err := LoadUnit(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	unitName := filepath.Base(unitFile)
	for _, c := range documentedCredentials(t) {
		if !validCredentialID(c.id) {
			t.Errorf("%s: LoadCredential ID %q is not a valid credential name", c.where, c.id)
		}
		if !filepath.IsAbs(c.source) {
			t.Errorf("%s: LoadCredential source %q is not absolute", c.where, c.source)
		}
		if want := systemdCredentialsDir + "/" + unitName + "/" + c.id; c.apiKeyFile != want {
			t.Errorf("%s: api_key_file %s, but LoadCredential=%s:... in %s puts the key at %s", c.where, c.apiKeyFile, c.id, unitName, want)
		}
		if c.dropInSection != "" && !strings.HasPrefix(c.dropInSection, "[Service]\n") {
			t.Errorf("%s: the drop-in does not start with [Service]: %q", c.where, c.dropInSection)
		}
	}
	for _, key := range []string{"InaccessiblePaths", "TemporaryFileSystem", "RootDirectory", "RootImage"} {
		if vs := u["Service"][key]; len(vs) > 0 {
			t.Errorf("[Service] %s=%v: check the credentials path (and this test) against it", key, vs)
		}
	}

	// llmprobe reads the key from such a path, as the docs write it.
	root := t.TempDir()
	credDir := filepath.Join(root, "run", "credentials", unitName)
	if err := os.MkdirAll(credDir, 0o700); err != nil {
		t.Fatal(err)
	}
	keyPath := filepath.Join(credDir, "vllm-b.key")
	if err := os.WriteFile(keyPath, []byte("sk-credential\n"), 0o400); err != nil {
		t.Fatal(err)
	}
	cfgDir := t.TempDir()
	cfgPath := filepath.Join(cfgDir, "llmprobe.yml")
	cfg := "targets:\n  - name: vllm-b\n    base_url: http://127.0.0.1:8000\n    api_key_file: " + keyPath +
		"\n    probes:\n      - name: p\n        rate: 1\n"
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(cfgPath)
	if err != nil {
		t.Fatalf("a config with api_key_file under the credentials directory: %v", err)
	}
	if got := string(c.Targets[0].APIKey()); got != "sk-credential" {
		t.Errorf("APIKey() = %q, want the credential file's key", got)
	}
}

// TestSystemdAnalyze runs systemd-analyze on the unit with the README's
// credentials drop-in, offline in a scratch root (systemd need not run):
// `verify` must print nothing (it warns of an unknown key or an invalid
// credential name and still exits 0) and `security --offline=yes` must rate
// the unit at most maxSystemdExposure. Skipped where systemd-analyze is not
// installed.
func TestSystemdAnalyze(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed")
	}
	units := "/usr/lib/systemd/system"
	if _, err := os.Stat(filepath.Join(units, "sysinit.target")); err != nil {
		t.Skipf("no systemd units in %s to verify against: %v", units, err)
	}
	var dropIn string
	for _, c := range documentedCredentials(t) {
		if c.dropInSection != "" {
			dropIn = c.dropInSection
		}
	}
	if dropIn == "" {
		t.Fatal("deploy/README.md gives no credentials drop-in (```ini block)")
	}
	root := t.TempDir()
	copyTree(t, units, filepath.Join(root, units))
	unit, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	etc := filepath.Join(root, "etc", "systemd", "system")
	writeFile(t, filepath.Join(etc, filepath.Base(unitFile)), unit, 0o644)
	writeFile(t, filepath.Join(etc, filepath.Base(unitFile)+".d", "credentials.conf"), []byte(dropIn), 0o644)
	// verify checks that the commands exist and are executable.
	u, err := LoadUnit(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"ExecStart", "ExecReload"} {
		args, err := SplitCommand(u.Get("Service", key))
		if err != nil || len(args) == 0 {
			t.Fatalf("%s=%q: %v", key, u.Get("Service", key), err)
		}
		writeFile(t, filepath.Join(root, args[0]), []byte("#!/bin/sh\n"), 0o755)
	}
	name := filepath.Base(unitFile)
	out, err := exec.Command(sa, "verify", "--root="+root, name).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify %s (with the README's drop-in): %v\n%s", name, err, out)
	}
	out, err = exec.Command(sa, "security", "--offline=yes", "--root="+root, "--threshold="+strconv.Itoa(maxSystemdExposure), name).CombinedOutput()
	if err != nil {
		t.Errorf("systemd-analyze security --offline=yes: exposure above %d/10 (%v):\n%s", maxSystemdExposure, err, lastLines(out, 3))
	}
}

// copyTree copies the directory src to dst: regular files and symbolic
// links (systemd's unit directories hold aliases).
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, to)
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(to, data, 0o644)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, p string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, mode); err != nil {
		t.Fatal(err)
	}
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
