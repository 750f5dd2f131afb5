package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/prometheus/common/config"
	"go.yaml.in/yaml/v3"

	"github.com/llmprobe/llmprobe/prober/client"
)

// A target's http_config is prometheus/common's config.HTTPClientConfig,
// the one Prometheus, Alertmanager and the exporters use: TLS, bearer
// token, basic auth, OAuth2, proxy and http_headers. llmprobe checks it
// at load (its own Validate, the files it names, what llmprobe does not
// do) and builds every client of the target from it
// (client.NewHTTPClient).

// errFollowRedirects is why follow_redirects: true is refused.
var errFollowRedirects = errors.New("llmprobe never follows redirects (a redirect is a failed request naming its " +
	"Location, so that no credential goes to another address and a wrong base_url shows): remove follow_redirects")

// errEnableHTTP2 is why enable_http2: true is refused.
var errEnableHTTP2 = errors.New("llmprobe speaks HTTP/1.1 to targets (one stream per connection, as vllm bench serve " +
	"measures): remove enable_http2")

// httpConfigPathRE matches the field path of a target's http_config.
var httpConfigPathRE = regexp.MustCompile(`^(targets\[\d+\]|modules\.[^.]+)\.http_config$`)

// httpConfigProblems checks every targets[i].http_config mapping of a
// document before the whole is decoded: prometheus/common validates an
// HTTPClientConfig while it is decoded, and yaml would report such a
// failure without its line or field. It returns an *Error with the line
// and field path for each http_config that its own Validate refuses or
// that sets follow_redirects or enable_http2 to true. Type errors and
// unknown keys are left to the strict decoding.
func httpConfigProblems(file string, data []byte) []*Error {
	if !bytes.Contains(data, []byte("http_config")) {
		return nil
	}
	var es []*Error
	for _, e := range newNodeIndex(data).entries {
		if httpConfigPathRE.MatchString(e.path) {
			es = append(es, checkHTTPConfigNode(file, e.value, e.path, e.keyLine)...)
		}
	}
	return es
}

// checkHTTPConfigNode checks one http_config mapping n at path (line: its
// key's): follow_redirects and enable_http2 must not be true, and
// prometheus/common's own validation must pass.
func checkHTTPConfigNode(file string, n *yaml.Node, path string, line int) []*Error {
	n = resolveAlias(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	var es []*Error
	walkMapping(n, path, nil, func(key string, v *yaml.Node, p string) {
		var on bool
		if v = resolveAlias(v); v == nil || v.Kind != yaml.ScalarNode || v.Decode(&on) != nil || !on {
			return
		}
		switch key {
		case "follow_redirects":
			es = append(es, &Error{File: file, Line: v.Line, Path: p, Err: errFollowRedirects})
		case "enable_http2":
			es = append(es, &Error{File: file, Line: v.Line, Path: p, Err: errEnableHTTP2})
		}
	})
	if len(es) > 0 {
		return es
	}
	var hc config.HTTPClientConfig
	err := n.Decode(&hc)
	var te *yaml.TypeError
	if err != nil && !errors.As(err, &te) {
		es = append(es, &Error{File: file, Line: line, Path: path, Err: errors.New(strings.TrimPrefix(err.Error(), "yaml: "))})
	}
	return es
}

// validateHTTPConfig checks what llmprobe adds to an http_config's own
// Validate (which ran while it was decoded): one source of credentials,
// and no secret references (llmprobe has no secret manager).
func (t *TargetConfig) validateHTTPConfig() error {
	h := &t.HTTPConfig
	var l problems
	if t.APIKeyFile != "" || t.APIKeyEnv != "" {
		var in []string
		if h.Authorization != nil || h.BearerToken != "" || h.BearerTokenFile != "" {
			in = append(in, "authorization (bearer_token)")
		}
		if h.BasicAuth != nil {
			in = append(in, "basic_auth")
		}
		if h.OAuth2 != nil {
			in = append(in, "oauth2")
		}
		if len(in) > 0 {
			key := "api_key_file"
			if t.APIKeyFile == "" {
				key = "api_key_env"
			}
			l.add("http_config", fmt.Errorf("ambiguous credentials: %s and http_config's %s both set the Authorization "+
				"header; keep one", key, strings.Join(in, ", ")))
		}
	}
	refs := map[string]string{"tls_config.ca_ref": h.TLSConfig.CARef, "tls_config.cert_ref": h.TLSConfig.CertRef,
		"tls_config.key_ref": h.TLSConfig.KeyRef}
	if a := h.Authorization; a != nil {
		refs["authorization.credentials_ref"] = a.CredentialsRef
	}
	if b := h.BasicAuth; b != nil {
		refs["basic_auth.username_ref"], refs["basic_auth.password_ref"] = b.UsernameRef, b.PasswordRef
	}
	if o := h.OAuth2; o != nil {
		refs["oauth2.client_secret_ref"], refs["oauth2.client_certificate_key_ref"] = o.ClientSecretRef, o.ClientCertificateKeyRef
	}
	for _, k := range slices.Sorted(maps.Keys(refs)) {
		if refs[k] != "" {
			l.add("http_config."+k, errors.New("secret references need a secret manager, which llmprobe has not: use the *_file form"))
		}
	}
	return l.err()
}

// loadHTTPConfig resolves the http_config's relative files against dir
// (the config file's directory), turns off what llmprobe never does
// (follow_redirects, enable_http2: prometheus/common's defaults), reads the
// secret files once (client.HTTPSecrets: a missing, oversized or
// non-regular file is an error naming its field), checks the TLS files
// (config.NewTLSConfig reads the CA and the client certificate pair) and
// keeps a salted hash of the secrets for RestartKey, so that a reload
// after a secret file changed rebuilds the target's clients (and learns
// the new value to redact).
func (t *TargetConfig) loadHTTPConfig(dir string) error {
	h := &t.HTTPConfig
	if dir != "" {
		h.SetDirectory(dir)
	}
	h.FollowRedirects, h.EnableHTTP2 = false, false
	var l problems
	secrets, err := client.HTTPSecrets(*h)
	for _, fe := range flattenHTTP(err) {
		l.add("http_config."+fe.Field, fe.Err)
	}
	tlsOK := true
	for _, f := range []struct{ field, path string }{
		{"ca_file", h.TLSConfig.CAFile}, {"cert_file", h.TLSConfig.CertFile}, {"key_file", h.TLSConfig.KeyFile},
	} {
		if f.path == "" {
			continue
		}
		if err := regularFile(f.path); err != nil {
			l.add("http_config.tls_config."+f.field, err)
			tlsOK = false
		}
	}
	if tlsOK {
		if _, err := config.NewTLSConfig(&h.TLSConfig); err != nil {
			l.add("http_config.tls_config", err)
		}
	}
	if err := l.err(); err != nil {
		return err
	}
	t.httpHash = ""
	for _, sec := range secrets {
		if sec.File != "" {
			t.secretFiles = append(t.secretFiles, sec.File)
		}
	}
	if b := h.BasicAuth; b != nil && b.UsernameFile != "" {
		t.secretFiles = append(t.secretFiles, b.UsernameFile)
	}
	if len(secrets) > 0 {
		s := sha256.New()
		s.Write(keySalt)
		for _, sec := range secrets {
			fmt.Fprintf(s, "%s\x00%d\x00%s\x00", sec.Field, len(sec.Value), sec.Value)
		}
		t.httpHash = hex.EncodeToString(s.Sum(nil))
	}
	return nil
}

// flattenHTTP splits a client.HTTPSecrets error into its field errors.
func flattenHTTP(err error) []*client.HTTPConfigError {
	if err == nil {
		return nil
	}
	var out []*client.HTTPConfigError
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	for _, e := range errs {
		var he *client.HTTPConfigError
		if errors.As(e, &he) {
			out = append(out, he)
		} else {
			out = append(out, &client.HTTPConfigError{Err: e})
		}
	}
	return out
}

// regularFile reports an error unless path is a regular file (a FIFO or a
// device would block the load or stream forever).
func regularFile(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	return nil
}

// httpConfigForKey is the http_config as RestartKey digests it: secrets
// print as <secret> in JSON already (their salted hash stands for them);
// the password of proxy_url is redacted too.
func httpConfigForKey(h config.HTTPClientConfig) config.HTTPClientConfig {
	if u := h.ProxyURL.URL; u != nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			cp := *u
			cp.User = url.UserPassword(u.User.Username(), "<secret>")
			h.ProxyURL.URL = &cp
		}
	}
	return h
}

