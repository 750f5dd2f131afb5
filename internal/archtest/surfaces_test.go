package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// boundedReader is the one bounded reader (docs/security.md, "Input
// surfaces"): the packages every external byte goes through. Only they
// call os.Open, os.OpenFile, os.ReadFile or io.ReadAll, or build an
// http.Client literal, without a row in readSites.
var boundedReader = map[string]bool{
	"prober/capfile": true, // files: kind checked without blocking, reads capped
	"prober/bounded": true, // HTTP: bodies refused on Content-Length and capped; NoRedirects
}

// readSites are the other calls that read external bytes or build an HTTP
// client, by "file: call", each with why it may: the call is bounded
// another way, reads no input a user or a server controls, or is a tool of
// the repository. TestReadSitesRegistered fails for a call not here (route
// it through prober/capfile or prober/bounded, or add it with why) and for
// a row whose call is gone.
var readSites = map[string]string{
	// Bounded another way.
	"prober/workload/dataset.go: io.ReadAll":   "a ShareGPT dataset read whole from a reader already capped at MaxDatasetBytes (capfile.Open, loadDataset)",
	"prober/workload/tokenizer.go: io.ReadAll": "the first 512 bytes of a /tokenize error answer (io.LimitReader), for its message",
	"prober/sweep/decode.go: io.ReadAll":       "DecodeResult decodes a reader its callers bound (report.Load, compare.Decode: capfile.ReadOwned with MaxFileBytes; bench: its own run)",
	"internal/web/sweeps.go: io.ReadAll":       "a request body under http.MaxBytesReader (MaxSweepBodyBytes, 413 above): the server side",
	"prober/fingerprint/host.go: os.Open":      "/proc/cpuinfo (or the test's stand-in): a kernel file, not an input, read line by line for one key",
	// Writes and listings, not reads of content.
	"internal/artifacts/appender.go: os.OpenFile": "creates a run directory's file for writing (O_WRONLY|O_CREATE|O_EXCL)",
	"internal/artifacts/run.go: os.Open":          "lists a run directory (Readdirnames), reads no file",
	// llmprobe bench: its own child processes and their files.
	"internal/bench/bench.go: http.Client":              "llmprobe bench's client of its own child daemon on loopback (no credentials)",
	"internal/bench/daemon.go: io.ReadAll":              "llmprobe bench reads its own child daemon's /metrics on loopback",
	"internal/bench/measure.go: os.Open":                "llmprobe bench reads the run directories its own sweep child wrote",
	"internal/bench/proc.go: os.ReadFile":               "llmprobe bench reads /proc (kernel files) for its own processes' CPU and memory",
	"internal/bench/proc.go: http.Client":               "llmprobe bench waits for its own child's readiness on loopback (no credentials)",
	"internal/simulator/api.go: io.ReadAll":             "the built-in simulator (a test double) reads a request body under http.MaxBytesReader",
	"internal/simulator/trace.go: os.OpenFile":          "the built-in simulator creates its request trace for writing",
	"internal/simulator/simtest/gateway.go: io.ReadAll": "a test gateway in front of the simulator reads the test's own request bodies on loopback",
	"internal/simulator/simtest/record.go: io.ReadAll":  "a test recorder of the test's own request bodies on loopback",
	// Tools of the repository.
	"dashboards/gen/main.go: os.ReadFile": "the dashboard generator reads the repository's own files",
	"deploy/files.go: os.ReadFile":        "the deployment tests' reader of the repository's own files",
}

// readCall is one call found: file, call ("os.Open", "http.Client") and
// line.
type readCall struct {
	file, call string
	line       int
}

