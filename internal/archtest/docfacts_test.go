package archtest

import (
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// goFileRef matches a cited Go file: knee.go, prober/sweep/knee.go.
var goFileRef = regexp.MustCompile(`[A-Za-z0-9_./-]*[A-Za-z0-9_]\.go\b`)

// repoFiles returns every file of the repository as a slash path relative to
// the root (hidden folders, node_modules and runs left out).
func repoFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "runs") {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		files = append(files, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// packageDocs returns each package directory's doc comments (the comment
// above the package clause of each non-test file), joined.
func packageDocs(t *testing.T) map[string]string {
	t.Helper()
	docs := map[string]string{}
	for dir := range goPackages(t) {
		ents, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			n := e.Name()
			if !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, dir, n), nil, parser.PackageClauseOnly|parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			if f.Doc != nil {
				docs[dir] += f.Doc.Text() + "\n"
			}
		}
	}
	return docs
}

// citedGoFiles returns the Go file names cited in text, URLs and other
// projects' files (a host name before them) left out.
func citedGoFiles(text string) []string {
	var out []string
	for _, loc := range goFileRef.FindAllStringIndex(text, -1) {
		m := text[loc[0]:loc[1]]
		before := text[max(0, loc[0]-8):loc[0]]
		if strings.HasSuffix(before, "*") || strings.Contains(before, "://") || strings.Contains(m, ".com/") || strings.Contains(m, ".io/") || strings.Contains(m, ".org/") {
			continue
		}
		m = strings.TrimLeft(m, "./")
		if m == "" || m[0] == '_' || !strings.HasSuffix(m, ".go") {
			continue
		}
		out = append(out, m)
	}
	return out
}

// resolves reports whether a cited file names one of the repository's
// files: the path itself from dir (a package's own files) or from the root,
// or the tail of a path (prober/sweep/knee.go cited as sweep/knee.go).
func resolves(files []string, dir, cited string) bool {
	if dir != "" && slices.Contains(files, dir+"/"+cited) {
		return true
	}
	for _, f := range files {
		if f == cited || strings.HasSuffix(f, "/"+cited) {
			return true
		}
	}
	return false
}

// TestCitedGoFilesExist holds every Go file that a Markdown file (docs/, the
// READMEs; CHANGELOG.md is history and left out) or a comment of a Go
// file (package docs included) cites to the tree: a renamed or removed file
// (the compare report's file in cmd, cited after it moved: issue 35) fails
// here, not in a reader's editor.
func TestCitedGoFilesExist(t *testing.T) {
	files := repoFiles(t)
	for _, f := range files {
		if !strings.HasSuffix(f, ".md") || f == "CHANGELOG.md" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range citedGoFiles(string(b)) {
			if !resolves(files, "", c) {
				t.Errorf("%s cites %s, which does not exist", f, c)
			}
		}
	}
	for _, f := range files {
		if !strings.HasSuffix(f, ".go") || strings.Contains(f, "/testdata/") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, f), nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		dir := path.Dir(f)
		for _, cg := range af.Comments {
			for _, c := range citedGoFiles(cg.Text()) {
				if !resolves(files, dir, c) {
					t.Errorf("%s: a comment cites %s, which does not exist", f, c)
				}
			}
		}
	}
}

// mapMin is how many of its own files a package doc comment names before it
// counts as a file map, which must then name them all.
const mapMin = 4

// TestPackageDocFileMaps holds a package doc's file map (a doc comment that
// names at least mapMin of its directory's files) to the directory: it names
// every non-test Go file but doc.go, so a new file cannot be left out of the
// map (prober/sweep's left out 16 of 38, issue 35).
func TestPackageDocFileMaps(t *testing.T) {
	docs := packageDocs(t)
	for dir, doc := range docs {
		ents, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			t.Fatal(err)
		}
		var own []string
		for _, e := range ents {
			n := e.Name()
			if strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") && n != "doc.go" {
				own = append(own, n)
			}
		}
		named := map[string]bool{}
		for _, c := range citedGoFiles(doc) {
			if !strings.Contains(c, "/") && slices.Contains(own, c) {
				named[c] = true
			}
		}
		if len(named) < mapMin {
			continue
		}
		t.Logf("package %s: a file map of %d files", dir, len(named))
		var missing []string
		for _, n := range own {
			if !named[n] {
				missing = append(missing, n)
			}
		}
		sort.Strings(missing)
		if len(missing) > 0 {
			t.Errorf("package %s's doc comment maps %d of its files but not %s", dir, len(named), strings.Join(missing, ", "))
		}
	}
}
