package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/llmprobe/llmprobe/prober/capfile"

	"go.yaml.in/yaml/v3"
)

// Load reads, parses and validates the configuration file at path. The
// error is an *Error when the file has one problem and Errors, every problem
// in file order, when it has more, e.g.
//
//	llmprobe.yml:12: targets[0].probes[1].rate: must be > 0, got -1
//	llmprobe.yml:14: targets[0].probes[1].arrival: must be one of poisson, gamma, constant, got "gamma2"
//
// Validation goes on past a problem wherever the rest can still be checked:
// every target, probe and field is checked, except that a YAML syntax or type
// error stops at the decoding, and a field that is a consequence of another
// problem (an inherited value of an invalid global section, the default
// max_concurrency of an invalid rate) is not reported again.
//
// At most MaxConfigFileBytes are read: a larger file, or an endless one such
// as /dev/zero, is an error naming the file and the cap.
func Load(path string) (*Config, error) {
	data, err := ReadFile(path, MaxConfigFileBytes)
	if err != nil {
		return nil, readError(path, err, "a configuration file")
	}
	return Parse(data, path)
}

// readError is the *Error of a failed ReadFile of path, a file of the kind
// what ("a configuration file"): the reason a file is not regular, the cap
// it is over, or the open error without the path (Error names the file).
func readError(path string, err error, what string) error {
	var pe *os.PathError
	var te *TooLargeError
	var ne *capfile.NotRegularError
	switch {
	case errors.As(err, &ne):
		err = errors.New(ne.Reason())
	case errors.As(err, &te):
		err = fmt.Errorf("the file is larger than %v, the cap on %s", ByteSize(te.Limit), what)
	case errors.As(err, &pe):
		err = pe.Err
	}
	return &Error{File: path, Err: err}
}

// TooLargeError is the error of ReadFile for a file over its cap.
type TooLargeError struct {
	Path  string
	Limit int64
}

// Error says which file is over which cap.
func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is larger than %v", e.Path, ByteSize(e.Limit))
}

// ReadFile reads the file at path, at most limit bytes: a larger file, or
// an endless one such as /dev/zero or a FIFO fed forever, is a
// *TooLargeError once limit+1 bytes are read. A FIFO or socket is refused
// before it is opened (a *capfile.NotRegularError: opening a FIFO blocks
// until a writer appears). Other errors are os.Open's and Read's
// (*os.PathError). Use it for every file llmprobe reads whose size a user
// controls.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := capfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := capfile.ReadAll(f, path, limit)
	var te *capfile.TooLargeError
	if errors.As(err, &te) {
		return nil, &TooLargeError{Path: path, Limit: limit}
	}
	return data, err
}

// Parse parses and validates a configuration; filename names it in errors
// (an *Error or Errors, as for Load), and relative api_key_file paths are
// relative to its directory.
func Parse(data []byte, filename string) (*Config, error) {
	c := &Config{Global: DefaultGlobalConfig}
	es := append(httpConfigProblems(filename, data), discoveryProblems(filename, data)...)
	es = append(es, sdRedirectProblems(filename, data)...)
	if es = append(es, tracingTLSProblems(filename, data)...); len(es) > 0 {
		// prometheus/common validates while decoding: checked first, so
		// that its errors name their line and field.
		return nil, errorOf(es)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		yerr := newNodeIndex(data).yamlErrors(filename, err)
		if strings.Contains(err.Error(), "excessive aliasing") {
			return nil, yerr
		}
		return nil, withIntegerProblems(integerProblems(filename, data), yerr)
	}
	if ints := integerProblems(filename, data); len(ints) > 0 {
		// Like yaml's type errors, these stop at the decoding.
		return nil, errorOf(ints)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &Error{File: filename, Line: extra.Line, Err: errors.New("only one YAML document is allowed")}
	} else if !errors.Is(err, io.EOF) {
		return nil, newNodeIndex(data).yamlErrors(filename, err)
	}
	if err := c.resolve(filepath.Dir(filename)); err != nil {
		return nil, errorOf(located(filename, newNodeIndex(data), err))
	}
	return c, nil
}

// withIntegerProblems merges integer problems into the error of yaml's
// decoder (an *Error or Errors), in line order; yaml's own problem of the
// same field wins.
func withIntegerProblems(ints []*Error, err error) error {
	if len(ints) == 0 {
		return err
	}
	var es []*Error
	var many Errors
	var one *Error
	switch {
	case errors.As(err, &many):
		es = append(es, many...)
	case errors.As(err, &one):
		es = append(es, one)
	default:
		return err
	}
	for _, ie := range ints {
		dup := false
		for _, e := range es {
			dup = dup || e.Line == ie.Line && e.Path == ie.Path
		}
		if !dup {
			es = append(es, ie)
		}
	}
	sort.SliceStable(es, func(i, j int) bool { return es[i].Line < es[j].Line })
	return errorOf(es)
}

// ForTarget returns the configuration of one target probed with
// DefaultProbe: the target is named after the URL's host:port and path
// (http://gw:8080/llama is gw:8080_llama, so two targets on one host get
// two names and two seeds; characters not allowed in a name become _), the
// api is client.DefaultAPI when empty, and
// everything else is a default. Errors name the field (base_url, api): an
// *Error, or Errors when both are invalid.
// Setting Name afterwards keeps the seed derived from the original name.
func ForTarget(baseURL, model, api string) (*Config, error) {
	t := DefaultTargetConfig
	t.Name = nameFromURL(baseURL)
	t.BaseURL = baseURL
	t.Model = model
	if api != "" {
		t.API = api
	}
	c := &Config{Global: DefaultGlobalConfig, Targets: []TargetConfig{t}}
	if err := c.resolve(""); err != nil {
		es := located("", nil, err)
		for _, e := range es {
			e.Path = strings.TrimPrefix(e.Path, "targets[0].")
		}
		return nil, errorOf(es)
	}
	return c, nil
}

func nameFromURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return "target"
	}
	b := []byte(u.Host + strings.TrimRight(u.EscapedPath(), "/"))
	for i, ch := range b {
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || strings.IndexByte("_.:-", ch) >= 0) {
			b[i] = '_'
		}
	}
	return string(b)
}

// located turns a validation error (one or several joined) into *Error
// values with their lines, in file order.
func located(file string, idx *nodeIndex, err error) []*Error {
	var es []*Error
	for _, fe := range flatten(err) {
		e := &Error{File: file, Path: fe.Key, Err: fe.Err}
		if idx != nil {
			e.Line = idx.line(fe.Key)
		}
		es = append(es, e)
	}
	sort.SliceStable(es, func(i, j int) bool { return es[i].Line < es[j].Line })
	return es
}
