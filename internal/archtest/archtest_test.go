package archtest

import (
	"bufio"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/llmprobe/llmprobe"

// root is the repository root, two levels above this package.
var root = filepath.Join("..", "..")

// goPackages returns every directory of the module holding non-test Go
// files, as a slash path relative to the root, with its module imports
// (non-test files only).
func goPackages(t *testing.T) map[string][]string {
	t.Helper()
	pkgs := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		imps := pkgs[rel]
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if p == module || strings.HasPrefix(p, module+"/") {
				imps = append(imps, strings.TrimPrefix(strings.TrimPrefix(p, module), "/"))
			} else if strings.HasPrefix(p, "gonum.org/") {
				imps = append(imps, p)
			}
		}
		pkgs[rel] = imps
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// TestArchitectureNamesEveryPackage checks docs/architecture.md's package map
// against the packages of the module, both ways.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	inMap := false
	tick := regexp.MustCompile("`([a-z0-9_/]+)`")
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			inMap = line == "## Package map"
			continue
		}
		if !inMap || !strings.HasPrefix(line, "| `") {
			continue
		}
		first := strings.SplitN(line[1:], "|", 2)[0]
		for _, m := range tick.FindAllStringSubmatch(first, -1) {
			named[m[1]] = true
		}
	}
	if len(named) == 0 {
		t.Fatal("docs/architecture.md: no package map rows found under \"## Package map\"")
	}
	pkgs := goPackages(t)
	for p := range named {
		if _, ok := pkgs[p]; !ok {
			t.Errorf("docs/architecture.md names package %s, which does not exist", p)
		}
	}
	var missing []string
	for p := range pkgs {
		if !named[p] && p != "." {
			missing = append(missing, p)
		}
	}
	sort.Strings(missing)
	for _, p := range missing {
		t.Errorf("package %s is missing from docs/architecture.md's package map", p)
	}
}

// TestNamedDocsExist checks that every docs/*.md path named in Go source,
// documentation, rules, dashboards or deploy files exists. CHANGELOG.md is
// history: it may name a page that is gone.
func TestNamedDocsExist(t *testing.T) {
	ref := regexp.MustCompile(`docs/[A-Za-z0-9_.-]+\.md`)
	exts := []string{".go", ".md", ".yml", ".yaml", ".json", ".jsonnet", ".libsonnet", ".txt"}
	for _, rel := range repoFiles(t) {
		if !slices.Contains(exts, filepath.Ext(rel)) || filepath.Base(rel) == "CHANGELOG.md" || strings.Contains("/"+rel, "/fuzz/") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ref.FindAllString(string(b), -1) {
			if _, err := os.Stat(filepath.Join(root, m)); err != nil {
				t.Errorf("%s names %s, which does not exist", rel, m)
			}
		}
	}
}

// layer ranks the top-level folders: a package may import from its own
// folder or from a folder of a lower rank only.
var layer = map[string]int{
	"cmd":        6,
	"internal":   5,
	"dashboards": 4,
	"rules":      3,
	"collector":  2,
	"prober":     1,
	"deploy":     1,
}

func top(p string) string { return strings.SplitN(p, "/", 2)[0] }

// TestImportsRunOneWay checks that no import between top-level folders runs
// back up (prober imports neither internal, collector nor cmd; collector
// imports no internal package; ...).
func TestImportsRunOneWay(t *testing.T) {
	for p, imps := range goPackages(t) {
		from, ok := layer[top(p)]
		if !ok {
			t.Errorf("package %s: top-level folder %q has no layer in this test", p, top(p))
			continue
		}
		for _, imp := range imps {
			if strings.HasPrefix(imp, "gonum.org/") || top(imp) == top(p) {
				continue
			}
			if to := layer[top(imp)]; to >= from {
				t.Errorf("%s imports %s: %s/ may not import from %s/", p, imp, top(p), top(imp))
			}
		}
	}
}

// TestConfigImportsNoSweepEngine checks that the daemon's config schema
// does not depend on the sweep engine (issue 35 Deliver 1: prober/manager's
// closure carried 10k lines only through config→sweep): prober/sweep
// decodes a scheduled sweep's spec (sweep.FromSpec) and registers its check
// with prober/config, never the other way. prober/knob, the rules both
// share, imports nothing of llmprobe but prober/arrival.
func TestConfigImportsNoSweepEngine(t *testing.T) {
	pkgs := goPackages(t)
	for _, root := range []string{"prober/config", "prober/manager", "prober/discovery"} {
		for p := range importClosure(pkgs, root) {
			if p == "prober/sweep" || strings.HasPrefix(p, "prober/sweep/") || p == "prober/compare" {
				t.Errorf("%s depends on %s: the daemon's config is its schema only (the sweep engine decodes a sweep's spec)", root, p)
			}
		}
	}
	if _, ok := pkgs["prober/knob"]; !ok {
		t.Fatal("no prober/knob package")
	}
	for _, imp := range pkgs["prober/knob"] {
		if imp != "prober/arrival" {
			t.Errorf("prober/knob imports %s: it is the leaf config and sweep both call", imp)
		}
	}
}

// TestRedactIsALeaf checks that redaction is a leaf package (issue 35
// Deliver 4): prober/redact imports nothing of llmprobe, so any layer can
// redact, and the daemon's probe path, which only redacts, does not depend
// on the experiment fingerprint.
func TestRedactIsALeaf(t *testing.T) {
	pkgs := goPackages(t)
	if _, ok := pkgs["prober/redact"]; !ok {
		t.Fatal("no prober/redact package")
	}
	for _, imp := range pkgs["prober/redact"] {
		t.Errorf("prober/redact imports %s: it is a leaf and imports nothing of llmprobe", imp)
	}
	for _, root := range []string{"prober/config", "prober/client", "prober/endpoint", "prober/manager", "prober/discovery", "prober/tracing", "prober/scrape"} {
		if importClosure(pkgs, root)["prober/fingerprint"] {
			t.Errorf("%s depends on prober/fingerprint: redaction lives in prober/redact", root)
		}
	}
}

// TestMetricsPackageDeps checks that llmprobe's metrics package depends on
// no plotting library, no report and no run-directory package (the sweep
// daemon's observer types are a leaf package, prober/capacity).
func TestMetricsPackageDeps(t *testing.T) {
	for p := range importClosure(goPackages(t), "collector/probemetrics") {
		if strings.HasPrefix(p, "gonum.org/") || p == "internal/report" || p == "internal/rundir" || p == "internal/sweepd" {
			t.Errorf("collector/probemetrics depends on %s", p)
		}
	}
}

// importClosure returns root and every package it imports, directly or not
// (pkgs is goPackages').
func importClosure(pkgs map[string][]string, root string) map[string]bool {
	seen := map[string]bool{}
	var walk func(p string)
	walk = func(p string) {
		if seen[p] {
			return
		}
		seen[p] = true
		for _, imp := range pkgs[p] {
			walk(imp)
		}
	}
	walk(root)
	return seen
}
