package conformance_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"

	"github.com/llmprobe/llmprobe/prober/scrape"
)

// corpusRoot is the corpus, from this package's directory.
const corpusRoot = "../../testdata/engines"

// manifest is a corpus.json: what one engine version's files are, how they
// are served, and the figures llmprobe must read from them (written from
// the files, never from llmprobe's output).
type manifest struct {
	Engine  string `json:"engine"`
	Version string `json:"version"`
	Model   string `json:"model"`
	Metrics *struct {
		File        string `json:"file"`
		ContentType string `json:"content_type"`
	} `json:"metrics"`
	// NoMetrics says why the engine has no /metrics (then Metrics is nil
	// and GET /metrics answers 404).
	NoMetrics string            `json:"no_metrics"`
	Routes    map[string]string `json:"routes"` // GET path -> file
	Posts     map[string]string `json:"posts"`  // POST path -> file
	Streams   []streamCase      `json:"streams"`
	// MessagesStreams are streamed Anthropic Messages answers
	// (POST /v1/messages), framed by msgFraming.
	MessagesStreams []streamCase `json:"messages_streams"`
	Errors          []errorCase  `json:"errors"`
	// InfoErrors are the engine's own answers when one of its info
	// endpoints fails ("POST /api/show" -> file, status, message), e.g.
	// Ollama's 404 for a model it has not pulled.
	InfoErrors map[string]errorCase `json:"info_errors"`
	Expect     expect               `json:"expect"`
	Note       string               `json:"note"`

	dir string // the version directory
}

type streamCase struct {
	File             string            `json:"file"`
	API              string            `json:"api"`
	PromptTokens     int               `json:"prompt_tokens"`
	CompletionTokens int               `json:"completion_tokens"`
	ReasoningTokens  int               `json:"reasoning_tokens"`
	ToolCalls        int               `json:"tool_calls"`
	Tool             string            `json:"tool"`
	FinishReason     string            `json:"finish_reason"`
	Framing          map[string]string `json:"framing"`
}

type errorCase struct {
	File    string `json:"file"`
	Status  int    `json:"status"`
	Message string `json:"message"`
	// Condition is the request condition under which the engine answers
	// this body (its README): the drift alarm gives each persona the same
	// (personaErrorRequest lists them). Empty for info_errors.
	Condition string `json:"condition"`
	// Route is where the engine answers it, "METHOD /path" with {model}
	// for the model named; empty: POST /v1/chat/completions. When set,
	// the engine's chat answers the same condition without an error.
	Route string `json:"route"`
	// AnyMessage: the README pins the body's shape but not this message,
	// so the persona's is not compared.
	AnyMessage bool `json:"any_message"`
}

type expect struct {
	Engine            string             `json:"engine"`
	EngineSource      string             `json:"engine_source"`
	ServerVersion     string             `json:"server_version"`
	MaxModelLen       int                `json:"max_model_len"`
	MaxModelLenSource string             `json:"max_model_len_source"`
	Config            map[string]string  `json:"config"`
	Quantities        map[string]float64 `json:"quantities"`
	Unknown           []string           `json:"unknown"`
	Latencies         map[string]uint64  `json:"latencies"`
}

// loadCorpus reads every corpus.json under corpusRoot.
func loadCorpus(t *testing.T) []*manifest {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(corpusRoot, "*", "*", "corpus.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatalf("no corpus under %s", corpusRoot)
	}
	sort.Strings(paths)
	var out []*manifest
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		m := &manifest{dir: filepath.Dir(p)}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(m); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out = append(out, m)
	}
	return out
}

// name is engine/version as the directory names it.
func (m *manifest) name() string {
	return filepath.Base(filepath.Dir(m.dir)) + "/" + filepath.Base(m.dir)
}