// findReadCalls parses every non-test Go file of the module (go/parser)
// and returns the calls of os.Open, os.OpenFile, os.ReadFile, io.ReadAll,
// ioutil.ReadAll, ioutil.ReadFile and the http.Client composite literals,
// outside the bounded reader's packages.
func findReadCalls(t *testing.T) []readCall {
	t.Helper()
	watched := map[string]map[string]bool{
		"os":        {"Open": true, "OpenFile": true, "ReadFile": true},
		"io":        {"ReadAll": true},
		"io/ioutil": {"ReadAll": true, "ReadFile": true},
		"net/http":  {"Client": true},
	}
	var out []readCall
	walkGoSources(t, func(path string) error {
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if boundedReader[filepath.ToSlash(filepath.Dir(rel))] {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		local := map[string]string{} // local name -> import path, for the watched ones
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if watched[p] == nil {
				continue
			}
			name := p[strings.LastIndex(p, "/")+1:]
			if im.Name != nil {
				name = im.Name.Name
			}
			local[name] = p
		}
		sel := func(e ast.Expr) (string, bool) {
			s, ok := e.(*ast.SelectorExpr)
			if !ok {
				return "", false
			}
			x, ok := s.X.(*ast.Ident)
			if !ok || local[x.Name] == "" || !watched[local[x.Name]][s.Sel.Name] {
				return "", false
			}
			p := local[x.Name]
			return p[strings.LastIndex(p, "/")+1:] + "." + s.Sel.Name, true
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CompositeLit:
				if c, ok := sel(n.Type); ok && c == "http.Client" {
					out = append(out, readCall{rel, c, fset.Position(n.Pos()).Line})
				}
			case *ast.SelectorExpr: // a call, or a function value: f := os.ReadFile
				if c, ok := sel(n); ok && c != "http.Client" {
					out = append(out, readCall{rel, c, fset.Position(n.Pos()).Line})
				}
				return false
			}
			return true
		})
		return nil
	})
	return out
}

// TestReadSitesRegistered is the registry's check (issue 34): every
// os.Open, os.OpenFile, os.ReadFile, io.ReadAll and http.Client literal of
// the module's non-test code is in the bounded reader (prober/capfile,
// prober/bounded) or in readSites with why; and every row of readSites is
// still in the code.
func TestReadSitesRegistered(t *testing.T) {
	found := map[string][]int{}
	for _, c := range findReadCalls(t) {
		k := c.file + ": " + c.call
		found[k] = append(found[k], c.line)
	}
	var keys []string
	for k := range found {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if readSites[k] == "" {
			t.Errorf("%s (line %v): an unregistered reader of external bytes or HTTP client: read through prober/capfile "+
				"(files) or prober/bounded (bodies, bounded.NewClient), or add it to readSites with why it is bounded",
				k, found[k])
		}
	}
	for k := range readSites {
		if found[k] == nil {
			t.Errorf("readSites row %q: no such call any more; remove the row", k)
		}
	}
}

// inputSurface is one input surface of llmprobe (docs/security.md, "Input
// surfaces"): what comes in, its bound and the test that holds it.
type inputSurface struct {
	kind  string // flag, file, YAML, API, SD, response, env
	what  string
	bound string // the bound's constant, "dir.Name"
	test  string // the test that holds it, "dir.TestName"
}

