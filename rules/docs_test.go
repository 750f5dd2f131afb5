package rules_test

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/llmprobe/llmprobe/rules"
	"github.com/llmprobe/llmprobe/rules/rulestest"
)

// docQuery is one PromQL query or series name a page of docs/ shows.
type docQuery struct {
	file string
	line int
	text string
	// inline is a name from an inline code span, not a query.
	inline bool
}

// fence matches a fenced code block's opening line and its language.
var fence = regexp.MustCompile("^\\s*```\\s*([a-z]*)")

// inlineSpan matches an inline code span; seriesName the names in it that
// look like llmprobe's series or a recording rule's output
// (level:metric:operations).
var (
	inlineSpan = regexp.MustCompile("`([^`\n]+)`")
	seriesName = regexp.MustCompile(`(?:^|[^a-zA-Z0-9_:{"'./-])((?:[a-z_]+:)?llmprobe_[a-z0-9_]+(?::[a-z0-9_]+)?|[a-z_]+:[a-z0-9_]+:[a-z0-9_]+)`)
)

// notSeries are names in inline code spans that look like series and are
// not: the recording-rule naming convention, and result.json's schema key.
var notSeries = map[string]bool{"level:metric:operations": true, "llmprobe_result_schema": true}

// braces matches a shell-style alternation the pages use to name several
// series at once: `target_probe:llmprobe_goodput:ratio_rate{5m,30m}`.
var braces = regexp.MustCompile(`\{([a-z0-9_]*,[a-z0-9_,]*)\}`)

// expandBraces returns s with its first alternation expanded, recursively.
func expandBraces(s string) []string {
	loc := braces.FindStringSubmatchIndex(s)
	if loc == nil {
		return []string{s}
	}
	var out []string
	for _, alt := range strings.Split(s[loc[2]:loc[3]], ",") {
		out = append(out, expandBraces(s[:loc[0]]+alt+s[loc[1]:])...)
	}
	return out
}

// docQueries returns the queries of the ```promql blocks of the Markdown
// page (each blank-line-separated chunk one query, or each line when the
// chunk does not parse as one) and the series names of its inline code
// spans.
func docQueries(t *testing.T, path string) []docQuery {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Base(path)
	var (
		out            []docQuery
		inBlock, promq bool
		chunk          []string
		chunkLine      int
	)
	flush := func() {
		if len(chunk) == 0 {
			return
		}
		q := strings.Join(chunk, "\n")
		if _, err := rules.NewParser().ParseExpr(q); err == nil || len(chunk) == 1 {
			out = append(out, docQuery{file: file, line: chunkLine, text: q})
		} else {
			for i, l := range chunk {
				out = append(out, docQuery{file: file, line: chunkLine + i, text: l})
			}
		}
		chunk = nil
	}
	for i, line := range strings.Split(string(data), "\n") {
		if m := fence.FindStringSubmatch(line); m != nil {
			if inBlock {
				flush()
				inBlock, promq = false, false
			} else {
				inBlock, promq = true, m[1] == "promql"
			}
			continue
		}
		if inBlock {
			if !promq {
				continue
			}
			s := strings.TrimSpace(line)
			if s == "" || strings.HasPrefix(s, "#") {
				flush()
				continue
			}
			if len(chunk) == 0 {
				chunkLine = i + 1
			}
			chunk = append(chunk, line)
			continue
		}
		for _, span := range inlineSpan.FindAllStringSubmatch(line, -1) {
			for _, text := range expandBraces(span[1]) {
				for _, m := range seriesName.FindAllStringSubmatch(" "+text, -1) {
					if strings.HasSuffix(m[1], "_") || notSeries[m[1]] {
						continue // a prefix (`llmprobe_sweep_`), or no series
					}
					out = append(out, docQuery{file: file, line: i + 1, text: m[1], inline: true})
				}
			}
		}
	}
	return out
}

