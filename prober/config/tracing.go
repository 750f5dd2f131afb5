package config

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/config"
	"go.yaml.in/yaml/v3"
	"golang.org/x/net/http/httpguts"
)

// The OTLP protocols of TracingConfig.Protocol (prober/tracing's).
const (
	TracingProtocolHTTP = "http/protobuf"
	TracingProtocolGRPC = "grpc"
)

// Bounds of the tracing block.
const (
	// MaxTracingHeaders bounds tracing.headers: a collector needs a tenant
	// or an API key, not a page of them.
	MaxTracingHeaders = 32
	// MaxTracingHeaderBytes bounds the name plus the value of one header.
	MaxTracingHeaderBytes = 8 << 10
	// MaxTracingTimeout bounds tracing.timeout, the limit of one export.
	MaxTracingTimeout = 5 * time.Minute
	// MinTracingSampleRatio bounds tracing.sample_ratio from below (one
	// request in a million), as serve --tracing.sample-ratio.
	MinTracingSampleRatio = 1e-6
)

// TracingConfig is the top-level tracing block: the OTLP collector the
// daemon exports its spans to (docs/tracing.md). The daemon reads it once,
// at start: a reload that changes it is applied except for this block (a
// warning says so). serve's --tracing.* flags override its keys; the
// standard OTEL_EXPORTER_OTLP_* variables fill in what neither sets.
type TracingConfig struct {
	// Endpoint is the collector (http://host:4318 for http/protobuf;
	// host:4317 or http(s)://host:4317 for grpc). Setting it turns tracing
	// on; without it the block only configures what
	// serve --tracing.enabled or --tracing.endpoint turns on.
	Endpoint string `yaml:"endpoint,omitempty"`
	// Protocol is http/protobuf (default) or grpc.
	Protocol string `yaml:"protocol,omitempty"`
	// Insecure exports without TLS (an http:// endpoint never uses it).
	Insecure bool `yaml:"insecure,omitempty"`
	// SampleRatio is the share of probe requests traced, the default of
	// every target's trace_sample_ratio: in [MinTracingSampleRatio, 1];
	// 0 or left out: 1.
	SampleRatio float64 `yaml:"sample_ratio,omitempty"`
	// Headers are sent with every export (a tenant id, an API key); their
	// values are secrets: never logged, <secret> on the /config page.
	Headers map[string]config.Secret `yaml:"headers,omitempty"`
	// HeaderFiles are headers whose value is read from a file (a mounted
	// Kubernetes secret), read once at load, trimmed of surrounding space;
	// relative paths are relative to the config file's directory. A name
	// is in Headers or HeaderFiles, not both.
	HeaderFiles map[string]string `yaml:"header_files,omitempty"`
	// fileHeaders are HeaderFiles' values as read at load.
	fileHeaders map[string]config.Secret
	// TLSConfig is prometheus/common's (ca_file, cert_file, key_file,
	// server_name, insecure_skip_verify, min_version), for both the HTTP
	// and the gRPC exporter; relative files are relative to the config
	// file's directory.
	TLSConfig config.TLSConfig `yaml:"tls_config,omitempty"`
	// Timeout bounds one export (0 or left out: the exporter's 10s; at most
	// MaxTracingTimeout).
	Timeout time.Duration `yaml:"timeout,omitempty"`
}

// IsZero reports whether the block is left out (or empty).
func (t TracingConfig) IsZero() bool {
	return t.Equal(TracingConfig{})
}

// Equal reports whether t and o configure the same exporter (header values
// compared too).
func (t TracingConfig) Equal(o TracingConfig) bool {
	return t.Endpoint == o.Endpoint && t.Protocol == o.Protocol && t.Insecure == o.Insecure &&
		t.SampleRatio == o.SampleRatio && t.TLSConfig == o.TLSConfig && t.Timeout == o.Timeout &&
		maps.Equal(t.Headers, o.Headers) && maps.Equal(t.HeaderFiles, o.HeaderFiles) && maps.Equal(t.fileHeaders, o.fileHeaders)
}

// allHeaders returns Headers and the values HeaderFiles held at load.
func (t TracingConfig) allHeaders() map[string]config.Secret {
	m := make(map[string]config.Secret, len(t.Headers)+len(t.fileHeaders))
	maps.Copy(m, t.Headers)
	maps.Copy(m, t.fileHeaders)
	return m
}

