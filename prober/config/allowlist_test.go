package config

import (
	"net/url"
	"path"
	"strings"
	"testing"
)

// traversals are target paths that a server may resolve outside the
// allowed /s/echo (issue 34 N5: the first five were sent with the module's
// key), each with the reason checkURLPath gives.
var traversals = []struct{ path, want string }{
	{"/s/echo/../ok", `a ".." segment`},
	{"/s/echo/%2e%2e/ok", `a "%2e%2e" segment`},
	{"/s/echo%2F..%2Fok", "an encoded / (%2F)"},
	{"/s/echo/x/../../ok", `a ".." segment`},
	{"/s/echo/..", `a ".." segment`},
	{"/s/echo/../", `a ".." segment`},
	{"/s/echo/%2E%2E/ok", `a "%2E%2E" segment`},
	{"/s/echo/.%2e/ok", `a ".%2e" segment`},
	{"/s/echo/%2e./ok", `a "%2e." segment`},
	{"/s/echo/./../ok", `a "." segment`},
	{"/s/echo/%2e", `a "%2e" segment`},
	{"/s/echo/...", `a "..." segment`},
	{"/s/echo%2f..%2fok", "an encoded / (%2F)"},
	{"/s/echo/..%2Fok", "an encoded / (%2F)"},
	{`/s/echo/..\ok`, `a backslash (\)`},
	{"/s/echo/..%5Cok", `an encoded \ (%5C)`},
	{"/s/echo/..%5cok", `an encoded \ (%5C)`},
	{"/s/echo/%252e%252e/ok", "an encoded % (%25)"},
	{"/s/echo/..;/ok", `a ";"`},
	{"/s/echo/;/../ok", `a ";"`},
	{"/s/echo//ok", "an empty segment (//)"},
	{"/s/echo/%00/ok", "a control character"},
	{"/s/echo/%EF%BC%8E%EF%BC%8E/ok", `a "%EF%BC%8E%EF%BC%8E" segment`},
}

// TestCheckURLPath: every traversal form refused with its reason, and the
// ordinary paths taken.
func TestCheckURLPath(t *testing.T) {
	for _, tc := range traversals {
		err := checkURLPath("http://h:1" + tc.path)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("checkURLPath(%q) = %v, want it to contain %q", tc.path, err, tc.want)
		}
	}
	for _, ok := range []string{"", "/", "/s/echo", "/s/echo/", "/s/echo/a.b", "/s/echo/..a", "/s/echo/a..", "/s/%41", "/s/echo%3Fx", "/s/ec%68o"} {
		if err := checkURLPath("http://h:1" + ok); err != nil {
			t.Errorf("checkURLPath(%q) = %v, want nil", ok, err)
		}
	}
}

// TestProbeAllowedTraversal: with /s/echo allowed, every traversal form is
// refused by Module.Target (the 400 of GET /probe, naming why) and by
// ProbeAllowed itself; paths under the prefix are taken.
func TestProbeAllowedTraversal(t *testing.T) {
	c, err := Parse([]byte("modules: {m: {}}\nprobe_allowed_targets: [\"http://h:1/s/echo\"]\n"), "m.yml")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := c.Module("m")
	for _, tc := range traversals {
		target := "http://h:1" + tc.path
		if _, err := m.Target(target); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Target(%q) = %v, want it to contain %q", target, err, tc.want)
		}
		if c.ProbeAllowed(target) {
			t.Errorf("ProbeAllowed(%q) = true", target)
		}
	}
	for target, want := range map[string]bool{
		"http://h:1/s/echo":         true,
		"http://h:1/s/echo/":        true,
		"http://h:1/s/echo/deeper":  true,
		"http://h:1/s/ec%68o/x":     true, // /s/echo/x once decoded
		"http://h:1/s/echox":        false,
		"http://h:1/s":              false,
		"http://h:1/s/ech%6F%2e":    false,
		"http://H:1/s/echo":         true,
		"http://h:01/s/echo":        false,
		"http://h/s/echo":           false,
		"http://h:1/S/echo":         false,
		"http://h:1@x:1/s/echo":     false,
		"http://h:1/s/echo?x=1":     false,
		"http://h:1/s/echo#f":       false,
		"http://h:1/s/echo/%2e%2e/": false,
	} {
		if got := c.ProbeAllowed(target); got != want {
			t.Errorf("ProbeAllowed(%q) = %v, want %v", target, got, want)
		}
	}
	for _, bad := range []string{"http://h:1/s/../echo", "http://h:1/s/%2e%2e/echo", "http://h:1/s%2Fecho"} {
		if _, err := Parse([]byte("modules: {m: {}}\nprobe_allowed_targets: [\""+bad+"\"]\n"), "m.yml"); err == nil {
			t.Errorf("probe_allowed_targets entry %q loaded", bad)
		}
	}
}

