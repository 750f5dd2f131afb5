package fingerprint

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/prometheus/common/config"

	"github.com/llmprobe/llmprobe/prober/capfile"
)

// HTTPConfig is the non-secret summary of the target's HTTP client
// configuration (a target's http_config, --http.config.file), so that two
// runs through different TLS settings, credentials kinds, headers or
// proxies can be told apart. It holds no secret: no credential, header
// value, key material or proxy userinfo, and the CA and certificate only
// by their SHA-256.
type HTTPConfig struct {
	// Scheme is the target URL's scheme ("http" or "https").
	Scheme string `json:"scheme"`
	// TLS is the TLS configuration (nil for an http target that sets
	// none).
	TLS *TLSSummary `json:"tls,omitempty"`
	// Auth is the kind of credentials sent: "none", "bearer" (an API key,
	// bearer_token or authorization of type Bearer), "basic", "oauth2", or
	// another authorization type lowercased. Never a username.
	Auth string `json:"auth"`
	// Headers are the names of http_headers (canonical, sorted; never
	// their values) and ProxyConnectHeaders those of proxy_connect_header.
	Headers             []string `json:"headers,omitempty"`
	ProxyConnectHeaders []string `json:"proxy_connect_headers,omitempty"`
	// Proxy is the proxy, redacted to scheme://host[:port], "environment"
	// (proxy_from_environment) or "" (none).
	Proxy string `json:"proxy,omitempty"`
}

// TLSSummary is the non-secret part of a TLS configuration.
type TLSSummary struct {
	// CASHA256 and CertSHA256 are the hex SHA-256 of the CA and the client
	// certificate (inline or ca_file / cert_file, read now), "" when not
	// set, NotRecorded when the file could not be read. The key is never
	// read.
	CASHA256   string `json:"ca_sha256,omitempty"`
	CertSHA256 string `json:"cert_sha256,omitempty"`
	// ServerName, InsecureSkipVerify and MinVersion are as configured
	// (MinVersion "" when not set, e.g. "TLS12").
	ServerName         string `json:"server_name,omitempty"`
	InsecureSkipVerify bool   `json:"insecure_skip_verify"`
	MinVersion         string `json:"min_version,omitempty"`
}

// maxHashedFileBytes caps the CA or certificate file SummarizeHTTP hashes:
// 16 MiB (a system CA bundle is about 200 KiB); a larger file is
// NotRecorded.
const maxHashedFileBytes = 16 << 20

// SummarizeHTTP returns the summary of cfg for a target at targetURL;
// apiKey says whether an API key (sent as a bearer token) is set besides
// cfg. It reads the CA and certificate files to hash them, and nothing
// else.
func SummarizeHTTP(targetURL string, cfg config.HTTPClientConfig, apiKey bool) *HTTPConfig {
	h := &HTTPConfig{Scheme: NotRecorded, Auth: "none"}
	if u, err := url.Parse(targetURL); err == nil && u.Scheme != "" {
		h.Scheme = strings.ToLower(u.Scheme)
	}
	t := cfg.TLSConfig
	tls := &TLSSummary{
		CASHA256:           hashInlineOrFile(t.CA, t.CAFile),
		CertSHA256:         hashInlineOrFile(t.Cert, t.CertFile),
		ServerName:         t.ServerName,
		InsecureSkipVerify: t.InsecureSkipVerify,
		MinVersion:         t.MinVersion.String(),
	}
	if h.Scheme == "https" || *tls != (TLSSummary{}) {
		h.TLS = tls
	}
	switch {
	case cfg.BasicAuth != nil:
		h.Auth = "basic"
	case cfg.OAuth2 != nil:
		h.Auth = "oauth2"
	case cfg.Authorization != nil && cfg.Authorization.Type != "" && !strings.EqualFold(cfg.Authorization.Type, "Bearer"):
		h.Auth = strings.ToLower(cfg.Authorization.Type)
	case cfg.Authorization != nil || cfg.BearerToken != "" || cfg.BearerTokenFile != "" || apiKey:
		h.Auth = "bearer"
	}
	if cfg.HTTPHeaders != nil {
		h.Headers = headerNames(cfg.HTTPHeaders.Headers)
	}
	h.ProxyConnectHeaders = headerNames(cfg.ProxyConnectHeader)
	switch u := cfg.ProxyURL.URL; {
	case u != nil && u.Host != "":
		h.Proxy = strings.ToLower(u.Scheme) + "://" + u.Host
	case u != nil:
		h.Proxy = NotRecorded
	case cfg.ProxyFromEnvironment:
		h.Proxy = "environment"
	}
	return h
}

// headerNames returns the canonical names of a header map's keys, sorted
// and without duplicates (nil for none).
func headerNames[V any](m map[string]V) []string {
	if len(m) == 0 {
		return nil
	}
	out := make([]string, 0, len(m))
	for n := range m {
		out = append(out, http.CanonicalHeaderKey(n))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// hashInlineOrFile hashes inline content, else the file (NotRecorded when
// unreadable or too large), else returns "".
func hashInlineOrFile(inline, file string) string {
	if inline != "" {
		sum := sha256.Sum256([]byte(inline))
		return hex.EncodeToString(sum[:])
	}
	if file == "" {
		return ""
	}
	f, err := capfile.OpenRegular(file) // a FIFO's open would block
	if err != nil {
		return NotRecorded
	}
	defer f.Close()
	hs := sha256.New()
	n, err := io.Copy(hs, io.LimitReader(f, maxHashedFileBytes+1))
	if err != nil || n > maxHashedFileBytes {
		return NotRecorded
	}
	return hex.EncodeToString(hs.Sum(nil))
}

// String returns the summary on one line, in a fixed order, with hashes
// shortened to 12 hex digits: what `compare` shows when the sides differ.
func (h *HTTPConfig) String() string {
	if h == nil {
		return NotRecorded
	}
	parts := []string{"scheme=" + h.Scheme}
	if t := h.TLS; t != nil {
		var tp []string
		add := func(k, v string) {
			if v != "" {
				tp = append(tp, k+"="+v)
			}
		}
		add("ca_sha256", short(t.CASHA256))
		add("cert_sha256", short(t.CertSHA256))
		add("server_name", t.ServerName)
		add("insecure_skip_verify", fmt.Sprint(t.InsecureSkipVerify))
		add("min_version", t.MinVersion)
		parts = append(parts, "tls("+strings.Join(tp, " ")+")")
	}
	parts = append(parts, "auth="+h.Auth)
	if len(h.Headers) > 0 {
		parts = append(parts, "headers="+strings.Join(h.Headers, ","))
	}
	if len(h.ProxyConnectHeaders) > 0 {
		parts = append(parts, "proxy_connect_headers="+strings.Join(h.ProxyConnectHeaders, ","))
	}
	if h.Proxy != "" {
		parts = append(parts, "proxy="+h.Proxy)
	}
	return strings.Join(parts, " ")
}

// short shortens a hex hash to 12 digits (other values as they are).
func short(s string) string {
	if len(s) == 64 {
		return s[:12]
	}
	return s
}