// StringHeaders returns the headers (Headers and HeaderFiles' values) as
// the exporters take them.
func (t TracingConfig) StringHeaders() map[string]string {
	all := t.allHeaders()
	if len(all) == 0 {
		return nil
	}
	m := make(map[string]string, len(all))
	for k, v := range all {
		m[k] = string(v)
	}
	return m
}

// HeaderNames returns the headers' names, sorted (for the log).
func (t TracingConfig) HeaderNames() []string { return slices.Sorted(maps.Keys(t.allHeaders())) }

// HeaderValues returns the headers' values, for a redactor.
func (t TracingConfig) HeaderValues() []string {
	all := t.allHeaders()
	var out []string
	for _, k := range slices.Sorted(maps.Keys(all)) {
		if v := string(all[k]); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// Validate checks the block's values (the TLS files are checked by
// resolve).
func (t TracingConfig) Validate() error {
	var l problems
	if t.Endpoint != "" {
		l.add("endpoint", validateTracingEndpoint(t.Endpoint))
	}
	switch t.Protocol {
	case "", TracingProtocolHTTP, TracingProtocolGRPC:
	default:
		l.add("protocol", fmt.Errorf("must be %s or %s, got %q", TracingProtocolHTTP, TracingProtocolGRPC, t.Protocol))
	}
	if r := t.SampleRatio; math.IsNaN(r) || r != 0 && (r < MinTracingSampleRatio || r > 1) {
		l.add("sample_ratio", fmt.Errorf("must be in [%g, 1] (0 or left out: 1), got %v", MinTracingSampleRatio, r))
	}
	if t.Timeout < 0 || t.Timeout > MaxTracingTimeout {
		l.add("timeout", fmt.Errorf("must be in (0, %v] (0 or left out: 10s), got %v", MaxTracingTimeout, t.Timeout))
	}
	if n := len(t.Headers) + len(t.HeaderFiles); n > MaxTracingHeaders {
		l.add("headers", fmt.Errorf("at most %d headers (headers and header_files), got %d", MaxTracingHeaders, n))
	}
	for _, k := range slices.Sorted(maps.Keys(t.HeaderFiles)) {
		switch {
		case !httpguts.ValidHeaderFieldName(k):
			l.add("header_files", fmt.Errorf("%q is not a valid HTTP header name", k))
		case t.HeaderFiles[k] == "":
			l.add("header_files."+k, errors.New("needs a file"))
		}
		if _, dup := t.Headers[k]; dup {
			l.add("header_files."+k, errors.New("also in headers: keep one"))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(t.Headers)) {
		v := string(t.Headers[k])
		switch {
		case !httpguts.ValidHeaderFieldName(k):
			l.add("headers", fmt.Errorf("%q is not a valid HTTP header name", k))
		case len(k)+len(v) > MaxTracingHeaderBytes:
			l.add("headers."+k, fmt.Errorf("longer than %d bytes (name and value)", MaxTracingHeaderBytes))
		case !httpguts.ValidHeaderFieldValue(v):
			// The value is a secret: never quoted.
			l.add("headers."+k, errors.New("the value holds a character an HTTP header cannot carry (a control character or a newline)"))
		}
		if http.CanonicalHeaderKey(k) == "Content-Type" || strings.HasPrefix(strings.ToLower(k), "grpc-") {
			l.add("headers."+k, errors.New("set by the exporter itself: remove it"))
		}
	}
	tc := t.TLSConfig
	for _, r := range []struct{ key, v string }{{"ca_ref", tc.CARef}, {"cert_ref", tc.CertRef}, {"key_ref", tc.KeyRef}} {
		if r.v != "" {
			l.add("tls_config."+r.key, errors.New("secret references need a secret manager, which llmprobe has not: use the *_file form"))
		}
	}
	if tc != (config.TLSConfig{}) && t.Insecure {
		l.add("insecure", errors.New("insecure: true exports without TLS, so tls_config would never be used: keep one"))
	}
	return l.err()
}

// validateTracingEndpoint checks a collector address: a URL with an http
// or https scheme and a host, or a bare host:port.
func validateTracingEndpoint(s string) error {
	if !strings.Contains(s, "://") {
		if _, _, err := splitHostPort(s); err != nil {
			return fmt.Errorf("must be a URL (http://host:4318) or host:port, got %q: %w", redactURL(s), err)
		}
		return nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("not a URL: %q", redactURL(s))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("scheme must be http or https, got %q", u.Scheme)
	}
	if u.Host == "" {
		return fmt.Errorf("has no host: %q", redactURL(s))
	}
	if u.User != nil {
		return errors.New("must not carry user info: put credentials in headers")
	}
	return nil
}

func splitHostPort(s string) (string, string, error) {
	u, err := url.Parse("//" + s)
	if err != nil {
		return "", "", errors.New("not host:port")
	}
	if u.Hostname() == "" || u.Port() == "" || u.Path != "" || u.User != nil {
		return "", "", errors.New("not host:port")
	}
	return u.Hostname(), u.Port(), nil
}

// resolve validates the block, resolves tls_config's relative files
// against dir and checks them (config.NewTLSConfig reads the CA and the
// client certificate pair).
func (t *TracingConfig) resolve(dir string) error {
	if err := t.Validate(); err != nil {
		return err
	}
	if err := t.readHeaderFiles(dir); err != nil {
		return err
	}
	tc := &t.TLSConfig
	if *tc == (config.TLSConfig{}) {
		return nil
	}
	if dir != "" {
		tc.SetDirectory(dir)
	}
	var l problems
	for _, f := range []struct{ field, path string }{
		{"ca_file", tc.CAFile}, {"cert_file", tc.CertFile}, {"key_file", tc.KeyFile},
	} {
		if f.path != "" {
			l.add("tls_config."+f.field, regularFile(f.path))
		}
	}
	if len(l) == 0 {
		if _, err := config.NewTLSConfig(tc); err != nil {
			l.add("tls_config", err)
		}
	}
	return l.err()
}

// tracingTLSProblems checks tracing.tls_config before the whole document is
// decoded, as httpConfigProblems does for http_config: prometheus/common
// validates a TLSConfig while decoding it, without its line.
func tracingTLSProblems(file string, data []byte) []*Error {
	if !strings.Contains(string(data), "tls_config") {
		return nil
	}
	var es []*Error
	for _, e := range newNodeIndex(data).entries {
		if e.path != "tracing.tls_config" {
			continue
		}
		n := resolveAlias(e.value)
		if n == nil || n.Kind != yaml.MappingNode {
			continue
		}
		var tc config.TLSConfig
		err := n.Decode(&tc)
		var te *yaml.TypeError
		if err != nil && !errors.As(err, &te) {
			es = append(es, &Error{File: file, Line: e.keyLine, Path: e.path, Err: errors.New(strings.TrimPrefix(err.Error(), "yaml: "))})
		}
	}
	return es
}

// readHeaderFiles reads HeaderFiles (relative to dir) into fileHeaders:
// regular files of at most MaxTracingHeaderBytes, trimmed of surrounding
// space, each a value an HTTP header can carry (never quoted in errors).
func (t *TracingConfig) readHeaderFiles(dir string) error {
	if len(t.HeaderFiles) == 0 {
		return nil
	}
	var l problems
	t.fileHeaders = make(map[string]config.Secret, len(t.HeaderFiles))
	for _, k := range slices.Sorted(maps.Keys(t.HeaderFiles)) {
		path := config.JoinDir(dir, t.HeaderFiles[k])
		t.HeaderFiles[k] = path
		b, err := ReadFile(path, MaxTracingHeaderBytes)
		if err != nil {
			l.add("header_files."+k, readError(path, err, "a header file").(*Error).Err)
			continue
		}
		v := strings.TrimSpace(string(b))
		switch {
		case v == "":
			l.add("header_files."+k, fmt.Errorf("%s is empty", path))
		case !httpguts.ValidHeaderFieldValue(v):
			l.add("header_files."+k, fmt.Errorf("%s holds a character an HTTP header cannot carry (a control character or a newline)", path))
		default:
			t.fileHeaders[k] = config.Secret(v)
		}
	}
	return l.err()
}