// TestDocsQueriesReadKnownSeries parses every PromQL query of docs/*.md
// (```promql blocks) with Prometheus' parser and requires each metric it
// reads, and each llmprobe series or recording-rule name an inline code span
// names, to be produced by a recording rule of rules/ (optional/ included),
// exported by llmprobe's daemon (its real registry), documented by vLLM or
// another engine (docs/engines.md), or written by Prometheus itself: a page
// that queries a series nothing records shows its reader an empty graph.
func TestDocsQueriesReadKnownSeries(t *testing.T) {
	cat, err := rulestest.Catalog(loadAll(t))
	if err != nil {
		t.Fatal(err)
	}
	defined := definedNames(t)
	known := func(n string) bool {
		if _, ok := cat.Source(n); ok || defined[n] {
			return true
		}
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(n, suf); ok && defined[base] {
				return true
			}
		}
		return documentedSuffix(cat, n)
	}
	pages, err := filepath.Glob("../docs/*.md")
	if err != nil || len(pages) == 0 {
		t.Fatalf("no docs pages: %v", err)
	}
	var queries, names int
	for _, page := range pages {
		for _, q := range docQueries(t, page) {
			where := q.file + ":" + itoa(q.line)
			if q.inline {
				names++
				if !known(q.text) {
					t.Errorf("%s: `%s` is neither recorded by a rule nor exported", where, q.text)
				}
				continue
			}
			queries++
			ns, err := rules.MetricNames(rules.NewParser(), q.text)
			if err != nil {
				t.Errorf("%s: %v\n%s", where, err, q.text)
				continue
			}
			for _, n := range ns {
				if !known(n) {
					t.Errorf("%s: the query reads %s, which no rule records and nothing exports:\n%s", where, n, q.text)
				}
			}
		}
	}
	// The extraction itself: the pages hold many queries and names, so an
	// extractor that finds none fails here.
	if queries < 30 || names < 100 {
		t.Errorf("found %d queries and %d inline names in docs/*.md: the extraction is broken", queries, names)
	}
}

// metricDefinition matches a metric name defined in llmprobe's Go code: a
// collector's `Name: "llmprobe_..."` or a name constant.
var metricDefinition = regexp.MustCompile(`(?:Name:\s*|=\s*)"(llmprobe_[a-z0-9_]+)"`)

// definedNames returns the llmprobe_ metric names the module's non-test Go
// files define: the families the rulestest registry does not build
// (discovery, tracing, shard gauges, the sweep's pushed llmprobe_run_*
// series, the simulator's own llmprobe_simulator_*).
func definedNames(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range metricDefinition.FindAllSubmatch(data, -1) {
			out[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !out["llmprobe_discovery_targets"] {
		t.Fatal("no llmprobe_discovery_targets among the names the Go code defines: the scan is broken")
	}
	return out
}

// documentedSuffix accepts a histogram's or counter's family written
// without its series suffix in prose (`llmprobe_request_send_lag_seconds`
// is in the catalog; `llmprobe_requests` for llmprobe_requests_total is
// not accepted).
func documentedSuffix(cat *rules.Catalog, name string) bool {
	for _, s := range []string{"_bucket", "_sum", "_count"} {
		if _, ok := cat.Source(name + s); ok {
			return true
		}
	}
	return false
}

// TestDocsListEveryRuleFile: rules-and-dashboards.md names every shared rule
// file in its list of files and in its rule_files example, so a reader who
// follows it loads every alert.
func TestDocsListEveryRuleFile(t *testing.T) {
	data, err := os.ReadFile("../docs/rules-and-dashboards.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	for _, f := range load(t) {
		for _, want := range []string{"\nrules/" + f.Name + " ", "\n  - /etc/prometheus/llmprobe/" + f.Name + "\n"} {
			if !strings.Contains(doc, want) {
				t.Errorf("docs/rules-and-dashboards.md lacks %q", strings.TrimSpace(want))
			}
		}
	}
}

// TestDocQueriesExtraction pins the extractor on a page of its own: a
// promql block with two queries and a comment, a yaml block it skips, and
// inline names.
func TestDocQueriesExtraction(t *testing.T) {
	page := filepath.Join(t.TempDir(), "p.md")
	doc := "Read `target:llmprobe_ttft_seconds:p99_5m` and `llmprobe_requests_total{outcome=\"success\"}`, not `vllm:num_requests_running`.\n" +
		"```promql\n# comment\nsum by (target) (\n  rate(llmprobe_requests_total[5m])\n)\n\nllmprobe_sweep_running == 1\n```\n" +
		"```yaml\nexpr: llmprobe_not_a_query\n```\n"
	if err := os.WriteFile(page, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, q := range docQueries(t, page) {
		got = append(got, q.text)
	}
	sort.Strings(got)
	want := []string{"llmprobe_requests_total", "llmprobe_sweep_running == 1", "sum by (target) (\n  rate(llmprobe_requests_total[5m])\n)", "target:llmprobe_ttft_seconds:p99_5m"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("extracted %q, want %q", got, want)
	}
}

func itoa(n int) string {
	s := ""
	for {
		s = string(rune('0'+n%10)) + s
		n /= 10
		if n == 0 {
			return s
		}
	}
}