func (m *manifest) read(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(m.dir, file))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// files lists every file a manifest names.
func (m *manifest) files() []string {
	var fs []string
	if m.Metrics != nil {
		fs = append(fs, m.Metrics.File)
	}
	for _, f := range m.Routes {
		fs = append(fs, f)
	}
	for _, f := range m.Posts {
		fs = append(fs, f)
	}
	for _, s := range m.Streams {
		fs = append(fs, s.File)
	}
	for _, s := range m.MessagesStreams {
		fs = append(fs, s.File)
	}
	for _, e := range m.Errors {
		fs = append(fs, e.File)
	}
	for _, e := range m.InfoErrors {
		fs = append(fs, e.File)
	}
	return fs
}

// serve starts a server that answers as the engine of m: GET /metrics with
// the exposition (404 when it has none), its GET and POST info routes, and
// every POST to the generation paths with stream (text/event-stream) or,
// when fail is set, with the error body and status.
func serve(t *testing.T, m *manifest, stream *streamCase, fail *errorCase) string {
	t.Helper()
	mux := http.NewServeMux()
	if m.Metrics != nil {
		body := m.read(t, m.Metrics.File)
		ct := m.Metrics.ContentType
		mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", ct)
			_, _ = w.Write(body)
		})
	}
	for path, file := range m.Routes {
		body := m.read(t, file)
		mux.HandleFunc("GET "+path, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(body)
		})
	}
	for path, file := range m.Posts {
		body := m.read(t, file)
		mux.HandleFunc("POST "+path, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(body)
		})
	}
	gen := func(w http.ResponseWriter, _ *http.Request) {
		switch {
		case fail != nil:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(fail.Status)
			_, _ = w.Write(m.read(t, fail.File))
		case stream != nil:
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write(m.read(t, stream.File))
		default:
			http.Error(w, "no stream", http.StatusInternalServerError)
		}
	}
	mux.HandleFunc("POST /v1/completions", gen)
	mux.HandleFunc("POST /v1/chat/completions", gen)
	mux.HandleFunc("POST /v1/messages", gen)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestCorpusProvenance holds the corpus's bookkeeping: every file a
// manifest names exists, every file of a version directory is named by its
// manifest, and the README beside it names every file with where it came
// from (a repository and a commit or the words "not found").
func TestCorpusProvenance(t *testing.T) {
	for _, m := range loadCorpus(t) {
		t.Run(m.name(), func(t *testing.T) {
			named := map[string]bool{"corpus.json": true, "README.md": true}
			for _, f := range m.files() {
				named[f] = true
				if _, err := os.Stat(filepath.Join(m.dir, f)); err != nil {
					t.Errorf("manifest names %s: %v", f, err)
				}
			}
			entries, err := os.ReadDir(m.dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if !named[e.Name()] {
					t.Errorf("%s is in the corpus but no manifest entry names it", e.Name())
				}
			}
			readme := string(m.read(t, "README.md"))
			for f := range named {
				if f != "README.md" && f != "corpus.json" && !strings.Contains(readme, "`"+f+"`") {
					t.Errorf("README.md does not record where %s came from", f)
				}
			}
			if (m.Metrics == nil) == (m.NoMetrics == "") {
				t.Errorf("a version has either a /metrics file or a no_metrics reason")
			}
		})
	}
}

// TestCorpusFraming holds each manifest's framing facets to its stream
// file: what the drift alarm compares a persona with is what the file
// shows.
func TestCorpusFraming(t *testing.T) {
	checkCorpusFraming(t, func(m *manifest) []streamCase { return m.Streams }, framing)
}

// checkCorpusFraming holds the framing facets of each manifest's streams
// (as streams picks them) to what parse reads in their files.
func checkCorpusFraming(t *testing.T, streams func(m *manifest) []streamCase, parse func([]byte) (map[string]string, error)) {
	t.Helper()
	for _, m := range loadCorpus(t) {
		for _, s := range streams(m) {
			t.Run(m.name()+"/"+s.File, func(t *testing.T) {
				got, err := parse(m.read(t, s.File))
				if err != nil {
					t.Fatal(err)
				}
				for k, want := range s.Framing {
					if got[k] != want {
						t.Errorf("framing %s = %q, manifest says %q", k, got[k], want)
					}
				}
			})
		}
	}
}

