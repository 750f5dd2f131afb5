package simulator

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
)

// What a gateway in front of a server asks for, simulated: TLS with a
// certificate (a generated one for tests and demos), required headers and
// vLLM's own --api-key.

// RequiredHeader is a header every request must carry (a line of
// Config.RequireHeaders).
type RequiredHeader struct {
	Name, Value string
}

// ParseRequiredHeader parses "Name: value" (the --require-header form).
func ParseRequiredHeader(s string) (RequiredHeader, error) {
	name, value, ok := strings.Cut(s, ":")
	name, value = strings.TrimSpace(name), strings.TrimSpace(value)
	if !ok || name == "" || value == "" || strings.ContainsAny(name, " \t\r\n") || strings.ContainsAny(value, "\r\n") {
		return RequiredHeader{}, fmt.Errorf("--require-header must be \"Name: value\", got %q", s)
	}
	return RequiredHeader{Name: http.CanonicalHeaderKey(name), Value: value}, nil
}

// validateGateway checks the TLS and auth settings.
func (c Config) validateGateway() error {
	switch {
	case c.TLSGenerateDir != "" && (c.TLSCertFile != "" || c.TLSKeyFile != ""):
		return errors.New("--tls.generate writes its own certificate: give it or --tls.cert-file/--tls.key-file, not both")
	case (c.TLSCertFile == "") != (c.TLSKeyFile == ""):
		return errors.New("--tls.cert-file and --tls.key-file go together")
	case strings.ContainsAny(c.APIKey, " \t\r\n"):
		return errors.New("--api-key must not contain spaces or line breaks")
	}
	_, err := c.requiredHeaders()
	return err
}

