package config

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// allowedTarget is one parsed entry of probe_allowed_targets.
type allowedTarget struct {
	scheme, host, path string // host "" matches any host of the scheme
}

// parseAllowedTarget parses an entry of probe_allowed_targets: a URL prefix
// http(s)://host[:port][/path], or "http://" / "https://" alone (any host
// of that scheme). No credentials, query or fragment, and a path that
// checkURLPath takes.
func parseAllowedTarget(s string) (allowedTarget, error) {
	if len(s) > MaxProbeTargetLen {
		return allowedTarget{}, fmt.Errorf("longer than %d bytes", MaxProbeTargetLen)
	}
	if s == "http://" || s == "https://" {
		return allowedTarget{scheme: strings.TrimSuffix(s, "://")}, nil
	}
	if err := validateURL(s, false); err != nil {
		return allowedTarget{}, fmt.Errorf("%q: %w (write a URL prefix such as http://vllm:8000, or http:// to allow any host)", s, err)
	}
	if err := checkURLPath(s); err != nil {
		return allowedTarget{}, fmt.Errorf("%q: %w", s, err)
	}
	u, _ := url.Parse(s)
	return allowedTarget{scheme: u.Scheme, host: strings.ToLower(u.Host), path: strings.TrimRight(u.Path, "/")}, nil
}

// checkURLPath refuses, in a URL that validateURL took, the path forms a
// server or a proxy may resolve to another path than the one they seem to
// name, so that comparing decoded paths segment by segment is sound: a
// segment of dots only ("." and ".." above all), raw or percent-encoded in
// any case (%2e, %2E, .%2e); an encoded / (%2F) or \ (%5C), or a raw \;
// an encoded % (%25: a second decoding would make the others); a ;
// (path parameters: some servers read "..;" as ".."); an empty segment
// (//); a control character, raw or encoded. The error names the form.
// A trailing / is not a segment.
func checkURLPath(raw string) error {
	if strings.ContainsRune(raw, '\\') {
		return errors.New(`a backslash (\) is not allowed in a target URL`)
	}
	rest := raw[strings.Index(raw, "://")+len("://"):]
	i := strings.IndexByte(rest, '/')
	if i < 0 {
		return nil
	}
	p := rest[i:]
	if j := strings.IndexAny(p, "?#"); j >= 0 {
		p = p[:j]
	}
	p = strings.TrimRight(p, "/")
	lower := strings.ToLower(p)
	for _, f := range []struct{ enc, what string }{
		{"%2f", "an encoded / (%2F)"},
		{"%5c", `an encoded \ (%5C)`},
		{"%25", "an encoded % (%25)"},
	} {
		if strings.Contains(lower, f.enc) {
			return fmt.Errorf("the path has %s: it could name another path once decoded", f.what)
		}
	}
	if strings.ContainsRune(p, ';') {
		return errors.New(`the path has a ";" (path parameters: some servers read "..;" as "..")`)
	}
	if p == "" {
		return nil
	}
	for _, seg := range strings.Split(p[1:], "/") {
		if seg == "" {
			return errors.New("the path has an empty segment (//)")
		}
		dec, err := url.PathUnescape(seg)
		if err != nil {
			return fmt.Errorf("the path has an invalid escape in segment %q", seg)
		}
		if strings.IndexFunc(dec, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
			return fmt.Errorf("the path has a control character in segment %q", seg)
		}
		// U+FF0E (fullwidth full stop) is a dot to servers that fold
		// Unicode compatibility forms.
		if strings.Trim(dec, ".\uff0e") == "" {
			return fmt.Errorf("the path has a %q segment (dot segments, raw or encoded, are not allowed: write the path they stand for)", seg)
		}
	}
	return nil
}

// ProbeAllowed reports whether GET /probe may reach target. A target whose
// path checkURLPath refuses is never allowed. With probe_allowed_targets
// set, target must match an entry: the same scheme, the same host[:port]
// (any host for "http://" or "https://" alone) and a path under the
// entry's path, compared decoded and segment by segment (/llm allows /llm
// and /llm/x, not /llmx). Without it, only the base_url of a configured
// target is allowed: /probe then reaches nothing the daemon does not
// already probe (docs/security.md).
func (c *Config) ProbeAllowed(target string) bool {
	target = strings.TrimRight(target, "/")
	u, err := url.Parse(target)
	if err != nil || u.User != nil || validateURL(target, false) != nil || checkURLPath(target) != nil {
		return false
	}
	path := strings.TrimRight(u.Path, "/")
	if len(c.ProbeAllowedTargets) == 0 {
		for _, t := range c.Targets {
			if tu, err := url.Parse(t.BaseURL); err == nil && tu.Scheme == u.Scheme &&
				strings.EqualFold(tu.Host, u.Host) && strings.TrimRight(tu.Path, "/") == path {
				return true
			}
		}
		return false
	}
	for _, s := range c.ProbeAllowedTargets {
		a, err := parseAllowedTarget(s)
		if err != nil || a.scheme != u.Scheme {
			continue
		}
		if a.host == "" {
			return true
		}
		if a.host == strings.ToLower(u.Host) && underPath(path, a.path) {
			return true
		}
	}
	return false
}

// underPath reports whether path (decoded, without a trailing /) is
// prefix or below it, segment by segment.
func underPath(path, prefix string) bool {
	ps, as := strings.Split(path, "/"), strings.Split(prefix, "/")
	if len(ps) < len(as) {
		return false
	}
	for i := range as {
		if ps[i] != as[i] {
			return false
		}
	}
	return true
}