// TestFormatsKeyedAlike: the same families parse to the same family names,
// types and label names whether they come as text or as OpenMetrics, so
// one adapter reads both. The text corpus of vLLM's Python frontend is
// compared with its own families written as OpenMetrics 1.0 (base-name
// TYPE, _total and _created samples, # EOF), the format its
// --metrics-format openmetrics persona serves; and every family that the
// Rust frontend's OpenMetrics corpus (another encoder: integer values, le
// first, no _created) shares with it is keyed alike, type and labels
// included, except the one label the Rust frontend renamed.
func TestFormatsKeyedAlike(t *testing.T) {
	corpora := map[string]*manifest{}
	for _, m := range loadCorpus(t) {
		corpora[m.name()] = m
	}
	text, rust := corpora["vllm/0.24"], corpora["vllm/0.24-rust-frontend"]
	if text == nil || rust == nil {
		t.Fatal("the vLLM text and Rust frontend corpora are missing")
	}
	a, err := scrape.NewSnapshot(time.Now(), text.read(t, text.Metrics.File))
	if err != nil {
		t.Fatal(err)
	}
	b, err := scrape.NewSnapshot(time.Now(), openMetricsOf(t, a))
	if err != nil {
		t.Fatal(err)
	}
	r, err := scrape.NewSnapshot(time.Now(), rust.read(t, rust.Metrics.File))
	if err != nil {
		t.Fatal(err)
	}
	if a.Format != scrape.FormatText || b.Format != scrape.FormatOpenMetrics || r.Format != scrape.FormatOpenMetrics {
		t.Fatalf("formats %s, %s and %s, want text, OpenMetrics and OpenMetrics", a.Format, b.Format, r.Format)
	}
	sa, sb := signatures(a), signatures(b)
	for name, sig := range sa {
		if sb[name] != sig {
			t.Errorf("%s: text %v, OpenMetrics %v", name, sig, sb[name])
		}
	}
	for name := range sb {
		if _, ok := sa[name]; !ok {
			t.Errorf("%s only in the OpenMetrics exposition", name)
		}
	}
	// The Rust frontend's request_success counts by finish_reason, the
	// Python frontend's by finished_reason (README).
	renamed := map[string]signature{"vllm:request_success_total": {Type: "counter", Labels: "engine,finish_reason,model_name"}}
	shared := 0
	for name, sig := range signatures(r) {
		want, ok := sa[name]
		if !ok {
			continue
		}
		shared++
		if w, ok := renamed[name]; ok {
			want = w
		}
		if sig != want {
			t.Errorf("%s: Python frontend (text) %v, Rust frontend (OpenMetrics) %v", name, want, sig)
		}
	}
	for _, name := range []string{"vllm:prefix_cache_queries_total", "vllm:request_success_total", "vllm:request_prompt_tokens",
		"vllm:num_requests_running"} {
		if _, ok := signatures(r)[name]; !ok {
			t.Errorf("the Rust frontend's %s is not keyed as the text format keys it", name)
		}
	}
	if shared < 20 {
		t.Errorf("only %d families shared by the two frontends' expositions", shared)
	}
}

// openMetricsOf writes the families of snap as OpenMetrics 1.0 text with
// _created samples, in name order, and the final # EOF.
func openMetricsOf(t *testing.T, snap *scrape.Snapshot) []byte {
	t.Helper()
	var buf bytes.Buffer
	for _, n := range slices.Sorted(maps.Keys(snap.Families)) {
		if _, err := expfmt.MetricFamilyToOpenMetrics(&buf, snap.Families[n], expfmt.WithCreatedLines()); err != nil {
			t.Fatalf("encode %s: %v", n, err)
		}
	}
	if _, err := expfmt.FinalizeOpenMetrics(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestCorpusMessagesFraming holds each manifest's Messages framing facets
// to its stream file.
func TestCorpusMessagesFraming(t *testing.T) {
	checkCorpusFraming(t, func(m *manifest) []streamCase { return m.MessagesStreams }, msgFraming)
}