// FuzzAllowListPath fuzzes ProbeAllowed with one allowed entry and one
// target. The oracle: a target that Module.Target and ProbeAllowed both
// accept, once the request URL is built from it as the probe client does
// (the path decoded, an API path appended, escaped again) and as a
// request to another endpoint is (the base URL and a path joined as
// strings), then resolved as a lax server would (percent-decoded once and
// twice, \ read as /, dot segments removed), has the scheme and host of
// the entry and lies under its path, segment by segment.
func FuzzAllowListPath(f *testing.F) {
	for _, tc := range traversals {
		f.Add("http://h:1/s/echo", "http://h:1"+tc.path)
	}
	f.Add("http://h:1/s/echo", "http://h:1/s/echo/x")
	f.Add("https://", "https://any:1/a/../b")
	f.Add("http://h:1", "http://h:1/%2e%2e")
	c := &Config{Modules: map[string]*ModuleConfig{}}
	def := ModuleConfig{}
	def.target = &TargetConfig{Probes: []ProbeConfig{{}}}
	f.Fuzz(func(t *testing.T, entry, target string) {
		a, err := parseAllowedTarget(entry)
		if err != nil {
			return
		}
		c.ProbeAllowedTargets = []string{entry}
		tc, err := def.Target(target)
		if err != nil || !c.ProbeAllowed(tc.BaseURL) {
			return
		}
		// As the probe client builds its request URL.
		u, err := url.Parse(tc.BaseURL)
		if err != nil {
			t.Fatalf("accepted %q does not parse: %v", tc.BaseURL, err)
		}
		u.Path = strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/v1") + "/v1/chat/completions"
		u.RawPath = ""
		sent := []string{u.String(), tc.BaseURL + "/v1/models", tc.BaseURL + "/metrics"}
		for _, s := range sent {
			su, err := url.Parse(s)
			if err != nil {
				t.Fatalf("request URL %q from accepted %q does not parse: %v", s, tc.BaseURL, err)
			}
			if su.Scheme != a.scheme || a.host != "" && strings.ToLower(su.Host) != a.host {
				t.Fatalf("accepted %q (entry %q) is sent to %s://%s", tc.BaseURL, entry, su.Scheme, su.Host)
			}
			if a.host == "" {
				continue
			}
			once, err := url.PathUnescape(su.EscapedPath())
			if err != nil {
				t.Fatalf("request path %q of accepted %q does not decode: %v", su.EscapedPath(), tc.BaseURL, err)
			}
			twice, err := url.PathUnescape(once)
			if err != nil {
				twice = once
			}
			resolved := []string{once, twice}
			if !strings.Contains(su.EscapedPath(), "%") {
				resolved = append(resolved, su.EscapedPath())
			}
			for _, p := range resolved {
				r := path.Clean("/" + strings.ReplaceAll(p, `\`, "/"))
				if a.path != "" && r != a.path && !strings.HasPrefix(r, a.path+"/") {
					t.Fatalf("accepted %q (entry %q): request path %q resolves to %q, outside %q", tc.BaseURL, entry, su.EscapedPath(), r, a.path)
				}
			}
		}
	})
}