// requiredHeaders parses RequireHeaders.
func (c Config) requiredHeaders() ([]RequiredHeader, error) {
	var out []RequiredHeader
	for _, line := range strings.Split(c.RequireHeaders, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		h, err := ParseRequiredHeader(line)
		if err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, nil
}

// addGatewayFlags adds the TLS and auth flags.
func addGatewayFlags(cmd *kingpin.CmdClause, c *Config) {
	cmd.Flag("tls.cert-file", "Serve HTTPS with this PEM certificate (with --tls.key-file).").StringVar(&c.TLSCertFile)
	cmd.Flag("tls.key-file", "The PEM private key of --tls.cert-file.").StringVar(&c.TLSKeyFile)
	cmd.Flag("tls.generate", "Write a new self-signed CA (ca.pem) and a certificate for 127.0.0.1, ::1 and localhost "+
		"signed by it (cert.pem, key.pem) into this directory, and serve HTTPS with them; give ca.pem to the client "+
		"(http_config tls_config.ca_file).").StringVar(&c.TLSGenerateDir)
	cmd.Flag("require-header", "A header every request must carry, \"Name: value\" (repeatable), as a gateway in front "+
		"of the server requires: 401 without it. The 401 echoes the value received, as some gateways do.").
		SetValue(&headerFlag{&c.RequireHeaders})
	cmd.Flag("api-key", "Require \"Authorization: Bearer KEY\" on the /v1 routes, as vLLM's --api-key: 401 "+
		"{\"error\": \"Unauthorized\"} otherwise.").StringVar(&c.APIKey)
}

// headerFlag is the repeatable --require-header.
type headerFlag struct{ p *string }

func (f *headerFlag) Set(s string) error {
	h, err := ParseRequiredHeader(s)
	if err != nil {
		return err
	}
	if *f.p != "" {
		*f.p += "\n"
	}
	*f.p += h.Name + ": " + h.Value
	return nil
}

func (f *headerFlag) String() string { return strings.ReplaceAll(*f.p, "\n", ", ") }

// IsCumulative makes the flag repeatable.
func (f *headerFlag) IsCumulative() bool { return true }

// gateway wraps the API with the required headers (every path: a gateway
// stands in front of the whole server) and the API key (the /v1 routes, as
// vLLM's AuthenticationMiddleware). Without either it returns next.
func (s *Simulator) gateway(next http.Handler) http.Handler {
	required, _ := s.cfg.requiredHeaders() // Validate checked them
	if len(required) == 0 && s.cfg.APIKey == "" {
		return next
	}
	want := "Bearer " + s.cfg.APIKey
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, h := range required {
			got := r.Header.Get(h.Name)
			if subtle.ConstantTimeCompare([]byte(got), []byte(h.Value)) != 1 {
				msg := "missing header " + h.Name
				if got != "" {
					msg = fmt.Sprintf("wrong value for header %s: %q", h.Name, got)
				}
				writeJSON(w, http.StatusUnauthorized, map[string]any{"error": map[string]string{"message": msg, "type": "Unauthorized"}})
				return
			}
		}
		if s.cfg.APIKey != "" && r.Method != http.MethodOptions && strings.HasPrefix(r.URL.Path, "/v1") &&
			subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte(want)) != 1 {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "Unauthorized"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// loadTLS prepares the TLS listener's configuration: it generates the
// certificate first when TLSGenerateDir is set. Nil without TLS.
func (c *Config) loadTLS() (*tls.Config, error) {
	if c.TLSGenerateDir != "" {
		certs, err := GenerateCerts(c.TLSGenerateDir)
		if err != nil {
			return nil, err
		}
		c.TLSCertFile, c.TLSKeyFile = certs.CertFile, certs.KeyFile
	}
	if c.TLSCertFile == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(c.TLSCertFile, c.TLSKeyFile)
	if err != nil {
		return nil, fmt.Errorf("--tls.cert-file/--tls.key-file: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// Scheme is "https" when the Simulator serves TLS, else "http".
func (s *Simulator) Scheme() string {
	if s.tls != nil {
		return "https"
	}
	return "http"
}

// Certs are the files GenerateCerts writes.
type Certs struct {
	// CAFile is the self-signed CA certificate (PEM) a client trusts.
	CAFile string
	// CertFile and KeyFile are the server's certificate, signed by the CA
	// for 127.0.0.1, ::1 and localhost, and its private key (PEM).
	CertFile, KeyFile string
}

// GenerateCerts writes a new self-signed CA (ca.pem) and a server
// certificate signed by it for 127.0.0.1, ::1 and localhost (cert.pem,
// key.pem, the key readable by the owner only) into dir, creating it. The
// keys are ECDSA P-256; the certificates are valid from an hour ago for 30
// days. For tests and demos: each call makes a new CA.
func GenerateCerts(dir string) (Certs, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Certs{}, fmt.Errorf("--tls.generate: %w", err)
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Certs{}, err
	}
	notBefore := time.Now().Add(-time.Hour)
	serial := func() *big.Int {
		n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
		return n
	}
	ca := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "llmprobe simulator CA " + strconv.FormatInt(time.Now().UnixNano(), 36)},
		NotBefore:             notBefore,
		NotAfter:              notBefore.Add(30 * 24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return Certs{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Certs{}, err
	}
	leaf := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    notBefore,
		NotAfter:     notBefore.Add(30 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return Certs{}, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Certs{}, err
	}
	c := Certs{CAFile: filepath.Join(dir, "ca.pem"), CertFile: filepath.Join(dir, "cert.pem"), KeyFile: filepath.Join(dir, "key.pem")}
	for _, f := range []struct {
		path, typ string
		der       []byte
		mode      os.FileMode
	}{
		{c.CAFile, "CERTIFICATE", caDER, 0o644},
		{c.CertFile, "CERTIFICATE", leafDER, 0o644},
		{c.KeyFile, "PRIVATE KEY", keyDER, 0o600},
	} {
		if err := os.WriteFile(f.path, pem.EncodeToMemory(&pem.Block{Type: f.typ, Bytes: f.der}), f.mode); err != nil {
			return Certs{}, fmt.Errorf("--tls.generate: %w", err)
		}
	}
	return c, nil
}