// inputSurfaces is the registry of input surfaces: every row's bound must
// be a constant of the module and its test a test function of its
// package, and docs/security.md's table must name the test
// (TestInputSurfacesRegistry). Rows added to the docs table by hand are
// allowed; a row here must be there.
var inputSurfaces = []inputSurface{
	{"flag", "`sweep --workload`, `--api-key-file` (/dev/zero: capped, one-line error)", "internal/rundir.MaxAPIKeyFileBytes", "cmd/llmprobe.TestSweepBadFlags"},
	{"flag", "`--http.config.file`", "prober/config.MaxHTTPConfigFileBytes", "cmd/llmprobe.TestHTTPConfigFlagErrors"},
	{"file", "configuration file (`--config.file`, `check-config`)", "prober/config.MaxConfigFileBytes", "cmd/llmprobe.TestCheckConfigEndlessFile"},
	{"file", "`api_key_file`, http_config secret files (FIFO, device refused)", "prober/client.MaxSecretFileBytes", "prober/config.TestLoadersRefuseFIFO"},
	{"file", "`tracing.header_files`", "prober/config.MaxTracingHeaderBytes", "prober/config.TestTracingHeaderFiles"},
	{"file", "`--web.config.file`", "internal/daemon.maxWebConfigBytes", "internal/daemon.TestWebConfigRefusesFIFO"},
	{"file", "workload, dataset, trace, schema files", "prober/workload.MaxDatasetBytes", "prober/workload.TestLoadersRefuseFIFO"},
	{"file", "answer-check set file", "prober/answer.MaxSetBytes", "prober/answer.TestLoad"},
	{"file", "run-directory files read back (`analyze`, `verify`, `merge`, sweep API downloads)", "internal/artifacts.MaxFileBytes", "internal/rundir.TestLoadInputRefusesEndlessFiles"},
	{"file", "`records.jsonl` read back", "internal/artifacts.maxRecordLine", "internal/artifacts.TestReadRecordsRefusesFIFO"},
	{"file", "`--server-log` (a FIFO would block a step)", "internal/rundir.MaxServerLogBytes", "internal/rundir.TestServerLogFIFO"},
	{"env", "OTEL_EXPORTER_OTLP_*CERTIFICATE, *CLIENT_KEY files", "prober/tracing.maxCertFileBytes", "prober/tracing.TestEnvCertificate"},
	{"SD", "file_sd file (FIFO, /dev/zero refused without blocking; failure counted, targets kept)", "prober/config.MaxSDBytes", "prober/discovery.TestFileSDNotRegular"},
	{"env", "OTEL_EXPORTER_OTLP_*CERTIFICATE, *CLIENT_KEY files", "prober/tracing.maxCertFileBytes", "prober/tracing.TestEnvCertificate"},
	{"SD", "file_sd files at `check-config`", "prober/config.MaxSDBytes", "prober/discovery.TestCheckDiscoveryFiles"},
	{"SD", "http_sd answer (Content-Length refused, chunked cut)", "prober/config.MaxSDBytes", "prober/discovery.TestHTTPSDBounded"},
	{"SD", "http_sd redirect (not followed; credentials stay)", "", "prober/discovery.TestHTTPSDNoRedirect"},
	{"YAML", "`follow_redirects: true` in any HTTP client configuration (refused with file:line)", "", "prober/discovery.TestSDFollowRedirectsRefused"},
	{"response", "a non-streamed reply (Content-Length refused before reading)", "prober/client.DefaultMaxBodyBytes", "prober/client.TestBodyRefusedOnContentLength"},
	{"response", "`/v1/models`, `/version`, engine info answers", "prober/endpoint.MaxInfoBodyBytes", "prober/endpoint.TestDiscoverFailuresAreClassifiedAndRedacted"},
	{"response", "`/metrics` scrape", "prober/scrape.DefaultMaxBytes", "prober/scrape.TestFetchErrors"},
	{"response", "`/tokenize` answer", "", "prober/workload.TestServerTokenizerErrors"},
	{"response", "a target's redirect (never followed)", "", "prober/endpoint.TestNoRedirectFollowed"},
	{"response", "OTLP collector: redirect not followed with the export headers; answer bounded", "prober/tracing.maxCollectorReplyBytes", "prober/tracing.TestExportNoRedirect"},
	{"response", "any body read through bounded.Read / bounded.Transport", "", "prober/bounded.TestTransport"},
	{"API", "`POST /api/v1/sweeps` body", "internal/web.MaxSweepBodyBytes", "internal/web.TestSweepAPIRefusals"},
	{"YAML", "every key of the daemon's configuration: its bound, or why it needs none; refusals generated", "prober/config.MaxConfigFileBytes", "internal/archtest.TestConfigKeysRegistry"},
}

// TestInputSurfacesRegistry checks the registry of input surfaces: each
// bound is a constant of the module, each test exists in its package, and
// docs/security.md's "Input surfaces" table names each test.
func TestInputSurfacesRegistry(t *testing.T) {
	consts := readConsts(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "security.md"))
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]map[string]bool{}
	for _, s := range inputSurfaces {
		if s.bound != "" && consts[s.bound] == nil {
			t.Errorf("%s: bound %s is not a constant of the module", s.what, s.bound)
		}
		dir, name, _ := strings.Cut(s.test, ".")
		if tests[dir] == nil {
			tests[dir] = testFuncs(t, dir)
		}
		if !tests[dir][name] {
			t.Errorf("%s: test %s is not a test function of %s", s.what, name, dir)
		}
		if !strings.Contains(string(doc), "`"+name+"`") {
			t.Errorf("%s: docs/security.md's input surfaces table does not name its test `%s`", s.what, name)
		}
	}
}

// testFuncs returns the Test* functions of the _test.go files of dir.
func testFuncs(t *testing.T, dir string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	files, _ := filepath.Glob(filepath.Join(root, filepath.FromSlash(dir), "*_test.go"))
	for _, p := range files {
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && strings.HasPrefix(fd.Name.Name, "Test") {
				out[fd.Name.Name] = true
			}
		}
	}
	if len(out) == 0 {
		t.Errorf("no tests in %s", dir)
	}
	return out
}