// MaxHTTPConfigFileBytes caps an HTTP client configuration file
// (--http.config.file).
const MaxHTTPConfigFileBytes = 1 << 20

// LoadHTTPConfigFile reads an HTTP client configuration file (a YAML
// config.HTTPClientConfig, as promtool's and the exporters'
// --http.config.file) as a target's http_config is read: strictly
// (unknown keys are errors), validated, relative files resolved against
// the file's directory, follow_redirects and enable_http2 refused when
// true, no secret references, every secret file and TLS file checked.
// Errors are *Error (or Errors) naming the file, the line and the field,
// e.g. "http.yml:3: basic_auth.password_file: open ...: no such file".
func LoadHTTPConfigFile(path string) (config.HTTPClientConfig, error) {
	var zero config.HTTPClientConfig
	data, err := ReadFile(path, MaxHTTPConfigFileBytes)
	if err != nil {
		return zero, readError(path, err, "an HTTP config file")
	}
	idx := newNodeIndex(data)
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return zero, idx.yamlErrors(path, err)
	}
	if len(doc.Content) > 0 {
		if es := checkHTTPConfigNode(path, doc.Content[0], "", doc.Content[0].Line); len(es) > 0 {
			return zero, errorOf(es)
		}
	}
	var h config.HTTPClientConfig
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&h); err != nil && !errors.Is(err, io.EOF) {
		return zero, idx.yamlErrors(path, err)
	}
	t := TargetConfig{HTTPConfig: h}
	var l problems
	l.add("", t.validateHTTPConfig())
	if len(l) == 0 {
		l.add("", t.loadHTTPConfig(filepath.Dir(path)))
	}
	if err := l.err(); err != nil {
		var es []*Error
		for _, fe := range flatten(err) {
			p := strings.TrimPrefix(strings.TrimPrefix(fe.Key, "http_config"), ".")
			es = append(es, &Error{File: path, Line: idx.line(p), Path: p, Err: fe.Err})
		}
		return zero, errorOf(es)
	}
	return t.HTTPConfig, nil
}
